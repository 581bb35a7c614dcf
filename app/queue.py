"""The annotation queue: claim the next item with a lease, skip, release, and expire leases.

Correctness rests on the database, not on timing: a claim locks the item row
(FOR UPDATE SKIP LOCKED) before it takes one of the item's `slots_left`, so an item is never
held by more annotators than its stage's overlap; UNIQUE(item, stage, annotator) makes a
second hold by the same annotator impossible. Lease times come from the database clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app import honeypot
from app.errors import Conflict, NotFound
from app.lifecycle import (
    ASSIGNMENT_START,
    AssignmentEvent,
    AssignmentStatus,
    ItemStatus,
    sql_values,
    target,
    transition,
)
from app.models import Assignment, Stage

# The SQL below is plain text for speed; its statuses come from the lifecycle, fixed at import,
# and the moves it makes are checked against the transition table here, once.
_A = AssignmentStatus
_ACTIVE, _LIVE = ItemStatus.active, _A.active  # an item annotators may take; a lease being held
_GIVEN_BACK = (_A.skipped, _A.released, _A.expired)
_RENEWED = target(AssignmentEvent.claim, _A.returned, *_GIVEN_BACK)
_EXPIRED = target(AssignmentEvent.expire, _LIVE)

_EXPIRE = sa.text(
    f"""
    WITH gone AS (
        SELECT a.id, a.item_id
        FROM assignments a JOIN items i ON i.id = a.item_id
        WHERE a.stage_id = :stage AND a.status = '{_LIVE}' AND a.lease_until < now()
        LIMIT 500
        FOR UPDATE OF a, i SKIP LOCKED
    ), upd AS (
        UPDATE assignments a SET status = '{_EXPIRED}' FROM gone WHERE a.id = gone.id RETURNING a.item_id
    )
    UPDATE items i SET slots_left = i.slots_left + c.n
    FROM (SELECT item_id, count(*) AS n FROM upd GROUP BY item_id) c
    WHERE i.id = c.item_id AND i.stage_id = :stage
    """
)

# Items this annotator has never held in this stage, lowest id first.
_PICK_FRESH = sa.text(
    f"""
    SELECT i.id FROM items i
    WHERE i.stage_id = :stage AND i.status = '{_ACTIVE}' AND i.slots_left > 0
      AND NOT EXISTS (
          SELECT 1 FROM assignments a
          WHERE a.item_id = i.id AND a.stage_id = :stage AND a.annotator_id = :user)
    ORDER BY i.id
    LIMIT 1
    FOR UPDATE OF i SKIP LOCKED
    """
)

# Items this annotator skipped, released or let expire earlier: they come back last.
_PICK_RETURNING = sa.text(
    f"""
    SELECT i.id, a.id FROM items i
    JOIN assignments a ON a.item_id = i.id AND a.stage_id = :stage AND a.annotator_id = :user
    WHERE i.stage_id = :stage AND i.status = '{_ACTIVE}' AND i.slots_left > 0
      AND a.status IN ({sql_values(_GIVEN_BACK)})
    ORDER BY a.lease_until, a.id
    LIMIT 1
    FOR UPDATE OF i, a SKIP LOCKED
    """
)

# Items a reviewer sent back to this annotator: they come first, and take no new slot.
_PICK_SENT_BACK = sa.text(
    f"""
    SELECT a.id, a.item_id FROM assignments a
    JOIN items i ON i.id = a.item_id
    WHERE a.stage_id = :stage AND a.annotator_id = :user AND a.status = '{_A.returned}'
      AND i.stage_id = :stage AND i.status = '{_ACTIVE}'
    ORDER BY a.id
    LIMIT 1
    FOR UPDATE OF a SKIP LOCKED
    """
)

# What a claim would most likely give next (no lock, no lease): the screen prefetches its images.
_PEEK_FRESH = sa.text(
    f"""
    SELECT i.id FROM items i
    WHERE i.stage_id = :stage AND i.status = '{_ACTIVE}' AND i.slots_left > 0 AND i.id <> :current
      AND NOT EXISTS (
          SELECT 1 FROM assignments a
          WHERE a.item_id = i.id AND a.stage_id = :stage AND a.annotator_id = :user)
    ORDER BY i.id
    LIMIT :n
    """
)

_INSERT = sa.text(
    "INSERT INTO assignments (item_id, stage_id, annotator_id, status, lease_until)"
    f" VALUES (:item, :stage, :user, '{ASSIGNMENT_START}', now() + make_interval(secs => :lease))"
    " ON CONFLICT (item_id, stage_id, annotator_id) DO NOTHING"
    " RETURNING id, lease_until"
)

_RENEW = sa.text(
    f"UPDATE assignments SET status = '{_RENEWED}', lease_until = now() + make_interval(secs => :lease)"
    " WHERE id = :id RETURNING id, lease_until"
)

_TAKE_SLOT = sa.text("UPDATE items SET slots_left = slots_left - 1 WHERE id = :item")
MAX_PICKS = 8


@dataclass(frozen=True)
class Claim:
    assignment_id: int
    item_id: int
    lease_until: datetime


def expire_leases(session: Session, stage_id: int) -> None:
    """Return the slots of leases that ran out (at most 500 per call; the next claim takes more)."""
    session.execute(_EXPIRE, {"stage": stage_id})


def claim_next(session: Session, stage: Stage, annotator_id: int) -> Claim | None:
    """Lease the next eligible item of `stage` to the annotator, or return None if none is left."""
    expire_leases(session, stage.id)
    gold = honeypot.pick(session, stage, annotator_id)  # a gold item for this claim, or None
    if gold is not None:
        return Claim(*gold)
    params = {"stage": stage.id, "user": annotator_id}
    back = session.execute(_PICK_SENT_BACK, params).first()
    if back is not None:
        row = session.execute(_RENEW, {"id": back[0], "lease": stage.lease_seconds}).one()
        return Claim(assignment_id=row[0], item_id=back[1], lease_until=row[1])
    row = None
    # A concurrent claim by the same annotator can commit between this statement's snapshot and
    # its row lock; the unique constraint then turns the insert into a no-op and we pick again.
    for _ in range(MAX_PICKS):
        item_id = session.execute(_PICK_FRESH, params).scalar()
        if item_id is None:
            break
        row = session.execute(_INSERT, {**params, "item": item_id, "lease": stage.lease_seconds}).first()
        if row is not None:
            break
    if row is None:
        found = session.execute(_PICK_RETURNING, params).first()
        if found is None:
            return None
        item_id, assignment_id = found
        row = session.execute(_RENEW, {"id": assignment_id, "lease": stage.lease_seconds}).one()
    session.execute(_TAKE_SLOT, {"item": item_id})
    return Claim(assignment_id=row[0], item_id=item_id, lease_until=row[1])


def upcoming(session: Session, stage_id: int, annotator_id: int, current_item: int, n: int = 1) -> list[int]:
    """The items a claim after `current_item` would most likely lease to the annotator; nothing is
    locked or held, so another annotator may still take them (the guess is then merely wasted)."""
    params = {"stage": stage_id, "user": annotator_id, "current": current_item, "n": n}
    return list(session.execute(_PEEK_FRESH, params).scalars())


def current_assignment(session: Session, stage_id: int, annotator_id: int) -> Assignment | None:
    """The annotator's live lease in this stage, if any (so a reopened tab resumes it)."""
    return session.scalar(
        sa.select(Assignment)
        .where(
            Assignment.stage_id == stage_id,
            Assignment.annotator_id == annotator_id,
            Assignment.status == AssignmentStatus.active,
            Assignment.lease_until > sa.func.now(),
        )
        .order_by(Assignment.id)
        .limit(1)
    )


def lock_assignment(session: Session, assignment_id: int, annotator_id: int) -> Assignment:
    assignment = session.scalar(
        sa.select(Assignment).where(Assignment.id == assignment_id).with_for_update()
    )
    if assignment is None or assignment.annotator_id != annotator_id:
        raise NotFound("No such assignment for you.")
    return assignment


def give_back(session: Session, assignment_id: int, annotator_id: int, event: AssignmentEvent) -> None:
    """Skip (come back later) or release an active assignment; its slot returns to the pool."""
    assert event in (AssignmentEvent.skip, AssignmentEvent.release)
    assignment = lock_assignment(session, assignment_id, annotator_id)
    if assignment.status != AssignmentStatus.active:
        raise Conflict(f"This assignment is already {assignment.status}.")
    assignment.status = transition(assignment.status, event)
    session.execute(
        sa.text("UPDATE items SET slots_left = slots_left + 1 WHERE id = :item AND stage_id = :stage"),
        {"item": assignment.item_id, "stage": assignment.stage_id},
    )
