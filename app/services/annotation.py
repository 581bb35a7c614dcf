"""Annotating: claim for a user, open an assignment's screen data, autosave, submit, skip."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app import queue
from app.datasets import get_task
from app.errors import Conflict, Forbidden, Invalid, NotFound
from app.lifecycle import AssignmentEvent, AssignmentStatus, ItemStatus, transition
from app.models import Annotation, AnnotatorCount, Assignment, AuditEvent, Draft, Item, Project, Stage, User
from app.services import gold, sampling
from app.services import suggestions as suggestions_service
from app.services.pipeline import complete_stage, results_by_stage
from app.services.projects import get_stage

MAX_KEY_LENGTH = 100


class AlreadySubmitted(Conflict):
    """Another answer posted under the key of an earlier submit (a revision needs a new key)."""


@dataclass
class SubmitResult:
    annotation_id: int
    revision: int
    replayed: bool
    item_status: str


def claim(session: Session, stage_id: int, user_id: int, *, resume: bool = False) -> queue.Claim | None:
    """The next item for the annotator in the stage (a new lease); None when nothing is left for them.
    With `resume`, their live lease in the stage if they hold one (a reopened tab or a client that
    lost the answer gets it back)."""
    claimed = queue.claim_next(session, stage_id, user_id, resume=resume)
    if claimed is None:
        get_stage(session, stage_id)  # 404 for an unknown stage, looked up only when nothing was found
    return claimed


def resume_or_claim(session: Session, stage_id: int, user_id: int) -> queue.Claim | None:
    """The annotator's live lease in the stage, or else the next item; None when nothing is left for them."""
    return claim(session, stage_id, user_id, resume=True)


# The API's answer to a claim (app.web.schemas.ClaimOut), written by PostgreSQL as JSON text in one
# query: the item, the earlier stages' final records (the newest per workflow, as results_by_stage)
# and the newest suggestion of each kind (as suggestions.for_item). Nothing is decoded into Python
# objects and encoded again on the hottest route.
_CLAIM_JSON = sa.text(
    """
    SELECT json_build_object(
        'assignment_id', CAST(:assignment AS bigint), 'item_id', i.id, 'lease_until', CAST(:lease_until AS text),
        'data', i.data, 'assets', i.assets,
        'results', COALESCE((
            SELECT jsonb_object_agg(r.workflow, r.payload) FROM (
                SELECT DISTINCT ON (s.workflow) s.workflow, ir.payload
                FROM item_results ir JOIN stages s ON s.id = ir.stage_id
                WHERE ir.item_id = i.id ORDER BY s.workflow, ir.id DESC) r), '{}'::jsonb),
        'suggestions', COALESCE((
            SELECT json_agg(json_build_object('id', g.id, 'kind', g.kind, 'model', g.model,
                                              'model_version', g.model_version, 'payload', g.payload, 'score', g.score)
                            ORDER BY g.kind)
            FROM (SELECT DISTINCT ON (kind) * FROM suggestions
                  WHERE item_id = i.id AND stage_id = :stage ORDER BY kind, created_at DESC, id DESC) g), '[]'::json)
    )::text
    FROM items i JOIN assignments a ON a.item_id = i.id WHERE a.id = :assignment
    """
)


def claim_json(session: Session, claimed: queue.Claim, stage_id: int) -> bytes:
    """The claimed assignment as the API answers it (JSON text)."""
    body = session.execute(
        _CLAIM_JSON, {"assignment": claimed.assignment_id, "lease_until": claimed.lease_until.isoformat(), "stage": stage_id}
    ).scalar_one()
    return body.encode()


def upcoming_images(session: Session, stage_id: int, user_id: int, current_item: int) -> list[str]:
    """The image hashes of the item the annotator will most likely claim after `current_item`
    (a guess: nothing is leased), each once, in the item's order."""
    ids = queue.upcoming(session, stage_id, user_id, current_item)
    assets = session.scalars(sa.select(Item.assets).where(Item.id.in_(ids)).order_by(Item.id))
    return list(dict.fromkeys(sha for data in assets for sha in (data or {}).values()))


def submit(
    session: Session,
    assignment_id: int,
    user_id: int,
    payload: dict[str, Any],
    idempotency_key: str,
    *,
    seconds_spent: float | None = None,
) -> SubmitResult:
    """Store one annotation. The same (user, idempotency key) always yields the same annotation,
    however often and however concurrently it is posted."""
    if not idempotency_key or len(idempotency_key) > MAX_KEY_LENGTH:
        raise Invalid(f"An idempotency key of 1 to {MAX_KEY_LENGTH} characters is required.")
    # The row lock on the assignment serializes concurrent posts of the same submit.
    assignment, item, stage = queue.lock_for_submit(session, assignment_id, user_id)
    earlier = session.scalar(
        sa.select(Annotation).where(Annotation.annotator_id == user_id, Annotation.idempotency_key == idempotency_key)
    )
    if earlier is not None:
        if earlier.assignment_id != assignment.id:
            raise Conflict("This idempotency key was already used for another assignment.")
        if payload != earlier.payload:
            # A retry repeats the answer; another answer under the same key (a page shown again
            # after its submit) must never be dropped silently: it is refused with the way on.
            clean = get_task(stage.workflow).validate_annotation(item.data, payload, stage.config, results_by_stage(session, item.id))
            if clean != earlier.payload:
                raise AlreadySubmitted(
                    f"You already submitted this item with another answer (revision {earlier.revision}); "
                    "nothing was changed. Submit again to store this answer as a new revision."
                )
        status = item.status
        if status == ItemStatus.gold:  # never tell a honeypot apart
            status = gold.shown_status(session, stage)
        return SubmitResult(earlier.id, earlier.revision, True, status)

    if item.status == ItemStatus.gold and item.stage_id == stage.id:  # a honeypot: scored, never finalized
        annotation_id, revision = gold.submit_answer(session, assignment, item, stage, payload, idempotency_key, seconds_spent)
        return SubmitResult(annotation_id, revision, False, gold.shown_status(session, stage))
    if item.stage_id != stage.id or item.status not in (ItemStatus.active, ItemStatus.review):
        raise Conflict("This item has already left this stage; the annotation is no longer needed.")
    clean = get_task(stage.workflow).validate_annotation(
        item.data, payload, stage.config, results_by_stage(session, item.id)
    )

    first_submit = assignment.status != AssignmentStatus.submitted
    if assignment.status in (AssignmentStatus.expired, AssignmentStatus.released, AssignmentStatus.skipped):
        # The lease ran out or was given back; accept the work only if a slot is still free.
        if item.status != ItemStatus.active or item.slots_left <= 0:
            raise Conflict("Your lease on this item ran out and others have taken it; the work was not stored.")
        item.slots_left -= 1
    elif assignment.status == AssignmentStatus.submitted and item.status != ItemStatus.active:
        raise Conflict("This item is already waiting for review; it can no longer be changed here.")

    revision = (
        session.scalar(
            sa.select(sa.func.max(Annotation.revision)).where(Annotation.assignment_id == assignment.id)
        )
        or 0
    ) + 1
    annotation = Annotation(
        assignment_id=assignment.id,
        item_id=item.id,
        stage_id=stage.id,
        annotator_id=user_id,
        revision=revision,
        idempotency_key=idempotency_key,
        payload=clean,
        seconds_spent=seconds_spent,
    )
    session.add(annotation)
    assignment.status = transition(assignment.status, AssignmentEvent.submit)
    assignment.submitted_at = sa.func.now()
    session.execute(sa.delete(Draft).where(Draft.assignment_id == assignment.id))
    session.flush()

    if first_submit:
        workflow = get_task(stage.workflow)
        shown = suggestions_service.for_item(session, item.id, stage.id)
        if shown:
            suggestions_service.record_outcomes(session, annotation.id, stage.id, shown, clean, item.data, workflow)
        submitted = session.scalar(
            sa.select(sa.func.count())
            .select_from(Assignment)
            .where(Assignment.item_id == item.id, Assignment.stage_id == stage.id, Assignment.status == AssignmentStatus.submitted)
        )
        if submitted >= sampling.required(session, stage, item.id):
            complete_stage(session, item, stage)
    return SubmitResult(annotation.id, revision, False, item.status)


def give_back(session: Session, assignment_id: int, user_id: int, *, skip: bool) -> None:
    queue.give_back(session, assignment_id, user_id, AssignmentEvent.skip if skip else AssignmentEvent.release)


def save_draft(session: Session, assignment_id: int, user_id: int, payload: dict[str, Any]) -> None:
    assignment = session.get(Assignment, assignment_id)
    if assignment is None or assignment.annotator_id != user_id:
        raise NotFound("No such assignment for you.")
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

    assignment: Assignment
    item: Item
    stage: Stage
    draft: dict[str, Any] | None
    results: dict[str, dict[str, Any]]  # earlier stages' finals, by workflow name
    suggestions: dict[str, suggestions_service.SuggestionView]  # by kind
    previous: dict[str, Any] | None = None  # the annotator's last submitted payload, when the item came back
    returned: dict[str, Any] | None = None  # the reviewer's note when the item was sent back (comment, by, at)


def assignment_stage(session: Session, assignment_id: int, user_id: int) -> Stage:
    """The stage of the user's assignment, in one query (what a submit or a skip needs first)."""
    row = session.execute(
        sa.select(Assignment.annotator_id, Stage).join(Stage, Stage.id == Assignment.stage_id).where(Assignment.id == assignment_id)
    ).first()
    if row is None:
        raise NotFound("No such assignment.")
    if row[0] != user_id:
        raise Forbidden("This item is assigned to someone else.")
    return row[1]


def open_assignment(session: Session, assignment_id: int, user_id: int) -> Screen:
    """The screen of the user's assignment: the assignment with its item and stage in one query, its
    draft and the user's newest answer in another, then the earlier finals and the suggestions."""
    row = session.execute(
        sa.select(Assignment, Item, Stage)
        .join(Item, Item.id == Assignment.item_id)
        .join(Stage, Stage.id == Assignment.stage_id)
        .where(Assignment.id == assignment_id)
    ).first()
    if row is None:
        raise NotFound("No such assignment.")
    assignment, item, stage = row
    if assignment.annotator_id != user_id:
        raise Forbidden("This item is assigned to someone else.")
    draft, previous = session.execute(sa.select(
        sa.select(Draft.payload).where(Draft.assignment_id == assignment.id).scalar_subquery(),
        sa.select(Annotation.payload).where(Annotation.assignment_id == assignment.id)
        .order_by(Annotation.revision.desc()).limit(1).scalar_subquery(),
    )).one()
    returned = None
    if assignment.status not in (AssignmentStatus.active, AssignmentStatus.returned, AssignmentStatus.submitted):
        previous = None
    elif previous is not None and assignment.status != AssignmentStatus.submitted:
        returned = sent_back_note(session, item.id, stage.id)
    return Screen(
        assignment,
        item,
        stage,
        draft,
        results_by_stage(session, item.id),
        suggestions_service.for_item(session, item.id, stage.id),
        previous,
        returned,
    )


def screen_header(session: Session, project_id: int, stage_id: int, user_id: int) -> tuple[int, str, int]:
    """What a screen's header names, in one query: the project's id and name, and how many items
    the annotator submitted in the stage ("you did N", from the maintained count)."""
    row = session.execute(
        sa.select(Project.id, Project.name, sa.func.coalesce(AnnotatorCount.submitted, 0))
        .select_from(Project)
        .outerjoin(AnnotatorCount, (AnnotatorCount.stage_id == stage_id) & (AnnotatorCount.annotator_id == user_id))
        .where(Project.id == project_id)
    ).one()
    return row[0], row[1], row[2]


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
