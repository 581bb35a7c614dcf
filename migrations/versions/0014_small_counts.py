"""count triggers: a cached plan for small statements, a fresh one for bulk ones

Revision ID: 0014counts
Revises: 0013leaks
Create Date: 2026-11-23 08:50:00

The counting triggers of 0011counts planned every statement anew (EXECUTE), so that a plan made for
a bulk statement is never reused for a one-row one. Planning cost about 0.35 ms per trigger firing,
and a claim and submit fire six: most of PostgreSQL's time on the annotation hot path. Each
statement now runs as static SQL, planned once per connection and cached, when its transition table
holds at most SMALL rows (a plan made for at most SMALL rows stays good for any count up to it), and
is still EXECUTEd, planned for the rows at hand, above that. The statements are 0011counts' own,
taken from that migration's text, so both branches and the old functions count the same way.
"""

import importlib.util
import re
from pathlib import Path

from alembic import op

revision = '0014counts'
down_revision = '0013leaks'
branch_labels = None
depends_on = None

SMALL = 64
EXECUTED = re.compile(r"EXECUTE \$q\$(.*?)\$q\$;", re.S)


def _functions_0011() -> str:
    spec = importlib.util.spec_from_file_location("counts_0011", Path(__file__).with_name("0011_stage_counts.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.FUNCTIONS.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")


def _branched(match: re.Match) -> str:
    statement = match.group(1)
    rows = "new_rows" if "new_rows" in statement else "old_rows"
    return (
        f"IF (SELECT count(*) FROM (SELECT FROM {rows} LIMIT {SMALL + 1}) s) <= {SMALL} THEN\n"
        f"        {statement};\n"
        f"    ELSE\n"
        f"        EXECUTE $q${statement}$q$;\n"
        f"    END IF;"
    )


def upgrade() -> None:
    op.execute(EXECUTED.sub(_branched, _functions_0011()))


def downgrade() -> None:
    op.execute(_functions_0011())
