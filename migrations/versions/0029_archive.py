"""Projects are archived, never erased: `archived_at` and `archived_by`

Revision ID: 0029archive
Revises: 0028webhooks
Create Date: 2026-11-26 00:00:00

Deleting a project hides it: `archived_at` (when) and `archived_by` (the admin) are set, and every
list, page, queue, job and route leaves the project out; its stages, items, annotations and exports
stay as they were, and a restore (both columns back to NULL) brings it all back. Names stay unique
over live and archived projects together (the existing unique constraint), so a restore never clashes.
"""

import sqlalchemy as sa
from alembic import op

revision = '0029archive'
down_revision = '0028webhooks'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("projects", sa.Column("archived_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("projects", sa.Column("archived_by", sa.Integer(), sa.ForeignKey("users.id", ondelete="SET NULL",
                                                                                  name="fk_projects_archived_by_users"), nullable=True))


def downgrade() -> None:
    op.drop_constraint("fk_projects_archived_by_users", "projects", type_="foreignkey")
    op.drop_column("projects", "archived_by")
    op.drop_column("projects", "archived_at")
