"""items keep the record as it came

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22 22:00:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # `json`, not `jsonb`: PostgreSQL keeps json text exactly as given (key order, number
    # spelling, escapes), which is what the published export writes back.
    op.add_column('items', sa.Column('source', postgresql.JSON(astext_type=sa.Text()), nullable=True))


def downgrade() -> None:
    op.drop_column('items', 'source')
