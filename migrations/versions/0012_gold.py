"""gold items, the annotators their answers flag, the item status `gold`; image hashes and leak reports

Revision ID: 0012gold
Revises: 0011counts
Create Date: 2026-11-23 02:40:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0012gold'
down_revision = '0011counts'
branch_labels = None
depends_on = None

OLD_STATUSES = "status IN ('active', 'review', 'done', 'discarded')"
NEW_STATUSES = "status IN ('active', 'review', 'done', 'discarded', 'gold')"


def upgrade() -> None:
    op.create_table('gold_items',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('stage_id', sa.Integer(), nullable=False),
    sa.Column('item_id', sa.BigInteger(), nullable=False),
    sa.Column('answer', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('source', sa.String(length=16), nullable=False),
    sa.Column('created_by', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['created_by'], ['users.id'], name=op.f('fk_gold_items_created_by_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['item_id'], ['items.id'], name=op.f('fk_gold_items_item_id_items'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['stage_id'], ['stages.id'], name=op.f('fk_gold_items_stage_id_stages'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_gold_items')),
    sa.UniqueConstraint('stage_id', 'item_id', name=op.f('uq_gold_items_stage_id_item_id'))
    )
    op.create_index('ix_gold_items_item_id', 'gold_items', ['item_id'], unique=False)
    op.create_table('annotator_flags',
    sa.Column('stage_id', sa.Integer(), nullable=False),
    sa.Column('annotator_id', sa.Integer(), nullable=False),
    sa.Column('accuracy', sa.Float(), nullable=False),
    sa.Column('items', sa.Integer(), nullable=False),
    sa.Column('flagged_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['annotator_id'], ['users.id'], name=op.f('fk_annotator_flags_annotator_id_users'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['stage_id'], ['stages.id'], name=op.f('fk_annotator_flags_stage_id_stages'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('stage_id', 'annotator_id', name=op.f('pk_annotator_flags'))
    )
    op.create_table('image_hashes',
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('phash', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('sha256', name=op.f('pk_image_hashes'))
    )
    op.create_table('leak_reports',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('definition_id', sa.Integer(), nullable=False),
    sa.Column('report', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['definition_id'], ['split_definitions.id'], name=op.f('fk_leak_reports_definition_id_split_definitions'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_leak_reports_project_id_projects'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_leak_reports'))
    )
    op.create_index('ix_leak_reports_definition_id', 'leak_reports', ['definition_id', 'id'], unique=False)
    op.drop_constraint(op.f('ck_items_status'), 'items', type_='check')
    op.create_check_constraint(op.f('ck_items_status'), 'items', NEW_STATUSES)


def downgrade() -> None:
    # A gold item goes back to being an ordinary open item of its stage (its answers stand).
    op.execute("UPDATE items SET status = 'active' WHERE status = 'gold'")
    op.drop_constraint(op.f('ck_items_status'), 'items', type_='check')
    op.create_check_constraint(op.f('ck_items_status'), 'items', OLD_STATUSES)
    op.drop_index('ix_leak_reports_definition_id', table_name='leak_reports')
    op.drop_table('leak_reports')
    op.drop_table('image_hashes')
    op.drop_table('annotator_flags')
    op.drop_index('ix_gold_items_item_id', table_name='gold_items')
    op.drop_table('gold_items')
