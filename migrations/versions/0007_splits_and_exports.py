"""split definitions, item splits and exports

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22 10:00:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('split_definitions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('config', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('counts', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False),
    sa.Column('created_by', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['created_by'], ['users.id'], name=op.f('fk_split_definitions_created_by_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_split_definitions_project_id_projects'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_split_definitions')),
    sa.UniqueConstraint('project_id', 'version', name=op.f('uq_split_definitions_project_id_version'))
    )
    op.create_table('item_splits',
    sa.Column('definition_id', sa.Integer(), nullable=False),
    sa.Column('item_id', sa.BigInteger(), nullable=False),
    sa.Column('split', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['definition_id'], ['split_definitions.id'], name=op.f('fk_item_splits_definition_id_split_definitions'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['item_id'], ['items.id'], name=op.f('fk_item_splits_item_id_items'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('definition_id', 'item_id', name=op.f('pk_item_splits'))
    )
    op.create_index('ix_item_splits_definition_split', 'item_splits', ['definition_id', 'split', 'item_id'], unique=False)
    op.create_table('exports',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('definition_id', sa.Integer(), nullable=True),
    sa.Column('format', sa.String(length=32), nullable=False),
    sa.Column('target', sa.Text(), nullable=False),
    sa.Column('status', sa.String(length=16), server_default='queued', nullable=False),
    sa.Column('done', sa.Integer(), server_default='0', nullable=False),
    sa.Column('total', sa.Integer(), server_default='0', nullable=False),
    sa.Column('manifest', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('created_by', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.CheckConstraint("status IN ('queued', 'running', 'done', 'failed')", name=op.f('ck_exports_status')),
    sa.ForeignKeyConstraint(['created_by'], ['users.id'], name=op.f('fk_exports_created_by_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['definition_id'], ['split_definitions.id'], name=op.f('fk_exports_definition_id_split_definitions'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_exports_project_id_projects'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_exports'))
    )
    op.create_index(op.f('ix_exports_project_id'), 'exports', ['project_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_exports_project_id'), table_name='exports')
    op.drop_table('exports')
    op.drop_index('ix_item_splits_definition_split', table_name='item_splits')
    op.drop_table('item_splits')
    op.drop_table('split_definitions')
