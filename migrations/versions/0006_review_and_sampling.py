"""review sends items back; agreement sampling per stage

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22 09:00:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

OLD_STATUSES = "status IN ('active', 'submitted', 'skipped', 'released', 'expired')"
NEW_STATUSES = "status IN ('active', 'submitted', 'skipped', 'released', 'expired', 'returned')"


def upgrade() -> None:
    op.add_column('stages', sa.Column('sample_size', sa.Integer(), nullable=True))
    op.add_column('stages', sa.Column('sample_seed', sa.Integer(), server_default='0', nullable=False))
    op.create_check_constraint(op.f('ck_stages_sample_nonnegative'), 'stages', 'sample_size IS NULL OR sample_size >= 0')
    op.create_table('stage_samples',
    sa.Column('stage_id', sa.Integer(), nullable=False),
    sa.Column('item_id', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['item_id'], ['items.id'], name=op.f('fk_stage_samples_item_id_items'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['stage_id'], ['stages.id'], name=op.f('fk_stage_samples_stage_id_stages'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('stage_id', 'item_id', name=op.f('pk_stage_samples'))
    )
    op.create_index(op.f('ix_stage_samples_item_id'), 'stage_samples', ['item_id'], unique=False)
    op.drop_constraint(op.f('ck_assignments_status'), 'assignments', type_='check')
    op.create_check_constraint(op.f('ck_assignments_status'), 'assignments', NEW_STATUSES)


def downgrade() -> None:
    # A returned assignment becomes a submitted one again: its annotation stands.
    op.execute("UPDATE assignments SET status = 'submitted' WHERE status = 'returned'")
    op.drop_constraint(op.f('ck_assignments_status'), 'assignments', type_='check')
    op.create_check_constraint(op.f('ck_assignments_status'), 'assignments', OLD_STATUSES)
    op.drop_index(op.f('ix_stage_samples_item_id'), table_name='stage_samples')
    op.drop_table('stage_samples')
    op.drop_constraint(op.f('ck_stages_sample_nonnegative'), 'stages', type_='check')
    op.drop_column('stages', 'sample_seed')
    op.drop_column('stages', 'sample_size')
