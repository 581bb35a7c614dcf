"""Single sign-on: users' identities at an OpenID provider, and which workspace memberships sign-on gives

Revision ID: 0029sso
Revises: 0025workspaces
Create Date: 2026-11-26 12:00:00

`user_identities` links a user to (issuer, subject), the only thing a sign-in is matched by.
`workspace_members.sso_managed` marks the memberships that the user's groups give: sign-in replaces
those, and never touches the ones added by hand (every existing row is one of them).
"""

import sqlalchemy as sa
from alembic import op

revision = '0029sso'
down_revision = '0025workspaces'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "user_identities",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("issuer", sa.Text(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("last_login_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("issuer", "subject", name="user_identities_issuer_subject"),
    )
    op.create_index("ix_user_identities_user_id", "user_identities", ["user_id"])
    op.add_column("workspace_members", sa.Column("sso_managed", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    op.drop_column("workspace_members", "sso_managed")
    op.drop_index("ix_user_identities_user_id", table_name="user_identities")
    op.drop_table("user_identities")
