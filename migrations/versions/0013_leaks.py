"""exports.gold: the export also writes the stages' gold items to gold.jsonl

Revision ID: 0013leaks
Revises: 0012gold
Create Date: 2026-11-23 05:40:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0013leaks'
down_revision = '0012gold'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('exports', sa.Column('gold', sa.Boolean(), server_default=sa.text('false'), nullable=False))


def downgrade() -> None:
    op.drop_column('exports', 'gold')
