"""Annotating: claim for a user, open an assignment's screen data, submit, skip (autosave: `drafts`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app import gate, queue
from app.bias import arms, probes
from app.datasets import get_workflow
from app.datasets.workflow import ItemContext
from app.decision import Decision, decide
from app.errors import Conflict, NotFound
from app.lifecycle import AssignmentEvent, AssignmentStatus, ItemStatus, transition
from app.models import AnnotatorCount, Assignment, Stage
from app.services.annotation import suggestions as suggestions_service
from app.services.annotation.notes import sent_back_note
from app.services.annotation.submit_statements import SubmitRead, announce_final, read_for_submit, write_statement
from app.services.projects.projects import get_stage
from app.services.quality import exposure, gold
from app.services.users import audit
from app.services.users.workspaces import member_of_stage, member_sql

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
# item, its earlier finals and the newest suggestion of each kind, never decoded into Python objects
# and encoded again on the hottest route. A fresh claim computes it in its own statement (the queue's
# pick takes this expression, `i` being the picked item); Python puts the lease in front.
# An item's earlier finals as screens and the API show them: the newest of each workflow's, without
# a gold item's own final at its gold stage or after (it is the truth). The item's finals are fenced
# (OFFSET 0) for the reason given at submit_statements.LOCK_FOR_SUBMIT.
_RESULTS_JSON = """COALESCE((
            SELECT jsonb_object_agg(r.workflow, r.payload) FROM (
                SELECT DISTINCT ON (s.workflow) s.workflow, ir.payload
                FROM (SELECT id, stage_id, payload FROM item_results WHERE item_id = i.id OFFSET 0) ir
                JOIN stages s ON s.id = ir.stage_id
                WHERE NOT EXISTS (SELECT 1 FROM gold_items gi JOIN stages gs ON gs.id = gi.stage_id
                                  WHERE gi.item_id = i.id AND gs.position <= s.position)
                ORDER BY s.workflow, ir.id DESC) r), '{}'::jsonb)"""
# The newest suggestion of each kind for the item `i` in the stage {stage}.
_SUGGESTIONS_JSON = """COALESCE((
            SELECT json_agg(json_build_object('id', g.id, 'kind', g.kind, 'model', g.model,
                                              'model_version', g.model_version, 'payload', {payload}, 'score', g.score)
                            ORDER BY g.kind)
            FROM (SELECT DISTINCT ON (kind) * FROM suggestions
                  WHERE item_id = i.id AND stage_id = {stage} ORDER BY kind, created_at DESC, id DESC) g), '[]'::json)"""


def _item_answer(assignment: str, payload: str = "g.payload") -> str:
    """No suggestion in the stage's control arm (app.bias.arms); the queue's pick has the new assignment as `lease`.
    `payload`: a suggestion's payload as shown (a probe's planted one in place of its kind's)."""
    hidden = f"(SELECT {arms.hidden_sql('st.config', assignment)} FROM stages st WHERE st.id = :stage)"
    return f"""json_build_object(
        'data', i.data, 'assets', i.assets,
        'results', {_RESULTS_JSON},
        'suggestions', CASE WHEN {hidden} THEN '[]'::json ELSE {_SUGGESTIONS_JSON.format(stage=":stage", payload=payload)} END
    )::text"""


_ITEM_ANSWER = _item_answer("lease.id")
# A probe's claim, written by the same SQL as every other claim (nothing in its bytes tells it apart):
# `:planted` maps the probe's kind to its planted payload.
_PROBE_JSON = sa.text(
    f"""SELECT {_item_answer(":assignment", "COALESCE(CAST(:planted AS jsonb) -> g.kind, g.payload)")}
    FROM items i WHERE i.id = :item"""
)
# A claim the pick did not answer (a resumed lease, a gold item: with [truth, config, workflow, data, whether
# it is a quiz item] for its probe).
_CLAIM_JSON = sa.text(
    f"""SELECT {_item_answer(":assignment")},
               CASE WHEN i.status = '{ItemStatus.gold}' THEN (
                   SELECT json_build_array(g.answer, s.config, s.workflow, i.data,
                                           {gate.taking_quiz_sql("s.config", "s.id", "(SELECT annotator_id FROM assignments WHERE id = :assignment)")})
                   FROM gold_items g JOIN stages s ON s.id = g.stage_id WHERE g.item_id = i.id AND g.stage_id = :stage) END
    FROM items i WHERE i.id = :item"""
)


def claim_json(session: Session, claimed: queue.Claim, stage_id: int) -> bytes:
    """The claimed assignment as the API answers it (JSON text)."""
    item = claimed.answer
    if item is None:
        params = {"item": claimed.item_id, "stage": stage_id, "assignment": claimed.assignment_id}
        item, probe = session.execute(_CLAIM_JSON, params).one()
        planted = exposure.claim_planted(item, claimed.assignment_id, *probe) if probe is not None else None
        if planted is not None:
            item = session.scalar(_PROBE_JSON, {**params, "planted": json.dumps(planted)})
    lease = claimed.lease_until.isoformat()
    return f'{{"assignment_id": {claimed.assignment_id}, "item_id": {claimed.item_id}, "lease_until": "{lease}", {item[1:]}'.encode()


def upcoming_images(session: Session, stage_id: int, user_id: int, current_item: int) -> list[str]:
    """The image hashes of the item the annotator will most likely claim after `current_item`
    (a guess: nothing is leased), each once, in the item's order."""
    upcoming = queue.upcoming(session, stage_id, user_id, current_item)
    return list(dict.fromkeys(sha for _, assets in upcoming for sha in (assets or {}).values()))


def submit(session: Session, assignment_id: int, user_id: int, payload: dict[str, Any], idempotency_key: str, *,
           seconds_spent: float | None = None, active_seconds: float | None = None, form: bool = False) -> SubmitResult:
    """Store one annotation; the same (user, idempotency key) always yields the same annotation, however
    often and concurrently it is posted. With `form`, `payload` is what an annotation page posted, turned
    into the answer by the stage's workflow once the assignment is locked (the page learns it in the same trip).
    `active_seconds`: the screen's time with focus and input (app.bias.arms.active_seconds)."""
    read, params = read_for_submit(session, assignment_id, user_id, idempotency_key)
    lock, workflow = read.lock, get_workflow(read.lock["workflow"])
    payload = workflow.form_to_payload(payload) if form else payload
    if read.ctx["earlier"] is not None:
        return _replay(read, workflow, payload, assignment_id, user_id)
    if lock["item_status"] == ItemStatus.gold and lock["item_stage"] == lock["stage_id"]:
        return _score_gold(session, read, workflow, payload, assignment_id, idempotency_key,
                           (seconds_spent, *read.answer_times(seconds_spent, active_seconds)))
    decision = Decision(lock["item_status"], lock["item_stage"], _slots_for(lock))
    clean = workflow.validate_annotation(read.item_context, payload)
    outcomes = []
    arm = arms.arm(lock["config"], assignment_id)  # an ordinary item's: the drafts shown or hidden
    if lock["assignment_status"] != AssignmentStatus.submitted:  # a first submit, not a revision
        outcomes = _outcomes(workflow, read.ctx["shown"], clean, read.item_context, shown=arm != arms.CONTROL)
        answers = read.answers(assignment_id, clean)
        decision = decide(read.situation(answers, read.ctx["flagged"] or (), status=decision.status, slots=decision.slots))
        if decision.routed:  # the flagged annotators' work waits for a reviewer
            audit.record(session, "gold.routed_to_review", target=f"item:{lock['item_id']}", stage=lock["stage_id"],
                         annotators=list(decision.routed))
    write = {**params, "revision": (read.ctx["last_revision"] or 0) + 1, "payload": json.dumps(clean), "seconds": seconds_spent,
             "assignment_status": transition(lock["assignment_status"], AssignmentEvent.submit), "outcomes": json.dumps(outcomes),
             "final": json.dumps(decision.final), "discard": decision.discard, "item_status": decision.status,
             "item_stage": decision.stage_id, "slots": decision.slots, "arm": arm}
    write["wall"], write["active"] = read.answer_times(seconds_spent, active_seconds)
    changed = (decision.status, decision.stage_id, decision.slots) != (lock["item_status"], lock["item_stage"], lock["slots"])
    annotation_id = session.execute(write_statement(bool(outcomes), decision.final is not None, changed), write).scalar_one()
    announce_final(session, read, decision)
    if decision.stage_id != lock["item_stage"]:
        queue.lower_floor(session, decision.stage_id, lock["item_id"])  # the next stage's claims find it at once
    return SubmitResult(annotation_id, write["revision"], False, decision.status, lock["stage_id"])


def _slots_for(lock: Mapping[str, Any]) -> int:
    """The item's slots once this answer takes its place; a Conflict when the answer is no longer wanted."""
    status, slots = lock["item_status"], lock["slots"]
    if lock["item_stage"] != lock["stage_id"] or status not in (ItemStatus.active, ItemStatus.review):
        raise Conflict("This item has already left this stage; the annotation is no longer needed.")
    if lock["assignment_status"] in _GIVEN_BACK:
        # The lease ran out or was given back; accept the work only if a slot is still free.
        if status != ItemStatus.active or slots <= 0:
            raise Conflict("Your lease on this item ran out and others have taken it; the work was not stored.")
        return slots - 1
    if lock["assignment_status"] == AssignmentStatus.submitted and status != ItemStatus.active:
        raise Conflict("This item is already waiting for review; it can no longer be changed here.")
    return slots


def _outcomes(workflow, drafts, clean: dict[str, Any], ctx: ItemContext, *, shown: bool) -> list[dict[str, Any]]:
    """How the answer treated each of the item's suggestions (those the workflow judges), with the
    workflow's distance from each; `shown` False when the control arm hid them (the answer was made without them)."""
    outcomes = []
    for s in drafts or ():
        outcome = workflow.suggestion_outcome(ctx, s["kind"], s["payload"], clean)
        if outcome is not None:
            outcomes.append({"id": s["id"], "kind": s["kind"], "model": s["model"], "model_version": s["model_version"], "outcome": outcome,
                             "shown": shown, "edit_distance": workflow.suggestion_distance(ctx, s["kind"], s["payload"], clean)})
    return outcomes


def _replay(read: SubmitRead, workflow, payload: dict[str, Any], assignment_id: int, user_id: int) -> SubmitResult:
    """A retry of a stored submit answers what the first post answered."""
    earlier = read.ctx["earlier"]
    if earlier["assignment_id"] != assignment_id:
        raise Conflict("This idempotency key was already used for another assignment.")
    # A retry repeats the answer; another answer under the same key (a page shown again after its
    # submit) must never be dropped silently: it is refused with the way on.
    lock = read.lock
    if payload != earlier["payload"] and workflow.validate_annotation(read.item_context, payload) != earlier["payload"]:
        raise AlreadySubmitted(
            f"You already submitted this item with another answer (revision {earlier['revision']}); "
            "nothing was changed. Submit again to store this answer as a new revision."
        )
    status = lock["item_status"]
    if status == ItemStatus.gold:  # never tell a honeypot apart
        status = _as_ordinary(read, earlier["payload"], user_id in (read.ctx["flagged"] or ()))
    return SubmitResult(earlier["id"], earlier["revision"], True, status, lock["stage_id"])


def _score_gold(session: Session, read: SubmitRead, workflow, payload, assignment_id: int, key: str, seconds: tuple) -> SubmitResult:
    """A honeypot's answer: scored against the truth, never finalized. `seconds`: spent, wall and active (as stored)."""
    lock = read.lock
    item = SimpleNamespace(id=lock["item_id"], data=lock["data"])
    stage = session.get(Stage, lock["stage_id"])
    spent, wall, active = seconds
    scored = gold.submit_answer(session, session.get(Assignment, assignment_id), item, stage, payload, key, spent,
                                active_seconds=active, wall_seconds=wall)
    return SubmitResult(scored.annotation_id, scored.revision, False, _as_ordinary(read, scored.payload, scored.flagged), lock["stage_id"])


def _as_ordinary(read: SubmitRead, clean: dict[str, Any], flagged: bool) -> str:
    """The item status a gold item's submit answers: what an ordinary item's submit of the same
    answer by this annotator would answer now, so that the response never marks a honeypot. Its
    answerers are taken in groups of the stage's overlap (a sample stage's items outside the sample
    need one): the answer that completes a group is decided with the group's others, to review when
    the stage routes this annotator's work there. Later stages see the answer as the item's final,
    as they would see an ordinary one's."""
    answers = [*(a["payload"] for a in read.ctx["others"] or ()), clean]
    group = answers[len(answers) - (len(answers) - 1) % replace(read.stage, sampled=False).required - 1:]
    flaggers = (read.lock["annotator_id"],) if flagged else ()
    return decide(read.situation(group, flaggers, status=ItemStatus.active, slots=0, ordinary=True)).status


def give_back(session: Session, assignment_id: int, user_id: int, *, skip: bool) -> None:
    queue.give_back(session, assignment_id, user_id, AssignmentEvent.skip if skip else AssignmentEvent.release)


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

    @property
    def item_context(self) -> ItemContext:
        """The item as the workflow's hooks read it."""
        return ItemContext(self.item.data, self.stage.config, self.results, self.item.assets, self.suggestions)


_ASSIGNMENT_STAGE = sa.text(f"SELECT a.annotator_id, s.id, s.workflow, {member_of_stage('s.id')} AS member"
                            " FROM assignments a JOIN stages s ON s.id = a.stage_id WHERE a.id = :assignment")


def assignment_stage(session: Session, assignment_id: int, user_id: int) -> tuple[int, str]:
    """The stage of the user's assignment, its id and workflow (what a submit or a skip needs first)."""
    row = session.execute(_ASSIGNMENT_STAGE, {"assignment": assignment_id, "user": user_id}).mappings().first()
    if row is None or row["annotator_id"] != user_id or not row["member"]:
        raise NotFound(queue.NO_SUCH_ASSIGNMENT)
    return row["id"], row["workflow"]


@dataclass(frozen=True, slots=True)
class ScreenAssignment:
    id: int
    annotator_id: int
    status: AssignmentStatus
    lease_until: Any
    draft_active: float | None = None  # the active seconds its drafts gathered (the screen counts on from them)


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
           i.id AS item_id, i.project_id AS item_project_id, i.external_id AS item_external_id, i.data AS item_data,
           i.assets AS item_assets, i.group_id AS item_group_id, i.stage_id AS item_stage_id, i.status AS item_status,
           s.id AS stage_id, s.project_id AS stage_project_id, s.position AS stage_position, s.name AS stage_name,
           s.workflow AS stage_workflow, s.overlap AS stage_overlap, s.guidelines AS stage_guidelines, s.config AS stage_config,
           p.name AS project_name,
           (SELECT payload FROM drafts WHERE assignment_id = a.id) AS draft,
           (SELECT active_seconds FROM drafts WHERE assignment_id = a.id) AS draft_active,
           (SELECT payload FROM annotations WHERE assignment_id = a.id ORDER BY revision DESC LIMIT 1) AS previous,
           COALESCE((SELECT submitted FROM annotator_counts WHERE stage_id = s.id AND annotator_id = :user), 0) AS mine,
           {_RESULTS_JSON} AS results,
           {_SUGGESTIONS_JSON.format(stage="s.id", payload="g.payload")} AS suggested,
           CASE WHEN i.status = '{ItemStatus.gold}' THEN (SELECT answer FROM gold_items WHERE item_id = i.id AND stage_id = s.id) END AS truth,
           CASE WHEN i.status = '{ItemStatus.gold}' THEN {gate.taking_quiz_sql("s.config", "s.id", "a.annotator_id")} ELSE false END AS quiz_item,
           {queue.PLAN_ONCE}, {member_sql("p.id", "p.workspace_id")} AS member
    FROM assignments a JOIN items i ON i.id = a.item_id JOIN stages s ON s.id = a.stage_id
    JOIN projects p ON p.id = s.project_id AND p.archived_at IS NULL
    WHERE a.id = :assignment
    """
)


def open_assignment(session: Session, assignment_id: int, user_id: int) -> Screen:
    """The screen of the user's assignment, in one statement: the assignment, its item and stage, the
    project's name, the draft, the user's newest answer, "you did N", the earlier finals and the
    suggestions."""
    row = session.execute(_SCREEN, {"assignment": assignment_id, "user": user_id}).mappings().first()
    if row is None or row["annotator_id"] != user_id or not row["member"]:
        raise NotFound(queue.NO_SUCH_ASSIGNMENT)
    assignment = ScreenAssignment(assignment_id, row["annotator_id"], AssignmentStatus(row["status"]), row["lease_until"],
                                  row["draft_active"])
    item = ScreenItem(**{**_prefixed(row, "item_", ScreenItem), "status": ItemStatus(row["item_status"])})
    stage = ScreenStage(**_prefixed(row, "stage_", ScreenStage))
    previous = row["previous"]
    returned = None
    if assignment.status not in (AssignmentStatus.active, AssignmentStatus.returned, AssignmentStatus.submitted):
        previous = None
    elif previous is not None and assignment.status != AssignmentStatus.submitted:
        returned = sent_back_note(session, item.id, stage.id)
    suggestions = {s["kind"]: suggestions_service.SuggestionView(**s) for s in row["suggested"]}
    seen = exposure.of(stage.config, assignment_id, stage.workflow, row["truth"], item.data, suggestions, quiz=row["quiz_item"])
    suggestions = probes.shown(seen, suggestions, lambda s, p: replace(s, payload=p))  # none in the control arm
    return Screen(assignment, item, stage, row["draft"], row["results"], suggestions, previous, returned, row["project_name"], row["mine"])


def _prefixed(row: Mapping[str, Any], prefix: str, cls) -> dict[str, Any]:
    """The named row's columns `prefix` + each field of the dataclass `cls`, by field."""
    return {f.name: row[prefix + f.name] for f in dataclasses.fields(cls)}


def user_stage_counts(session: Session, stage_id: int, user_id: int) -> int:
    """How many items the annotator submitted in the stage ("you did N"), from the maintained count."""
    return session.scalar(
        sa.select(AnnotatorCount.submitted).where(AnnotatorCount.stage_id == stage_id, AnnotatorCount.annotator_id == user_id)
    ) or 0
