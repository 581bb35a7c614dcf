"""The annotation queue: claim the next item with a lease, skip, release, and expire leases.

Correctness rests on the database, not on timing: a claim locks the item row (FOR UPDATE SKIP LOCKED) before it
takes one of the item's `slots_left`, so an item is never held by more annotators than its stage's overlap;
UNIQUE(item, stage, annotator) makes a second hold by the same annotator impossible. Lease times come from the
database clock. A claim answers "nothing left" only when no claimable item is left, counting rows it skipped
because another transaction held them (it waits briefly for those, see `LOCK_WAITS`).
"""

from __future__ import annotations

import functools
import time
import weakref
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app import gate, honeypot
from app.errors import Conflict, NotFound
from app.lifecycle import ASSIGNMENT_START, AssignmentEvent, AssignmentStatus, ItemStatus, sql_values, target, transition
from app.models import Assignment
from app.services.users.workspaces import member_of_stage

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
    RETURNING i.id
    """
)

# Take a fresh item in one statement: lock the lowest claimable item this annotator has never held
# in this stage (SKIP LOCKED), record the lease, and take one of the item's slots only if the lease
# row was written. The partial index ix_items_claimable walks only claimable rows in id order, and
# each candidate is checked against the annotator's assignments by one probe of the unique index.
# The walk starts at the stage's floor (see `_floor`): below it the index holds, until VACUUM has
# run, the entries of every item finished since, which a walk from the start steps over one by one.
# OFFSET 0 keeps that NOT EXISTS a per-row probe: as a join, with statistics gone stale after heavy
# work, the planner merged the annotator's whole history with every item of the stage, done ones
# included (docs/performance.md). `annotator_id + 0` keeps the probe on
# the unique index (item, stage, annotator), a few rows per item: with stale statistics the planner
# otherwise chose ix_assignments_annotator_stage and filtered all of the annotator's assignments in
# the stage for every candidate.
_TAKE_FRESH_SQL = (
    f"""
    WITH pick AS (
        SELECT i.id FROM items i
        WHERE i.stage_id = :stage AND i.status = '{_ACTIVE}' AND i.slots_left > 0 AND i.id >= :floor
          AND NOT EXISTS (
              SELECT 1 FROM assignments a
              WHERE a.item_id = i.id AND a.stage_id = :stage AND a.annotator_id + 0 = :user
              OFFSET 0)
        ORDER BY i.id
        LIMIT 1
        FOR UPDATE OF i SKIP LOCKED
    ), lease AS (
        INSERT INTO assignments (item_id, stage_id, annotator_id, status, lease_until)
        SELECT pick.id, :stage, :user, '{ASSIGNMENT_START}', now() + make_interval(secs => s.lease_seconds)
        FROM pick JOIN stages s ON s.id = :stage
        ON CONFLICT (item_id, stage_id, annotator_id) DO NOTHING
        RETURNING id, item_id, lease_until
    ), slot AS (
        UPDATE items SET slots_left = slots_left - 1 FROM lease WHERE items.id = lease.item_id
    )
    SELECT (SELECT id FROM pick) AS picked, lease.id AS assignment_id, lease.lease_until, {{answer}} AS answer
    FROM (SELECT 1) one LEFT JOIN lease ON true LEFT JOIN items i ON i.id = lease.item_id
    """
)

# Items this annotator skipped, released or let expire earlier: they come back last.
_PICK_RETURNING = sa.text(
    f"""
    SELECT i.id AS item_id, a.id AS assignment_id FROM items i
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
    SELECT a.id AS assignment_id, a.item_id FROM assignments a
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
    SELECT i.id, i.assets FROM items i
    WHERE i.stage_id = :stage AND i.status = '{_ACTIVE}' AND i.slots_left > 0 AND i.id <> :current AND i.id >= :floor
      AND NOT EXISTS (
          SELECT 1 FROM assignments a
          WHERE a.item_id = i.id AND a.stage_id = :stage AND a.annotator_id + 0 = :user
          OFFSET 0)
    ORDER BY i.id
    LIMIT :n
    """
)

_RENEW = sa.text(
    f"UPDATE assignments a SET status = '{_RENEWED}', lease_until = now() + make_interval(secs => s.lease_seconds)"
    " FROM stages s WHERE a.id = :id AND s.id = a.stage_id RETURNING a.lease_until"
)

# A column for the first statement of a hot transaction (a claim, an annotation screen): the rest of
# the transaction runs its prepared statements from their generic plans, made once per connection,
# instead of planning them anew on every run. PostgreSQL picks a custom plan per run while the
# custom plans it made look cheaper than the generic one, and with stale statistics the pick and the
# screen's look-ahead kept doing so for some stages, planning longer than running (the figure:
# app/tuning.py). Every statement of those transactions finds its rows through a key
# or an index that serves any value of it, so one plan fits every stage. Local to the transaction
# (`set_config(..., true)`): other routes' statements, with skewed parameters, keep custom plans.
PLAN_ONCE = "set_config('plan_cache_mode', 'force_generic_plan', true)"

# The annotator's live lease in the stage (if any) and whether a reviewer sent anything back to
# them (index ix_assignments_annotator_stage); the stage's gold share; whether any lease of the stage
# ran out (ix_assignments_leases: the statement returning their slots runs only then, as its counter
# triggers cost even when it moves no row); by primary-key probes, whether the stage paused their
# leases (planted wrong drafts, app.services.quality.bias.probe_catch: gold items only; the
# auto-pause: none), whether they have still to pass its quiz (app.gate), and whether the stage is
# theirs: within their workspaces and of a live project (else it answers as a missing one).
_MINE = sa.text(
    f"""
    SELECT live.id AS assignment_id, live.item_id, live.lease_until, EXISTS (
        SELECT 1 FROM assignments r
        WHERE r.annotator_id = :user AND r.stage_id = :stage AND r.status = '{_A.returned}') AS sent_back,
        coalesce((SELECT (config->>'gold_share')::float8 FROM stages WHERE id = :stage), 0) AS gold_share,
        EXISTS (SELECT 1 FROM assignments x WHERE x.stage_id = :stage AND x.status = '{_LIVE}' AND x.lease_until < now()) AS ran_out,
        {PLAN_ONCE},
        (SELECT CASE WHEN f.paused_at IS NOT NULL THEN 'stop' WHEN p.config->>'probe_action' = 'pause' THEN 'gold' END
         FROM annotator_flags f JOIN stages p ON p.id = f.stage_id WHERE f.stage_id = :stage AND f.annotator_id = :user) AS paused,
        CASE WHEN (SELECT config->>'quiz_items' FROM stages WHERE id = :stage)::int > 0 THEN NOT EXISTS (
            SELECT 1 FROM annotator_gates g WHERE g.stage_id = :stage AND g.annotator_id = :user AND g.passed_at IS NOT NULL)
        ELSE false END AS quiz,
        {member_of_stage()} AS member
    FROM (SELECT 1) one LEFT JOIN LATERAL (
        SELECT id, item_id, lease_until FROM assignments
        WHERE annotator_id = :user AND stage_id = :stage AND status = '{_LIVE}' AND lease_until > now()
        ORDER BY id LIMIT 1
    ) live ON true
    """
)

# The lowest claimable item of the stage (0 when none): a lower bound for every pick, kept per
# process for FLOOR_SECONDS (see `_floor`). Ordered by (stage_id, id), the order of the partial
# index ix_items_claimable, which the primary key cannot give; the stage as a one-element ANY
# keeps stage_id in that order (with `=` the planner drops a constant column from it). With
# statistics taken while the stage's items were claimable and most of them finished since, the
# planner otherwise read min(id) through the primary key, visiting every finished row, where the
# index walks only claimable ones (the figure: app/tuning.py).
_LOWEST_CLAIMABLE = sa.text(
    f"""
    SELECT coalesce((
        SELECT id FROM items
        WHERE stage_id = ANY(ARRAY[CAST(:stage AS integer)]) AND status = '{_ACTIVE}' AND slots_left > 0 AND id >= :since
        ORDER BY stage_id, id
        LIMIT 1), 0)
    """
)
FLOOR_SECONDS = 2.0  # the floor moves up from where it was (it steps over what was finished since)
FULL_FLOOR_SECONDS = 30.0  # and is read from the start (it steps over every finished item's entry)
# engine -> stage -> (floor, when it was read, when it was last read from the start); weak, so that a disposed engine's stages are forgotten
_floors: weakref.WeakKeyDictionary[sa.Engine, dict[int, tuple[int, float, float]]] = weakref.WeakKeyDictionary()

_TAKE_SLOT = sa.text("UPDATE items SET slots_left = slots_left - 1 WHERE id = :item")
MAX_PICKS = 8
# A flagged annotator in a stage whose probe action is "pause" (app.services.quality.bias.probe_catch).
PAUSED = ("Your work in this stage is paused: you caught too few of the planted wrong drafts, and no check item "
          "is left for you to show otherwise. Ask an admin.")
# Another annotator's assignment and a missing one get the same answer, so that ids cannot be enumerated.
NO_SUCH_ASSIGNMENT = "No such assignment for you."

# Whether an item this annotator could take exists but was passed over because another transaction
# held its row lock (SKIP LOCKED): a submit or release of another annotator on the stage's last
# items. No lock is taken: each statement sees what is committed by then.
_HELD_ELSEWHERE = sa.text(
    f"""
    SELECT EXISTS (
        SELECT 1 FROM items i
        WHERE i.stage_id = :stage AND i.status = '{_ACTIVE}' AND i.slots_left > 0
          AND NOT EXISTS (
              SELECT 1 FROM assignments a
              WHERE a.item_id = i.id AND a.stage_id = :stage AND a.annotator_id + 0 = :user
                AND a.status NOT IN ({sql_values(_GIVEN_BACK)})
              OFFSET 0))
    """
)
# How long a claim waits, in all, for such locks before it answers that nothing is left.
LOCK_WAITS = (0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32)


@functools.cache
def _take_fresh(answer: str | None) -> sa.TextClause:
    """The fresh pick, with `answer` (an SQL expression over the picked item `i`) as a fourth column."""
    return sa.text(_TAKE_FRESH_SQL.replace("{answer}", answer or "NULL"))


@dataclass(frozen=True)
class Claim:
    assignment_id: int
    item_id: int
    lease_until: datetime
    answer: str | None = None  # what the caller asked the fresh pick to compute along (see claim_next)


def _floor(session: Session, stage_id: int) -> int:
    """An item id below which no item of the stage is claimable, or was not a moment ago: the lowest
    claimable id, moved up from where it was every FLOOR_SECONDS and read from the start every
    FULL_FLOOR_SECONDS per process (a walk of the partial index from the stage's start, stepping
    over the entries of items finished since the last VACUUM), lowered at once by this process's give-backs,
    expiries and routings. An item that becomes claimable below it elsewhere (another process's
    release, for one) is found at the next read from the start, or at once when nothing is left
    above the floor (the pick then walks from the start): it comes later than in strict id order,
    never not at all."""
    floors = _stage_floors(session)
    now = time.monotonic()
    floor, read_at, full_at = floors.get(stage_id, (0, -FULL_FLOOR_SECONDS, -FULL_FLOOR_SECONDS))
    if now - read_at < FLOOR_SECONDS:
        return floor
    full = now - full_at >= FULL_FLOOR_SECONDS or floor == 0
    floor = session.execute(_LOWEST_CLAIMABLE, {"stage": stage_id, "since": 0 if full else floor}).scalar()
    floors[stage_id] = (floor, now, now if full else full_at)
    return floor


def _stage_floors(session: Session) -> dict[int, tuple[int, float, float]]:
    engine = session.get_bind()
    return _floors.get(engine) or _floors.setdefault(engine, {})


def forget_floors() -> None:
    """Forget every stage's floor in this process: for a database emptied and filled anew under the
    same engine (the tests do it between tests; ids start again, and a floor kept from before would
    hold the new stage's lowest items back for up to FULL_FLOOR_SECONDS)."""
    _floors.clear()


def lower_floor(session: Session, stage_id: int, item_id: int) -> None:
    """An item of the stage became claimable: this process's claims walk from it at once."""
    floors = _stage_floors(session)
    if (cached := floors.get(stage_id)) is not None and item_id < cached[0]:
        floors[stage_id] = (item_id, *cached[1:])


def expire_leases(session: Session, stage_id: int) -> None:
    """Return the slots of leases that ran out (at most 500 per call; the next claim takes more)."""
    freed = session.execute(_EXPIRE, {"stage": stage_id}).scalars().all()
    if freed:
        lower_floor(session, stage_id, min(freed))


def live_lease(session: Session, stage_id: int, annotator_id: int) -> Claim | None:
    """The annotator's live lease in the stage, if they hold one; nothing is leased or renewed."""
    return _live(_mine(session, {"stage": stage_id, "user": annotator_id}))


def _mine(session: Session, params: dict):  # `_MINE`'s row; a 404 for a stage not theirs (other workspace, archived)
    if not (mine := session.execute(_MINE, params).mappings().one())["member"]:
        raise NotFound(f"No stage with id {params['stage']}.")
    return mine


def _live(mine) -> Claim | None:
    return None if mine["assignment_id"] is None else Claim(mine["assignment_id"], mine["item_id"], mine["lease_until"])


def claim_next(session: Session, stage_id: int, annotator_id: int, *, resume: bool = False, answer: str | None = None) -> Claim | None:
    """Lease the next eligible item of the stage to the annotator, or return None if none is left.
    With `resume`, the annotator's live lease in the stage comes back first, if they hold one. With
    `answer` (an SQL expression over the leased item `i`, which may use :stage), a fresh pick
    computes it in its own statement and returns it as `Claim.answer`."""
    params = {"stage": stage_id, "user": annotator_id}
    mine = _mine(session, params)
    if resume and mine["assignment_id"] is not None:
        return _live(mine)
    if mine["paused"] == "stop":
        raise gate.paused(session, stage_id, annotator_id)
    if mine["ran_out"]:  # before the quiz's pick, which serves a quiz item whose lease ran out again
        expire_leases(session, stage_id)
    if mine["paused"] or mine["quiz"]:  # gold items only: until their probe catch rate recovers (or none is left), or of the quiz
        gold = gate.quiz_claim(session, stage_id, annotator_id) if mine["quiz"] else honeypot.pick(session, stage_id, annotator_id, 0, only=True)
        if gold is None:
            raise Conflict(PAUSED)
        return Claim(gold.assignment_id, gold.item_id, gold.lease_until)
    if mine["gold_share"] > 0:
        gold = honeypot.pick(session, stage_id, annotator_id, mine["gold_share"])  # a gold item for this claim, or None
        if gold is not None:
            return Claim(gold.assignment_id, gold.item_id, gold.lease_until)
    if mine["sent_back"]:
        back = session.execute(_PICK_SENT_BACK, params).mappings().first()
        if back is not None:
            return _renewed(session, back["assignment_id"], back["item_id"])
    # A row another transaction holds is skipped, not waited for; "nothing left" is answered only
    # once nothing claimable is left even counting those rows, after short waits for their locks.
    for wait in (*LOCK_WAITS, None):
        claim = _pick(session, params, answer)
        if claim is not None or wait is None or not session.execute(_HELD_ELSEWHERE, params).scalar():
            return claim
        time.sleep(wait)
    return None


def _pick(session: Session, params: dict, answer: str | None = None) -> Claim | None:
    """A fresh item, else one the annotator gave back earlier, among rows no one else holds locked."""
    # A concurrent claim by the same annotator can commit between this statement's snapshot and
    # its row lock; the unique constraint then turns the insert into a no-op and we pick again.
    params = {**params, "floor": _floor(session, params["stage"])}
    take = _take_fresh(answer)
    for _ in range(MAX_PICKS):
        took = session.execute(take, params).mappings().one()
        if took["picked"] is None and params["floor"] > 0:  # nothing above the floor: walk from the start
            params["floor"] = 0
            took = session.execute(take, params).mappings().one()
        if took["picked"] is None:
            break
        if took["assignment_id"] is not None:
            return Claim(took["assignment_id"], took["picked"], took["lease_until"], took["answer"])
    found = session.execute(_PICK_RETURNING, params).mappings().first()
    if found is None:
        return None
    claim = _renewed(session, found["assignment_id"], found["item_id"])
    session.execute(_TAKE_SLOT, {"item": found["item_id"]})
    return claim


def _renewed(session: Session, assignment_id: int, item_id: int) -> Claim:
    """The annotator's earlier assignment of the item, leased to them again."""
    return Claim(assignment_id, item_id, session.execute(_RENEW, {"id": assignment_id}).scalar_one())


def upcoming(session: Session, stage_id: int, annotator_id: int, current_item: int, n: int = 1) -> list[tuple[int, dict]]:
    """The items a claim after `current_item` would most likely lease to the annotator, with their
    assets; nothing is locked or held, so another annotator may still take them (the guess is then
    merely wasted)."""
    params = {"stage": stage_id, "user": annotator_id, "current": current_item, "n": n, "floor": _floor(session, stage_id)}
    return [(row["id"], row["assets"]) for row in session.execute(_PEEK_FRESH, params).mappings()]


_MEMBER_OF_ITS_STAGE = sa.text(member_of_stage("assignments.stage_id"))  # within its annotator's workspaces


def lock_assignment(session: Session, assignment_id: int, annotator_id: int) -> Assignment:
    """The annotator's assignment, locked; a 404 for anyone else's, or one outside their workspaces."""
    assignment = session.scalar(
        sa.select(Assignment).where(Assignment.id == assignment_id, _MEMBER_OF_ITS_STAGE.bindparams(user=annotator_id)).with_for_update()
    )
    if assignment is None or assignment.annotator_id != annotator_id:
        raise NotFound(NO_SUCH_ASSIGNMENT)
    return assignment


def give_back(session: Session, assignment_id: int, annotator_id: int, event: AssignmentEvent) -> None:
    """Skip (come back later) or release an active assignment; its slot returns to the pool. A quiz
    item is kept (app.gate.keep_quiz_item: a 409)."""
    assert event in (AssignmentEvent.skip, AssignmentEvent.release)
    assignment = lock_assignment(session, assignment_id, annotator_id)
    if assignment.status != AssignmentStatus.active:
        raise Conflict(f"This assignment is already {assignment.status}.")
    gate.keep_quiz_item(session, assignment)
    assignment.status = transition(assignment.status, event)
    lower_floor(session, assignment.stage_id, assignment.item_id)
    session.execute(sa.text("UPDATE items SET slots_left = slots_left + 1 WHERE id = :item AND stage_id = :stage"),
                    {"item": assignment.item_id, "stage": assignment.stage_id})
