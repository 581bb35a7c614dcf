"""suggestion_failures: items a suggestion kind's producer could not compute, with why

Revision ID: 0022sugfail
Revises: 0021jobstep
Create Date: 2026-11-27 10:00:00

One row per item, stage and kind, with the model that tried and a fingerprint of the item's record
and images as they were read: reconcile skips the item until they change or an admin asks again
(`vlcurate suggest --retry-failed`); a later success deletes the row.
"""

import sqlalchemy as sa
from alembic import op

revision = '0022sugfail'
down_revision = '0021jobstep'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'suggestion_failures',
        sa.Column('id', sa.BigInteger(), nullable=False),
        sa.Column('item_id', sa.BigInteger(), nullable=False),
        sa.Column('stage_id', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=64), nullable=False),
        sa.Column('model', sa.Text(), server_default='', nullable=False),
        sa.Column('model_version', sa.Text(), server_default='', nullable=False),
        sa.Column('inputs', sa.String(length=32), nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.ForeignKeyConstraint(['item_id'], ['items.id'], name=op.f('fk_suggestion_failures_item_id_items'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['stage_id'], ['stages.id'], name=op.f('fk_suggestion_failures_stage_id_stages'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_suggestion_failures')),
        sa.UniqueConstraint('item_id', 'stage_id', 'kind', name=op.f('uq_suggestion_failures_item_id_stage_id_kind')),
    )
    op.create_index(op.f('ix_suggestion_failures_stage_id'), 'suggestion_failures', ['stage_id'], unique=False)


def downgrade() -> None:
    op.drop_table('suggestion_failures')
