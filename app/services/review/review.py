"""Review: the queue of items whose annotations disagree, and their adjudication into a final record.

An item waits for review when its stage's consolidation found no majority. A reviewer sees every
annotator's latest annotation side by side, then accepts one of them, writes the final version
(in the workflow's own editor, validated like any annotation), or sends the item back to its
annotators with a comment. Accepting or editing appends the final record (source "review") and
moves the item on through the pipeline exactly as an automatic consolidation would move it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.datasets import get_workflow
from app.datasets.workflow import ItemContext, StageConfig
from app.errors import Conflict, Forbidden, Invalid, NotFound
from app.lifecycle import AssignmentEvent, AssignmentStatus, ItemEvent, ItemStatus, transition
from app.models import (
    Annotation,
    Asset,
    Assignment,
    AuditEvent,
    Item,
    ItemResult,
    Stage,
    Suggestion,
    User,
)
from app.services.annotation.notes import sent_back_note
from app.services.quality import gold
from app.services.users.audit import record
from app.services.annotation.pipeline import (
    Submitted,
    finalize,
    results_by_stage,
    submitted_annotations,
)
from app.services.projects.projects import get_stage


@dataclass
class ReviewRow:
    item_id: int
    external_id: str
    annotations: int
    agreement: float  # mean pairwise agreement by the workflow's comparison
    reason: str | None = None  # gold.ROUTED when a flagged annotator's work was routed here
    accuracy: float | None = None  # then: the lowest gold accuracy among its flagged annotators

    @property
    def doubt(self) -> float:
        """The queue's order, lowest first: the agreement, or a routed item's accuracy when lower
        (a lone answer agrees with itself; its annotator's accuracy says how far to trust it)."""
        return self.agreement if self.accuracy is None else min(self.agreement, self.accuracy)


def _own_work(stage: Stage, reviewer_id: int):
    """Whether the reviewer annotated the item in this stage, as a condition on Item (the items a stage
    that forbids self-review keeps from them)."""
    return sa.exists().where(Annotation.item_id == Item.id, Annotation.stage_id == stage.id, Annotation.annotator_id == reviewer_id)


def own_work_barred(session: Session, stage: Stage, item_id: int, reviewer_id: int) -> bool:
    """Whether the stage keeps this reviewer from deciding the item: they annotated it, and the stage
    does not allow self-review (a reviewer does not settle a disagreement they are part of)."""
    if not StageConfig.read(stage.config, "forbid_self_review"):
        return False
    return bool(session.scalar(sa.select(_own_work(stage, reviewer_id)).select_from(Item).where(Item.id == item_id)))


def _refuse_own_work(session: Session, stage: Stage, item_id: int, reviewer_id: int) -> None:
    if own_work_barred(session, stage, item_id, reviewer_id):
        raise Forbidden("You annotated this item in this stage: another reviewer decides it (stage setting forbid_self_review).")


def review_queue(session: Session, stage_id: int, limit: int = 500, reviewer_id: int | None = None) -> list[ReviewRow]:
    """Items of the stage waiting for review, the ones annotators disagree on most, or whose flagged
    annotator is least accurate, first; with `reviewer_id`, only those that reviewer may decide."""
    stage = get_stage(session, stage_id)
    workflow = get_workflow(stage.workflow)
    query = sa.select(Item.id, Item.external_id).where(Item.stage_id == stage_id, Item.status == ItemStatus.review)
    if reviewer_id is not None and StageConfig.read(stage.config, "forbid_self_review"):
        query = query.where(~_own_work(stage, reviewer_id))
    items = session.execute(query.order_by(Item.id).limit(limit)).all()
    rows = []
    for item_id, external_id in items:
        payloads = [s.payload for s in submitted_annotations(session, item_id, stage_id)]
        pairs = [workflow.compare(a, b) for a, b in itertools.combinations(payloads, 2)]
        rows.append(ReviewRow(item_id, external_id, len(payloads), sum(pairs) / len(pairs) if pairs else 1.0))
    routed = gold.routed_accuracy(session, stage, [r.item_id for r in rows])
    for r in rows:
        if r.item_id in routed:
            r.reason, r.accuracy = gold.ROUTED, routed[r.item_id]
    rows.sort(key=lambda r: (r.doubt, r.item_id))
    return rows


@dataclass
class ReviewScreen:
    item: Item
    stage: Stage
    annotations: list[Submitted]
    differing: set[str]  # payload keys on which the annotations differ
    results: dict[str, dict[str, Any]]
    suggestions: dict[str, Any] = field(default_factory=dict)  # by kind, for the editor (filled on demand)
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)  # asset pointer -> stored image's (width, height)

    @property
    def item_context(self) -> ItemContext:
        """The item as the workflow's hooks read it (the editor's suggestions, once filled)."""
        return ItemContext(self.item.data, self.stage.config, self.results, self.item.assets, self.suggestions, self.sizes)


def open_review(session: Session, stage_id: int, item_id: int) -> ReviewScreen:
    stage = get_stage(session, stage_id)
    item = session.get(Item, item_id)
    if item is None or item.stage_id != stage_id:
        raise NotFound("No such item in this stage.")
    annotations = submitted_annotations(session, item_id, stage_id)
    keys = {k for a in annotations for k in a.payload}
    differing = {k for k in keys if len({repr(a.payload.get(k)) for a in annotations}) > 1}
    return ReviewScreen(item, stage, annotations, differing, results_by_stage(session, item_id), sizes=image_sizes(session, item))


def image_sizes(session: Session, item: Item) -> dict[str, tuple[int, int]]:
    """The (width, height) of the item's stored images, by pointer (views draw boxes on them)."""
    shas = set((item.assets or {}).values())
    if not shas:
        return {}
    found = {sha: (w, h) for sha, w, h in session.execute(sa.select(Asset.sha256, Asset.width, Asset.height).where(Asset.sha256.in_(shas)))}
    return {pointer: found[sha] for pointer, sha in item.assets.items() if sha in found}


def _waiting_for_review(session: Session, stage_id: int, item_id: int, reviewer_id: int) -> tuple[Stage, Item]:
    """The stage and the item, locked, once it is sure the item waits for this reviewer's decision."""
    stage = get_stage(session, stage_id)
    item = session.scalar(sa.select(Item).where(Item.id == item_id).with_for_update())
    if item is None or item.stage_id != stage_id:
        raise NotFound("No such item in this stage.")
    if item.status != ItemStatus.review:
        raise Conflict("This item is no longer waiting for review; someone resolved it already.")
    _refuse_own_work(session, stage, item_id, reviewer_id)
    return stage, item


def resolve(
    session: Session,
    stage_id: int,
    item_id: int,
    reviewer_id: int,
    *,
    accept_annotation_id: int | None = None,
    payload: dict[str, Any] | None = None,
    comment: str = "",
) -> Item:
    """Finalize a reviewed item with one annotator's annotation or the reviewer's own version."""
    stage, item = _waiting_for_review(session, stage_id, item_id, reviewer_id)
    workflow = get_workflow(stage.workflow)
    if accept_annotation_id is not None:
        chosen = next((a for a in submitted_annotations(session, item_id, stage_id) if a.annotation_id == accept_annotation_id), None)
        if chosen is None:
            raise Invalid("That annotation is not one of this item's annotations in this stage.")
        final, how = chosen.payload, f"accepted annotation {accept_annotation_id}"
    elif payload is not None:
        final = workflow.validate_annotation(ItemContext(item.data, stage.config, results_by_stage(session, item_id)), payload)
        how = "edited"
    else:
        raise Invalid("Accept one annotation or give the final version.")
    finalize(session, item, stage, final, discard=workflow.is_discard(final), source="review", actor_id=reviewer_id)
    record(session, "item.review", actor_id=reviewer_id, target=f"item:{item_id}", stage=stage_id, how=how, comment=comment[:1000])
    return item


def send_back(session: Session, stage_id: int, item_id: int, reviewer_id: int, comment: str) -> Item:
    """Return a reviewed item to its annotators with the reviewer's comment.

    Each annotator's assignment becomes "returned": it comes first in their queue, their earlier
    annotation is filled in, the comment is shown, and their next submit is a new revision. When
    all of them have submitted again the stage consolidates as usual (and may ask for review
    again). An annotator who skips or lets the lease run out gives their place to someone else.
    """
    comment = comment.strip()
    if not comment:
        raise Invalid("Say what to change: the comment is what the annotators will see.")
    stage, item = _waiting_for_review(session, stage_id, item_id, reviewer_id)
    returned = session.execute(
        sa.update(Assignment)
        .where(Assignment.item_id == item_id, Assignment.stage_id == stage_id, Assignment.status == AssignmentStatus.submitted)
        .values(status=transition(AssignmentStatus.submitted, AssignmentEvent.send_back))
        .returning(Assignment.annotator_id)
    ).scalars().all()
    item.status = transition(item.status, ItemEvent.send_back)
    item.slots_left = 0  # the same annotators revise; nobody new takes the item
    record(
        session, "item.sent_back", actor_id=reviewer_id, target=f"item:{item_id}", stage=stage_id,
        comment=comment[:1000], annotators=len(returned),
    )
    return item


@dataclass
class SentBack:
    item_id: int
    external_id: str
    waiting: int  # annotators who have not resubmitted yet
    comment: str


def sent_back(session: Session, stage_id: int, limit: int = 500) -> list[SentBack]:
    """Items of the stage that a reviewer sent back and that still wait for their annotators."""
    rows = session.execute(
        sa.select(Item.id, Item.external_id, sa.func.count(Assignment.id))
        .join(Assignment, sa.and_(Assignment.item_id == Item.id, Assignment.stage_id == stage_id))
        .where(Item.stage_id == stage_id, Item.status == ItemStatus.active, Assignment.status == AssignmentStatus.returned)
        .group_by(Item.id)
        .order_by(Item.id)
        .limit(limit)
    ).all()
    return [SentBack(i, e, n, (sent_back_note(session, i, stage_id) or {}).get("comment", "")) for i, e, n in rows]


def take_back(session: Session, stage_id: int, item_id: int, reviewer_id: int) -> Item:
    """Bring a sent-back item back to review (its annotators are not coming back, or the reviewer
    changed their mind): each annotator's latest annotation counts again, open leases end."""
    item = session.scalar(sa.select(Item).where(Item.id == item_id).with_for_update())
    if item is None or item.stage_id != stage_id:
        raise NotFound("No such item in this stage.")
    assignments = session.scalars(
        sa.select(Assignment).where(Assignment.item_id == item_id, Assignment.stage_id == stage_id).with_for_update()
    ).all()
    if item.status != ItemStatus.active or not any(a.status == AssignmentStatus.returned for a in assignments):
        raise Conflict("This item is not waiting for its annotators after a send-back.")
    _refuse_own_work(session, get_stage(session, stage_id), item_id, reviewer_id)
    answered = set(session.scalars(sa.select(Annotation.assignment_id).where(Annotation.item_id == item_id, Annotation.stage_id == stage_id)))
    for a in assignments:
        if a.status != AssignmentStatus.submitted:
            a.status = transition(a.status, AssignmentEvent.reinstate if a.id in answered else AssignmentEvent.withdraw)
    item.status, item.slots_left = transition(item.status, ItemEvent.take_back), 0
    record(session, "item.taken_back", actor_id=reviewer_id, target=f"item:{item_id}", stage=stage_id)
    return item


@dataclass
class HistoryEntry:
    at: datetime
    what: str  # annotation, final, suggestion, review
    who: str
    stage: str
    detail: dict[str, Any]
    stage_id: int | None = None
    payload: dict[str, Any] | None = None  # an annotation's, a final's or a suggestion's
    kind: str | None = None  # a suggestion's kind


@dataclass
class ItemHistory:
    item: Item
    entries: list[HistoryEntry]
    stages: dict[int, Stage]  # the project's stages by id
    results: dict[str, dict[str, Any]]
    sizes: dict[str, tuple[int, int]]


def item_history(session: Session, item_id: int) -> ItemHistory:
    """Everything that happened to an item, oldest first: every annotation revision, every final
    record, every suggestion shown, every review decision."""
    item = session.get(Item, item_id)
    if item is None:
        raise NotFound(f"No item with id {item_id}.")
    stage_rows = {s.id: s for s in session.scalars(sa.select(Stage).where(Stage.project_id == item.project_id))}
    stages = {i: s.name for i, s in stage_rows.items()}
    users = dict(session.execute(sa.select(User.id, User.username)).all())
    entries = [
        HistoryEntry(a.created_at, f"annotation (revision {a.revision})", users.get(a.annotator_id, "?"), stages.get(a.stage_id, "?"),
                     {"seconds": a.seconds_spent}, a.stage_id, a.payload)
        for a in session.scalars(sa.select(Annotation).where(Annotation.item_id == item_id))
    ]
    entries += [
        HistoryEntry(r.created_at, f"final ({r.source}){' — discarded' if r.discard else ''}", users.get(r.created_by, "consolidation"),
                     stages.get(r.stage_id, "?"), {}, r.stage_id, r.payload)
        for r in session.scalars(sa.select(ItemResult).where(ItemResult.item_id == item_id))
    ]
    entries += [
        HistoryEntry(g.created_at, f"suggestion {g.kind}", f"{g.model} {g.model_version}".strip(), stages.get(g.stage_id, "?"),
                     {"score": g.score}, g.stage_id, g.payload, g.kind)
        for g in session.scalars(sa.select(Suggestion).where(Suggestion.item_id == item_id))
    ]
    entries += [
        HistoryEntry(e.at, e.action, users.get(e.actor_id, "?"), stages.get(e.detail.get("stage"), "?"),
                     {k: v for k, v in e.detail.items() if k != "stage"})
        for e in session.scalars(sa.select(AuditEvent).where(AuditEvent.target == f"item:{item_id}"))
    ]
    entries.sort(key=lambda e: e.at)
    return ItemHistory(item, entries, stage_rows, results_by_stage(session, item_id), image_sizes(session, item))
