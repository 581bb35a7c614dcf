"""indexes for the items page: a project's items in id order, whole or by stage or status

Revision ID: 0009items
Revises: 0008
Create Date: 2026-11-22 23:50:00
"""

from alembic import op

revision = '0009items'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Each gives one page of a filter in id order without reading past it (app/services/imports/items.py).
    op.create_index('ix_items_project_id', 'items', ['project_id', 'id'])
    op.create_index('ix_items_stage_id', 'items', ['stage_id', 'id'])
    op.create_index('ix_items_project_status_id', 'items', ['project_id', 'status', 'id'])


def downgrade() -> None:
    op.drop_index('ix_items_project_status_id', table_name='items')
    op.drop_index('ix_items_stage_id', table_name='items')
    op.drop_index('ix_items_project_id', table_name='items')
