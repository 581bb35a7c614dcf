"""agreement_reports: stored agreement figures per stage

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 06:10:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('agreement_reports',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('stage_id', sa.Integer(), nullable=False),
    sa.Column('report', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['stage_id'], ['stages.id'], name=op.f('fk_agreement_reports_stage_id_stages'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_agreement_reports'))
    )
    op.create_index(op.f('ix_agreement_reports_stage_id'), 'agreement_reports', ['stage_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_agreement_reports_stage_id'), table_name='agreement_reports')
    op.drop_table('agreement_reports')
