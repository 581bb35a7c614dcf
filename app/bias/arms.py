"""Which arm an assignment is in: drafts shown, hidden (the control arm), or a planted wrong draft (a probe).

The arm is a pure function of the stage's seed and the assignment's id, so a claim writes nothing more
and every screen, the API and the submit agree on it without asking each other. The draw is the first
32 bits of md5("<seed>:<assignment id>"), computed the same way in SQL (`hidden_sql`, for the API's
claim answer, built by the database) and in Python; a test holds the two together. Assignments, not
annotators, are randomised: each annotator answers in both arms.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

SHOWN, CONTROL, PROBE = "shown", "control", "probe"
ARMS = (SHOWN, CONTROL, PROBE)
SPAN = 4294967296.0  # 2**32: the draw's range
IDLE_SECONDS = 30.0  # an idle spell longer than this is not counted as active time (the screen's script)
MAX_ACTIVE_SECONDS = 4 * 3600.0  # a longer active time is stored as this (a tab left with focus)


def draw(seed: int, assignment_id: int) -> int:
    """The assignment's draw in [0, 2**32), fixed by the seed."""
    return int(hashlib.md5(f"{seed}:{assignment_id}".encode()).hexdigest()[:8], 16)


def settings(config: Mapping[str, Any] | None) -> tuple[float, int, float]:
    """The stage's (control share, seed, probe share) from its stored configuration."""
    config = config or {}
    return (float(config.get("draft_control_share") or 0.0), int(config.get("draft_control_seed") or 0),
            float(config.get("probe_share") or 0.0))


def arm(config: Mapping[str, Any] | None, assignment_id: int, *, gold: bool = False) -> str:
    """The assignment's arm. A draw below the control share hides the drafts; on a gold item, the
    next `probe_share` of the draws left shows a probe; every other assignment sees the drafts."""
    control, seed, probes = settings(config)
    if not gold:
        probes = 0.0
    if control <= 0 and probes <= 0:
        return SHOWN
    h = draw(seed, assignment_id)
    if h < control * SPAN:
        return CONTROL
    if h < (control + probes * (1 - control)) * SPAN:
        return PROBE
    return SHOWN


def hidden_sql(config: str, assignment: str) -> str:
    """An SQL condition, true when the assignment is in the control arm: `config` an SQL expression of
    the stage's configuration (jsonb), `assignment` one of the assignment's id. Matches `arm`."""
    share = f"COALESCE(({config}->>'draft_control_share')::float8, 0)"
    value = f"('x' || substr(md5(COALESCE({config}->>'draft_control_seed', '0') || ':' || {assignment}), 1, 8))::bit(32)::bigint"
    return f"(CASE WHEN {share} > 0 THEN {value} < {share} * {SPAN} ELSE false END)"


def active_seconds(value: Any, spent: float | None = None, *, lease: float | None = None) -> float | None:
    """The screen's active time as stored: a finite number of seconds, at most the wall time `spent`
    on the item (claim to submit, when known), the stage's `lease` length (when given: time past the
    lease is not credited) and MAX_ACTIVE_SECONDS; None when absent or unreadable."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(seconds) or seconds < 0:
        return None
    seconds = min(seconds, MAX_ACTIVE_SECONDS, lease if lease is not None else MAX_ACTIVE_SECONDS)
    return min(seconds, spent) if spent is not None else seconds


# A stage's settings that say how arms, probes and gold items are drawn: an annotator who read them
# could tell a gold item or a probe, or work out their own arm, so only reviewers and admins see them.
HIDDEN_PREFIXES = ("draft_control_", "probe_", "gold_")


def for_annotators(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The stage configuration without the keys that draw arms, probes and gold items."""
    return {k: v for k, v in (config or {}).items() if not k.startswith(HIDDEN_PREFIXES)}
