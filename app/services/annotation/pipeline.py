"""A stage's submitted annotations and an item's finals, and writing a final record (app.decision says where the item goes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from app.decision import Situation, StageSettings, decide
from app.lifecycle import AssignmentStatus
from app.models import Annotation, Assignment, GoldItem, Item, ItemResult, Stage, StageSample, User
from app.services.webhooks import events as webhook_events


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


def _results_by_stage_statement(many: bool = False) -> sa.Select:
    """The finals of one item (`:item_id`), or with `many` of every item in `:item_ids`, oldest first."""
    gold_stage = sa.orm.aliased(Stage)
    hidden = (
        sa.select(1)
        .select_from(GoldItem)
        .join(gold_stage, gold_stage.id == GoldItem.stage_id)
        .where(GoldItem.item_id == ItemResult.item_id, gold_stage.position <= Stage.position)
        .exists()
    )
    one_item = ItemResult.item_id == sa.bindparam("item_id")
    any_item = ItemResult.item_id == sa.func.any(sa.bindparam("item_ids", type_=postgresql.ARRAY(sa.BigInteger)))
    return (
        sa.select(*((ItemResult.item_id,) if many else ()), Stage.workflow, ItemResult.payload)
        .join(Stage, Stage.id == ItemResult.stage_id)
        .where(any_item if many else one_item, ~hidden)
        .order_by(ItemResult.id)
    )


# Built once: every annotation screen and submit reads it, and building the expression (an aliased
# join and a correlated EXISTS) each time was about a seventh of a screen's app time.
_RESULTS_BY_STAGE = _results_by_stage_statement()
_RESULTS_BY_STAGE_MANY = _results_by_stage_statement(many=True)


def results_by_stage(session: Session, item_id: int) -> dict[str, dict[str, Any]]:
    """The latest final record of each stage the item passed, keyed by the stage's workflow name
    (workflows find the results they build on by workflow, whatever the stage is called). A gold
    item shows only the finals before its gold stage: its own final there is the truth."""
    return {name: payload for name, payload in session.execute(_RESULTS_BY_STAGE, {"item_id": item_id})}


def results_by_stage_many(session: Session, item_ids: Sequence[int]) -> dict[int, dict[str, dict[str, Any]]]:
    """`results_by_stage` of each item, in one query (a worker's batch): an item without finals maps to {}."""
    out: dict[int, dict[str, dict[str, Any]]] = {i: {} for i in item_ids}
    if out:
        for item_id, name, payload in session.execute(_RESULTS_BY_STAGE_MANY, {"item_ids": list(out)}):
            out[item_id][name] = payload
    return out


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
    """Write the item's final record for the stage, then move the item as the decision says."""
    decision = decide(situation(session, item, stage, final, discard))
    session.add(
        ItemResult(item_id=item.id, stage_id=stage.id, payload=final, discard=discard, source=source, created_by=actor_id)
    )
    item.status, item.slots_left = decision.status, decision.slots
    if decision.stage_id != stage.id:
        item.stage_id = decision.stage_id
    session.flush()
    workspace_id = webhook_events.hooked_workspace(session, stage.project_id)
    if workspace_id is not None:
        webhook_events.finalized(session, workspace_id, {"item_id": item.id, "project_id": stage.project_id, "stage_id": stage.id,
                                                         "record": final, "discard": discard, "source": source})


def situation(session: Session, item: Item, stage: Stage, final: dict[str, Any], discard: bool) -> Situation:
    """What the decision reads when `final` is written for the item in the stage (its earlier finals,
    whether it shows its own, the later stages with its sample membership in each)."""
    gold_stage = sa.orm.aliased(Stage)
    hidden = session.scalar(
        sa.select(
            sa.select(1).select_from(GoldItem).join(gold_stage, gold_stage.id == GoldItem.stage_id)
            .where(GoldItem.item_id == item.id, gold_stage.position <= stage.position).exists()
        )
    )
    sampled = sa.select(1).where(StageSample.stage_id == Stage.id, StageSample.item_id == item.id).exists()
    later = session.execute(
        sa.select(Stage.id, Stage.workflow, Stage.config, Stage.overlap, Stage.sample_size, sampled.label("sampled"))
        .where(Stage.project_id == stage.project_id, Stage.position > stage.position)
        .order_by(Stage.position)
    ).mappings()
    return Situation(
        StageSettings(stage.id, stage.workflow, stage.config, stage.overlap, stage.sample_size),
        [StageSettings(**row) for row in later], item.status, item.slots_left, item.data,
        results_by_stage(session, item.id), not hidden, final=final, discard=discard,
    )
