"""count triggers: the finals' lookup stays on the item's own rows with stale statistics

Revision ID: 0016fence
Revises: 0015items
Create Date: 2026-11-24 00:05:00

`vlc_count_results` asks, for each (item, stage) pair that got a final record, whether the item
had one in the stage before. Planned with statistics taken while `item_results` was small (a new
stage, then a bulk import or a fast stage with autovacuum behind), the planner combined the item's
index entries with every entry of the stage (a BitmapAnd with `ix_item_results_stage_id`): a
submit's counting then read the whole stage's finals, 20 ms at 1M items 90 % done and 350 ms at
10M (bench/http_bench.py's matrix, right after the 90 %). `r.stage_id + 0` keeps the lookup on
`ix_item_results_item_id` (an item's few finals), whatever the statistics say, as the submit's own
read of an item's finals is fenced (`app.services.annotation.annotation`). The functions are 0014counts',
taken from that migration, with only that lookup changed.
"""

import importlib.util
from pathlib import Path

from alembic import op

revision = '0016fence'
down_revision = '0015items'
branch_labels = None
depends_on = None

LOOKUPS = {
    "r.item_id = f.item_id AND r.stage_id = f.stage_id": "r.item_id = f.item_id AND r.stage_id + 0 = f.stage_id",
    "r.item_id = g.item_id AND r.stage_id = g.stage_id": "r.item_id = g.item_id AND r.stage_id + 0 = g.stage_id",
}


def _functions_0014() -> str:
    """The counting functions as 0014counts creates them."""
    spec = importlib.util.spec_from_file_location("counts_0014", Path(__file__).with_name("0014_small_counts.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EXECUTED.sub(module._branched, module._functions_0011())


def _fenced() -> str:
    text = _functions_0014()
    for old, new in LOOKUPS.items():
        assert old in text, old
        text = text.replace(old, new)
    return text


def upgrade() -> None:
    op.execute(_fenced())


def downgrade() -> None:
    op.execute(_functions_0014())
