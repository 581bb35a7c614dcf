"""Moving items through a project's stages: consolidate, write the final record, route onward."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.datasets import get_task
from app.lifecycle import AssignmentStatus, ItemEvent, transition
from app.models import Annotation, Assignment, GoldItem, Item, ItemResult, Stage, User
from app.services import gold, sampling


@dataclass
class Submitted:
    annotation_id: int
    item_id: int
    annotator: str
    payload: dict[str, Any]
    submitted_at: datetime
    seconds_spent: float | None



def submitted_annotations(session: Session, item_id: int | None, stage_id: int) -> list[Submitted]:
    """The latest revision of each annotator's submitted annotation of the item in the stage
    (of every item of the stage when `item_id` is None)."""
    latest = sa.select(Annotation.assignment_id, sa.func.max(Annotation.revision).label("revision")).where(
        Annotation.stage_id == stage_id
    )
    if item_id is not None:
        latest = latest.where(Annotation.item_id == item_id)
    latest = latest.group_by(Annotation.assignment_id).subquery()
    rows = session.execute(
        sa.select(Annotation.id, Annotation.item_id, User.username, Annotation.payload, Annotation.created_at, Annotation.seconds_spent)
        .join(latest, sa.and_(Annotation.assignment_id == latest.c.assignment_id, Annotation.revision == latest.c.revision))
        .join(Assignment, Assignment.id == Annotation.assignment_id)
        .join(User, User.id == Annotation.annotator_id)
        .where(Assignment.status == AssignmentStatus.submitted)
        .order_by(Annotation.assignment_id)
    )
    return [Submitted(*r) for r in rows]


def stage_payloads(session: Session, item_id: int, stage_id: int) -> list[dict[str, Any]]:
    """The latest revision of each annotator's annotation of the item in the stage."""
    return [s.payload for s in submitted_annotations(session, item_id, stage_id)]


def _results_by_stage_statement() -> sa.Select:
    gold_stage = sa.orm.aliased(Stage)
    hidden = (
        sa.select(1)
        .select_from(GoldItem)
        .join(gold_stage, gold_stage.id == GoldItem.stage_id)
        .where(GoldItem.item_id == ItemResult.item_id, gold_stage.position <= Stage.position)
        .exists()
    )
    return (
        sa.select(Stage.workflow, ItemResult.payload)
        .join(Stage, Stage.id == ItemResult.stage_id)
        .where(ItemResult.item_id == sa.bindparam("item_id"), ~hidden)
        .order_by(ItemResult.id)
    )


# Built once: every annotation screen and submit reads it, and building the expression (an aliased
# join and a correlated EXISTS) each time was about a seventh of a screen's app time.
_RESULTS_BY_STAGE = _results_by_stage_statement()


def results_by_stage(session: Session, item_id: int) -> dict[str, dict[str, Any]]:
    """The latest final record of each stage the item passed, keyed by the stage's workflow name
    (workflows find the results they build on by workflow, whatever the stage is called). A gold
    item shows only the finals before its gold stage: its own final there is the truth."""
    return {name: payload for name, payload in session.execute(_RESULTS_BY_STAGE, {"item_id": item_id})}


def complete_stage(session: Session, item: Item, stage: Stage) -> None:
    """All annotations of the item are in: consolidate them, or send the item to review."""
    workflow = get_task(stage.workflow)
    outcome = workflow.consolidate(stage_payloads(session, item.id, stage.id), stage.config)
    if outcome.needs_review or outcome.final is None or gold.routes_to_review(session, item, stage):
        item.status = transition(item.status, ItemEvent.escalate)
        return
    finalize(session, item, stage, outcome.final, discard=outcome.discard, source="auto")


def finalize(
    session: Session,
    item: Item,
    stage: Stage,
    final: dict[str, Any],
    *,
    discard: bool,
    source: str,
    actor_id: int | None = None,
) -> None:
    """Write the item's final record for the stage, then discard it, advance it, or mark it done."""
    session.add(
        ItemResult(item_id=item.id, stage_id=stage.id, payload=final, discard=discard, source=source, created_by=actor_id)
    )
    session.flush()
    if discard:
        item.status = transition(item.status, ItemEvent.discard)
        item.slots_left = 0
        return
    later = session.scalars(
        sa.select(Stage)
        .where(Stage.project_id == stage.project_id, Stage.position > stage.position)
        .order_by(Stage.position)
    )
    nxt = first_applying(later, item.data, results_by_stage(session, item.id))
    if nxt is not None:
        item.stage_id = nxt.id
        item.status = transition(item.status, ItemEvent.advance)
        item.slots_left = sampling.required(session, nxt, item.id)
        return
    item.status = transition(item.status, ItemEvent.finish)
    item.slots_left = 0


def first_applying(stages, data: dict[str, Any], results: dict[str, Any]) -> Stage | None:
    """Routing: the first of `stages` (in order) whose task applies to the item, or None (done)."""
    return next((s for s in stages if get_task(s.workflow).applies(data, results, s.config)), None)
