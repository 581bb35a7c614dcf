"""drop ix_items_project_stage_status: no query needs it since the counts are kept by triggers

Revision ID: 0015items
Revises: 0014counts
Create Date: 2026-11-23 21:10:00

The index on items (project_id, stage_id, status) served the progress counts, which read `count(*)`
over the items until 0011counts kept them in counter rows. Since then no statement of the app
leads with those columns where another index does not serve as well: the items page by stage and
status is within a few milliseconds either way (bench/items_bench.py, 200,000 items: 4.5 and 7.6
ms for the first page of an empty stage + status filter, every other filter faster without it).
Every item's insert (an import) and every update that moves an item (a claim's slot, a submit's
status and stage) wrote an entry in it.
"""

from alembic import op

revision = '0015items'
down_revision = '0014counts'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index('ix_items_project_stage_status', table_name='items')


def downgrade() -> None:
    op.create_index('ix_items_project_stage_status', 'items', ['project_id', 'stage_id', 'status'], unique=False)
