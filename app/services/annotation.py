"""Annotating: claim for a user, open an assignment's screen data, autosave, submit, skip."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app import queue
from app.datasets import get_task
from app.errors import Conflict, Invalid, NotFound
from app.lifecycle import AssignmentEvent, AssignmentStatus, ItemEvent, ItemStatus, transition
from app.models import AnnotatorCount, Assignment, AuditEvent, Draft, User
from app.services import audit, gold
from app.services import suggestions as suggestions_service
from app.services.pipeline import first_applying
from app.services.projects import get_stage

MAX_KEY_LENGTH = 100
_A = AssignmentStatus
_GIVEN_BACK = (_A.expired, _A.released, _A.skipped)


class AlreadySubmitted(Conflict):
    """Another answer posted under the key of an earlier submit (a revision needs a new key)."""


@dataclass
class SubmitResult:
    annotation_id: int
    revision: int
    replayed: bool
    item_status: str
    stage_id: int  # the assignment's stage


def claim(session: Session, stage_id: int, user_id: int, *, resume: bool = False, answer: bool = False) -> queue.Claim | None:
    """The next item for the annotator in the stage (a new lease); None when nothing is left for them.
    With `resume`, their live lease in the stage if they hold one (a reopened tab or a client that
    lost the answer gets it back). With `answer`, a fresh claim brings the API's answer along (see
    `claim_json`)."""
    claimed = queue.claim_next(session, stage_id, user_id, resume=resume, answer=_ITEM_ANSWER if answer else None)
    if claimed is None:
        get_stage(session, stage_id)  # 404 for an unknown stage, looked up only when nothing was found
    return claimed


def resume_or_claim(session: Session, stage_id: int, user_id: int, *, answer: bool = False) -> queue.Claim | None:
    """The annotator's live lease in the stage, or else the next item; None when nothing is left for them."""
    return claim(session, stage_id, user_id, resume=True, answer=answer)


def held(session: Session, stage_id: int, user_id: int) -> queue.Claim | None:
    """The annotator's live lease in the stage, if any, for a page that only looks (a GET never leases)."""
    held = queue.live_lease(session, stage_id, user_id)
    if held is None:
        get_stage(session, stage_id)  # 404 for an unknown stage
    return held


# The API's answer to a claim (app.web.schemas.ClaimOut), written by PostgreSQL as JSON text: the
# item, the earlier stages' final records (the newest per workflow, as results_by_stage) and the
# newest suggestion of each kind (as suggestions.for_item). Nothing is decoded into Python objects
# and encoded again on the hottest route (the item's finals fenced, as in _SUBMIT_CONTEXT below).
# A fresh claim computes it in its own statement (the
# queue's pick takes this expression, `i` being the picked item); Python puts the lease in front.
# An item's earlier finals as screens and the API show them: the newest of each workflow's, without
# a gold item's own final at its gold stage or after (it is the truth; as pipeline.results_by_stage).
_RESULTS_JSON = """COALESCE((
            SELECT jsonb_object_agg(r.workflow, r.payload) FROM (
                SELECT DISTINCT ON (s.workflow) s.workflow, ir.payload
                FROM (SELECT id, stage_id, payload FROM item_results WHERE item_id = i.id OFFSET 0) ir
                JOIN stages s ON s.id = ir.stage_id
                WHERE NOT EXISTS (SELECT 1 FROM gold_items gi JOIN stages gs ON gs.id = gi.stage_id
                                  WHERE gi.item_id = i.id AND gs.position <= s.position)
                ORDER BY s.workflow, ir.id DESC) r), '{}'::jsonb)"""
# The newest suggestion of each kind for the item `i` in the stage {stage} (as suggestions.for_item).
_SUGGESTIONS_JSON = """COALESCE((
            SELECT json_agg(json_build_object('id', g.id, 'kind', g.kind, 'model', g.model,
                                              'model_version', g.model_version, 'payload', g.payload, 'score', g.score)
                            ORDER BY g.kind)
            FROM (SELECT DISTINCT ON (kind) * FROM suggestions
                  WHERE item_id = i.id AND stage_id = {stage} ORDER BY kind, created_at DESC, id DESC) g), '[]'::json)"""
_ITEM_ANSWER = f"""json_build_object(
        'data', i.data, 'assets', i.assets,
        'results', {_RESULTS_JSON},
        'suggestions', {_SUGGESTIONS_JSON.format(stage=":stage")}
    )::text"""
_CLAIM_JSON = sa.text(f"SELECT {_ITEM_ANSWER} FROM items i WHERE i.id = :item")


def claim_json(session: Session, claimed: queue.Claim, stage_id: int) -> bytes:
    """The claimed assignment as the API answers it (JSON text)."""
    item = claimed.answer
    if item is None:
        item = session.execute(_CLAIM_JSON, {"item": claimed.item_id, "stage": stage_id}).scalar_one()
    lease = claimed.lease_until.isoformat()
    return f'{{"assignment_id": {claimed.assignment_id}, "item_id": {claimed.item_id}, "lease_until": "{lease}", {item[1:]}'.encode()


def upcoming_images(session: Session, stage_id: int, user_id: int, current_item: int) -> list[str]:
    """The image hashes of the item the annotator will most likely claim after `current_item`
    (a guess: nothing is leased), each once, in the item's order."""
    upcoming = queue.upcoming(session, stage_id, user_id, current_item)
    return list(dict.fromkeys(sha for _, assets in upcoming for sha in (assets or {}).values()))


# A submit in three round trips: lock the assignment and its item (the stage comes along), read what
# the submit decides on in one statement taken after the lock (so it sees every submit committed
# before it), then write everything in one statement of data-modifying CTEs. The decisions between
# them (validation, suggestion outcomes, consolidation, routing) stay in the workflows' Python; no
# ORM object is loaded on the way, except for a gold item's answer (rare; app.services.gold scores it).
# Reads of an item's finals are fenced (OFFSET 0) to the item's own rows: with statistics gone stale
# the planner otherwise combined them with every final of the stage through ix_item_results_stage_id.
_LOCK_FOR_SUBMIT = sa.text(
    """
    SELECT a.annotator_id, a.status, i.id, i.status, i.stage_id, i.slots_left, i.data,
           s.id, s.project_id, s.position, s.workflow, s.config, s.overlap, s.sample_size
    FROM assignments a JOIN items i ON i.id = a.item_id JOIN stages s ON s.id = a.stage_id
    WHERE a.id = :assignment
    FOR UPDATE OF a, i
    """
)

_SUBMIT_CONTEXT = sa.text(
    f"""
    SELECT
        (SELECT json_build_array(e.id, e.assignment_id, e.payload, e.revision) FROM annotations e
         WHERE e.annotator_id = :user AND e.idempotency_key = :key),
        (SELECT max(revision) FROM annotations WHERE assignment_id = :assignment),
        (SELECT json_agg(json_build_array(s.workflow, r.payload, s.position) ORDER BY r.id)
         FROM (SELECT id, stage_id, payload FROM item_results WHERE item_id = :item OFFSET 0) r JOIN stages s ON s.id = r.stage_id),
        (SELECT min(gs.position) FROM gold_items g JOIN stages gs ON gs.id = g.stage_id WHERE g.item_id = :item),
        (SELECT json_agg(json_build_array(g.id, g.kind, g.model, g.model_version, g.payload) ORDER BY g.kind)
         FROM (SELECT DISTINCT ON (kind) id, kind, model, model_version, payload FROM suggestions
               WHERE item_id = :item AND stage_id = :stage ORDER BY kind, created_at DESC, id DESC) g),
        (SELECT count(*) FROM assignments
         WHERE item_id = :item AND stage_id = :stage AND status = '{_A.submitted}' AND id <> :assignment),
        (SELECT json_agg(json_build_array(x.assignment_id, x.payload) ORDER BY x.assignment_id)
         FROM (SELECT DISTINCT ON (n.assignment_id) n.assignment_id, n.payload
               FROM annotations n JOIN assignments o ON o.id = n.assignment_id
               WHERE n.item_id = :item AND n.stage_id = :stage AND o.status = '{_A.submitted}' AND o.id <> :assignment
               ORDER BY n.assignment_id, n.revision DESC) x),
        EXISTS (SELECT 1 FROM stage_samples WHERE stage_id = :stage AND item_id = :item),
        (SELECT json_agg(json_build_array(s.id, s.workflow, s.config, s.overlap, s.sample_size,
                         EXISTS (SELECT 1 FROM stage_samples ss WHERE ss.stage_id = s.id AND ss.item_id = :item)) ORDER BY s.position)
         FROM stages s WHERE s.project_id = :project AND s.position > :position),
        (SELECT array_agg(f.annotator_id ORDER BY f.annotator_id) FROM annotator_flags f
         WHERE f.stage_id = :stage AND f.annotator_id IN (
             SELECT annotator_id FROM assignments
             WHERE item_id = :item AND stage_id = :stage AND (status = '{_A.submitted}' OR id = :assignment)))
    """
)


@dataclass(frozen=True)
class _StageRow:
    """The stage fields a submit, its routing and the gold scoring read (duck-types models.Stage there)."""

    id: int
    project_id: int | None
    position: int | None
    workflow: str
    config: dict[str, Any]
    overlap: int
    sample_size: int | None

    def required(self, sampled: bool) -> int:
        """How many annotations an item needs in the stage (as sampling.required)."""
        return self.overlap if self.sample_size is None or sampled else 1


@functools.cache
def _write_statement(outcomes: bool, final: bool, item: bool) -> sa.TextClause:
    """The submit's writes as one statement; its optional parts by what this submit changes."""
    parts = [
        """ann AS (
            INSERT INTO annotations (assignment_id, item_id, stage_id, annotator_id, revision, idempotency_key, payload, seconds_spent)
            VALUES (:assignment, :item, :stage, :user, :revision, :key, CAST(:payload AS jsonb), :seconds) RETURNING id)""",
        "asg AS (UPDATE assignments SET status = :assignment_status, submitted_at = now() WHERE id = :assignment)",
        "dra AS (DELETE FROM drafts WHERE assignment_id = :assignment)",
    ]
    if outcomes:
        parts.append(
            """sug AS (
            INSERT INTO suggestion_outcomes (annotation_id, suggestion_id, stage_id, kind, model, model_version, outcome)
            SELECT ann.id, o.id, :stage, o.kind, o.model, o.model_version, o.outcome
            FROM ann, jsonb_to_recordset(CAST(:outcomes AS jsonb)) AS o(id bigint, kind text, model text, model_version text, outcome text)
            ON CONFLICT (annotation_id, suggestion_id) DO NOTHING)"""
        )
    if final:
        parts.append(
            "fin AS (INSERT INTO item_results (item_id, stage_id, payload, discard, source)"
            " VALUES (:item, :stage, CAST(:final AS jsonb), :discard, 'auto'))"
        )
    if item:
        parts.append("itm AS (UPDATE items SET status = :item_status, stage_id = :item_stage, slots_left = :slots WHERE id = :item)")
    return sa.text("WITH " + ",\n".join(parts) + "\nSELECT id FROM ann")


def submit(
    session: Session,
    assignment_id: int,
    user_id: int,
    payload: dict[str, Any],
    idempotency_key: str,
    *,
    seconds_spent: float | None = None,
    form: bool = False,
) -> SubmitResult:
    """Store one annotation. The same (user, idempotency key) always yields the same annotation,
    however often and however concurrently it is posted. With `form`, `payload` is what an
    annotation page posted, turned into the answer by the stage's workflow (`form_to_payload`)
    once the assignment is locked: the page learns the workflow in the same round trip."""
    if not idempotency_key or len(idempotency_key) > MAX_KEY_LENGTH:
        raise Invalid(f"An idempotency key of 1 to {MAX_KEY_LENGTH} characters is required.")
    # The row lock on the assignment serializes concurrent posts of the same submit.
    row = session.execute(_LOCK_FOR_SUBMIT, {"assignment": assignment_id}).first()
    if row is None or row[0] != user_id:
        raise NotFound(queue.NO_SUCH_ASSIGNMENT)
    _, assignment_status, item_id, item_status, item_stage, slots, data = row[:7]
    stage = _StageRow(*row[7:])
    params = {"assignment": assignment_id, "user": user_id, "key": idempotency_key, "item": item_id, "stage": stage.id,
              "project": stage.project_id, "position": stage.position}
    (earlier, last_revision, finals, gold_from, shown, others, other_payloads, sampled, later,
     flagged) = session.execute(_SUBMIT_CONTEXT, params).one()
    gold_here = item_status == ItemStatus.gold and item_stage == stage.id

    def visible(position: int) -> bool:  # as results_by_stage: a gold item shows only the finals before its gold stage
        return gold_from is None or position < gold_from

    results = {name: result for name, result, position in finals or () if visible(position)}
    task = get_task(stage.workflow)
    if form:
        payload = task.form_to_payload(payload)
    if earlier is not None:
        earlier_id, earlier_assignment, earlier_payload, earlier_revision = earlier
        if earlier_assignment != assignment_id:
            raise Conflict("This idempotency key was already used for another assignment.")
        # A retry repeats the answer; another answer under the same key (a page shown again
        # after its submit) must never be dropped silently: it is refused with the way on.
        if payload != earlier_payload and task.validate_annotation(data, payload, stage.config, results) != earlier_payload:
            raise AlreadySubmitted(
                f"You already submitted this item with another answer (revision {earlier_revision}); "
                "nothing was changed. Submit again to store this answer as a new revision."
            )
        status = item_status
        if item_status == ItemStatus.gold:  # never tell a honeypot apart
            status = _as_ordinary(stage, task, data, results, later, earlier_payload, others, other_payloads, user_id in (flagged or ()))
        return SubmitResult(earlier_id, earlier_revision, True, status, stage.id)

    if gold_here:  # a honeypot: scored, never finalized
        assignment = session.get(Assignment, assignment_id)
        item = SimpleNamespace(id=item_id, data=data)
        scored = gold.submit_answer(session, assignment, item, stage, payload, idempotency_key, seconds_spent)
        status = _as_ordinary(stage, task, data, results, later, scored.payload, others, other_payloads, scored.flagged)
        return SubmitResult(scored.annotation_id, scored.revision, False, status, stage.id)
    if item_stage != stage.id or item_status not in (ItemStatus.active, ItemStatus.review):
        raise Conflict("This item has already left this stage; the annotation is no longer needed.")
    clean = task.validate_annotation(data, payload, stage.config, results)

    first_submit = assignment_status != AssignmentStatus.submitted
    new_status, new_stage, new_slots = item_status, item_stage, slots
    if assignment_status in _GIVEN_BACK:
        # The lease ran out or was given back; accept the work only if a slot is still free.
        if item_status != ItemStatus.active or slots <= 0:
            raise Conflict("Your lease on this item ran out and others have taken it; the work was not stored.")
        new_slots -= 1
    elif assignment_status == AssignmentStatus.submitted and item_status != ItemStatus.active:
        raise Conflict("This item is already waiting for review; it can no longer be changed here.")
    write = {**params, "revision": (last_revision or 0) + 1, "payload": json.dumps(clean), "seconds": seconds_spent,
             "assignment_status": transition(assignment_status, AssignmentEvent.submit)}

    outcomes = []
    final = None
    if first_submit:
        for suggestion_id, kind, model, model_version, suggested in shown or ():
            outcome = task.suggestion_outcome(kind, suggested, clean, data)
            if outcome is not None:
                outcomes.append({"id": suggestion_id, "kind": kind, "model": model, "model_version": model_version, "outcome": outcome})
        if others + 1 >= stage.required(sampled):
            # All annotations are in: consolidate them (in assignment order), or send the item to review.
            payloads = [p for _, p in sorted([*(other_payloads or ()), (assignment_id, clean)], key=lambda pair: pair[0])]
            outcome = task.consolidate(payloads, stage.config)
            if outcome.needs_review or outcome.final is None or _routes_to_review(session, stage, item_id, flagged):
                new_status = transition(new_status, ItemEvent.escalate)
            else:
                final = outcome.final
                new_status, new_stage, new_slots = _route(stage, data, results, later, final, outcome.discard, new_status, visible)
                write.update(final=json.dumps(final), discard=outcome.discard)
    changed = (new_status, new_stage, new_slots) != (item_status, item_stage, slots)
    write.update(outcomes=json.dumps(outcomes), item_status=new_status, item_stage=new_stage, slots=new_slots)
    annotation_id = session.execute(_write_statement(bool(outcomes), final is not None, changed), write).scalar_one()
    if new_stage != item_stage:
        queue.lower_floor(session, new_stage, item_id)  # the next stage's claims find it at once
    return SubmitResult(annotation_id, write["revision"], False, new_status, stage.id)


def _routes_to_review(session: Session, stage: _StageRow, item_id: int, flagged: list[int] | None) -> bool:
    """As gold.routes_to_review: the stage routes flagged annotators' work to review and one of the
    item's annotators is flagged (an audit event)."""
    if not gold.setting(stage, "gold_route_to_review") or not flagged:
        return False
    audit.record(session, "gold.routed_to_review", target=f"item:{item_id}", stage=stage.id, annotators=sorted(flagged))
    return True


def _as_ordinary(stage: _StageRow, task, data, results, later, clean, others: int, other_payloads, flagged: bool) -> str:
    """The item status a gold item's submit answers: what an ordinary item's submit of the same
    answer by this annotator would answer now, so that the response never marks a honeypot. Its
    answerers are taken in groups of the stage's overlap (a sample stage's items outside the sample
    need one): the answer that completes a group is consolidated with the group's others and routed
    as an ordinary item's would be, to review when the stage routes this annotator's work there.
    Later stages see the answer as the item's final, as they would see an ordinary one's."""
    required = stage.required(False)
    if (others + 1) % required:
        return ItemStatus.active
    payloads = [p for _, p in other_payloads or ()]
    outcome = task.consolidate([*payloads[max(0, len(payloads) - required + 1):], clean], stage.config)
    if outcome.needs_review or outcome.final is None or (flagged and gold.setting(stage, "gold_route_to_review")):
        return ItemStatus.review
    return _route(stage, data, results, later, outcome.final, outcome.discard, ItemStatus.active, lambda _: True)[0]


def _route(stage: _StageRow, data, results, later, final, discard: bool, status: str, visible) -> tuple[str, int, int]:
    """The item's (status, stage, slots) once its final record for `stage` is written (as pipeline.finalize)."""
    if discard:
        return transition(status, ItemEvent.discard), stage.id, 0
    if visible(stage.position):
        results = {**results, stage.workflow: final}
    stages = [_StageRow(sid, stage.project_id, None, workflow, config, overlap, size) for sid, workflow, config, overlap, size, _ in later or ()]
    sampled = {sid: s for sid, *_, s in later or ()}
    nxt = first_applying(stages, data, results)
    if nxt is not None:
        return transition(status, ItemEvent.advance), nxt.id, nxt.required(sampled[nxt.id])
    return transition(status, ItemEvent.finish), stage.id, 0


def give_back(session: Session, assignment_id: int, user_id: int, *, skip: bool) -> None:
    queue.give_back(session, assignment_id, user_id, AssignmentEvent.skip if skip else AssignmentEvent.release)


def save_draft(session: Session, assignment_id: int, user_id: int, payload: dict[str, Any]) -> None:
    assignment = session.get(Assignment, assignment_id)
    if assignment is None or assignment.annotator_id != user_id:
        raise NotFound(queue.NO_SUCH_ASSIGNMENT)
    if assignment.status != AssignmentStatus.active:
        raise Conflict(f"This assignment is {assignment.status}; the draft was not saved.")
    session.execute(
        pg_insert(Draft)
        .values(assignment_id=assignment_id, payload=payload)
        .on_conflict_do_update(index_elements=["assignment_id"], set_={"payload": payload, "updated_at": sa.func.now()})
    )


@dataclass
class Screen:
    """Everything an annotation screen shows, as plain data."""

    assignment: ScreenAssignment
    item: ScreenItem
    stage: ScreenStage
    draft: dict[str, Any] | None
    results: dict[str, dict[str, Any]]  # earlier stages' finals, by workflow name
    suggestions: dict[str, suggestions_service.SuggestionView]  # by kind
    previous: dict[str, Any] | None = None  # the annotator's last submitted payload, when the item came back
    returned: dict[str, Any] | None = None  # the reviewer's note when the item was sent back (comment, by, at)
    project_name: str = ""
    mine: int = 0  # the annotator's submitted items in the stage ("you did N")


_ASSIGNMENT_STAGE = sa.text("SELECT a.annotator_id, s.id, s.workflow FROM assignments a JOIN stages s ON s.id = a.stage_id WHERE a.id = :assignment")


def assignment_stage(session: Session, assignment_id: int, user_id: int) -> tuple[int, str]:
    """The stage of the user's assignment, its id and workflow (what a submit or a skip needs first)."""
    row = session.execute(_ASSIGNMENT_STAGE, {"assignment": assignment_id}).first()
    if row is None or row[0] != user_id:
        raise NotFound(queue.NO_SUCH_ASSIGNMENT)
    return row[1], row[2]


@dataclass(frozen=True, slots=True)
class ScreenAssignment:
    id: int
    annotator_id: int
    status: AssignmentStatus
    lease_until: Any


@dataclass(frozen=True, slots=True)
class ScreenItem:
    id: int
    project_id: int
    external_id: str
    data: dict[str, Any]
    assets: dict[str, Any]
    group_id: str | None
    stage_id: int | None
    status: ItemStatus


@dataclass(frozen=True, slots=True)
class ScreenStage:
    id: int
    project_id: int
    position: int
    name: str
    workflow: str
    overlap: int
    guidelines: str
    config: dict[str, Any]


# Everything a screen shows, in one statement and as plain rows (no ORM object: loading three and
# then reading the draft, the finals, the suggestions and the header in four more statements was
# about a quarter of the app's time on a screen, bench/cycle_bench.py --profile).
_SCREEN = sa.text(
    f"""
    SELECT a.annotator_id, a.status, a.lease_until,
           i.id, i.project_id, i.external_id, i.data, i.assets, i.group_id, i.stage_id, i.status,
           s.id, s.project_id, s.position, s.name, s.workflow, s.overlap, s.guidelines, s.config,
           p.name,
           (SELECT payload FROM drafts WHERE assignment_id = a.id),
           (SELECT payload FROM annotations WHERE assignment_id = a.id ORDER BY revision DESC LIMIT 1),
           COALESCE((SELECT submitted FROM annotator_counts WHERE stage_id = s.id AND annotator_id = :user), 0),
           {_RESULTS_JSON},
           {_SUGGESTIONS_JSON.format(stage="s.id")},
           {queue.PLAN_ONCE}
    FROM assignments a JOIN items i ON i.id = a.item_id JOIN stages s ON s.id = a.stage_id
    JOIN projects p ON p.id = s.project_id
    WHERE a.id = :assignment
    """
)


def open_assignment(session: Session, assignment_id: int, user_id: int) -> Screen:
    """The screen of the user's assignment, in one statement: the assignment, its item and stage, the
    project's name, the draft, the user's newest answer, "you did N", the earlier finals and the
    suggestions."""
    row = session.execute(_SCREEN, {"assignment": assignment_id, "user": user_id}).first()
    if row is None or row[0] != user_id:
        raise NotFound(queue.NO_SUCH_ASSIGNMENT)
    assignment = ScreenAssignment(assignment_id, row[0], AssignmentStatus(row[1]), row[2])
    item = ScreenItem(*row[3:10], ItemStatus(row[10]))
    stage = ScreenStage(*row[11:19])
    project_name, draft, previous, mine, results, suggested = row[19:25]
    returned = None
    if assignment.status not in (AssignmentStatus.active, AssignmentStatus.returned, AssignmentStatus.submitted):
        previous = None
    elif previous is not None and assignment.status != AssignmentStatus.submitted:
        returned = sent_back_note(session, item.id, stage.id)
    suggestions = {s["kind"]: suggestions_service.SuggestionView(**s) for s in suggested}
    return Screen(assignment, item, stage, draft, results, suggestions, previous, returned, project_name, mine)


def sent_back_note(session: Session, item_id: int, stage_id: int) -> dict[str, Any] | None:
    """The reviewer's newest send-back note on the item in the stage: comment, who, when."""
    row = session.execute(
        sa.select(AuditEvent.detail, AuditEvent.at, User.username)
        .outerjoin(User, User.id == AuditEvent.actor_id)
        .where(
            AuditEvent.action == "item.sent_back",
            AuditEvent.target == f"item:{item_id}",
            AuditEvent.detail["stage"].as_integer() == stage_id,
        )
        .order_by(AuditEvent.id.desc())
        .limit(1)
    ).first()
    if row is None:
        return None
    detail, at, who = row
    return {"comment": detail.get("comment", ""), "by": who or "a reviewer", "at": at}


def user_stage_counts(session: Session, stage_id: int, user_id: int) -> int:
    """How many items the annotator submitted in the stage ("you did N"), from the maintained count."""
    return session.scalar(
        sa.select(AnnotatorCount.submitted).where(AnnotatorCount.stage_id == stage_id, AnnotatorCount.annotator_id == user_id)
    ) or 0
