"""failed logins per username and address, with their backoff

Revision ID: 0010
Revises: 0009items
Create Date: 2026-11-23 00:30:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0010'
down_revision = '0009items'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'login_throttle',
        sa.Column('username', sa.Text(), nullable=False),
        sa.Column('address', sa.String(length=64), nullable=False),
        sa.Column('failures', sa.Integer(), nullable=False),
        sa.Column('first_failure_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('last_failure_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('blocked_until', sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('username', 'address', name=op.f('pk_login_throttle')),
    )
    op.create_index(op.f('ix_login_throttle_last_failure_at'), 'login_throttle', ['last_failure_at'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_login_throttle_last_failure_at'), table_name='login_throttle')
    op.drop_table('login_throttle')
