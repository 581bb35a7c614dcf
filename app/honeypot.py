"""Honeypots in the annotation queue: whether this claim serves a gold item, and which one.

The queue asks `pick` first on every claim. A stage's `gold_share` is the chance that a claim
serves a gold item; the annotator never gets the same gold item twice (the assignment's
UNIQUE(item, stage, annotator) makes it impossible, as for any item) and never two gold items in a
row. Gold items take no overlap slot: they have status `gold`, which the ordinary queue never
picks, and any number of annotators may answer one. A gold assignment is an ordinary assignment
row, so the screen, the API, drafts, skip and submit see nothing that marks it.

A per-annotator transaction-level advisory lock is taken only when a gold item is about to be
served: it orders one annotator's concurrent gold claims, so "never two in a row" holds even for
parallel tabs, and never blocks another annotator.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.lifecycle import ASSIGNMENT_START, ItemStatus

# The first key of pg_advisory_xact_lock(int, int); the second is the annotator's id.
LOCK_CLASS = 0x601D

_LOCK = sa.text("SELECT pg_advisory_xact_lock(:cls, :user)")

# Whether the annotator's newest assignment in the stage is a gold item's. Gold assignments are
# inserted under the lock, after this check: so in id order an ordinary assignment always lies
# between two gold ones, whatever the annotator's parallel claims do. (A renewed old assignment keeps
# its id; it can only make this check say "gold" more often, never less.)
_LAST_WAS_GOLD = sa.text(
    f"""
    SELECT i.status = '{ItemStatus.gold}' FROM assignments a JOIN items i ON i.id = a.item_id
    WHERE a.stage_id = :stage AND a.annotator_id = :user
    ORDER BY a.id DESC
    LIMIT 1
    """
)

# A gold item of the stage this annotator never held, at random (`+ 0`: the probe stays on the
# unique index of (item, stage, annotator), as in app.queue).
_PICK_GOLD = sa.text(
    f"""
    SELECT g.item_id FROM gold_items g JOIN items i ON i.id = g.item_id
    WHERE g.stage_id = :stage AND i.stage_id = :stage AND i.status = '{ItemStatus.gold}'
      AND NOT EXISTS (
          SELECT 1 FROM assignments a
          WHERE a.item_id = g.item_id AND a.stage_id = :stage AND a.annotator_id + 0 = :user)
    ORDER BY random()
    LIMIT 1
    """
)

_INSERT = sa.text(
    "INSERT INTO assignments (item_id, stage_id, annotator_id, status, lease_until)"
    f" SELECT :item, :stage, :user, '{ASSIGNMENT_START}', now() + make_interval(secs => s.lease_seconds)"
    " FROM stages s WHERE s.id = :stage"
    " ON CONFLICT (item_id, stage_id, annotator_id) DO NOTHING"
    " RETURNING id, lease_until"
)


@dataclass(frozen=True)
class GoldLease:
    assignment_id: int
    item_id: int
    lease_until: datetime


def pick(session: Session, stage_id: int, annotator_id: int, p: float, *, draw=random.random) -> GoldLease | None:
    """Lease a gold item of the stage to the annotator for this claim, or None when this claim serves
    an ordinary item (the draw said so, the previous claim was gold, or no gold item is left for
    them). `p` is the stage's `gold_share`."""
    # After an ordinary claim a gold item comes with chance p / (1 - p): as a gold claim is always
    # followed by an ordinary one, the long-run share of gold claims is then exactly p (p <= 0.5).
    if p <= 0 or draw() >= p / (1 - p):
        return None
    params = {"stage": stage_id, "user": annotator_id}
    session.execute(_LOCK, {"cls": LOCK_CLASS, "user": annotator_id})
    if session.execute(_LAST_WAS_GOLD, params).scalar():
        return None
    item_id = session.execute(_PICK_GOLD, params).scalar()
    if item_id is None:
        return None
    row = session.execute(_INSERT, {**params, "item": item_id}).mappings().first()
    if row is None:  # cannot happen under the lock; an ordinary item then
        return None
    return GoldLease(row["id"], item_id, row["lease_until"])
