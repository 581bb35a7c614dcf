"""Model suggestions: store one (the worker, or an import of precomputed scores) and read them for a screen."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.datasets.suggest import Produced
from app.models import Suggestion, SuggestionOutcome


@dataclass(frozen=True)
class SuggestionView:
    id: int
    kind: str
    model: str
    model_version: str
    payload: dict[str, Any]
    score: float | None


def store(
    session: Session,
    item_id: int,
    stage_id: int,
    kind: str,
    model: str,
    payload: dict[str, Any],
    *,
    model_version: str = "",
    score: float | None = None,
) -> None:
    """Store a model's output; computing it again with the same model version replaces it."""
    store_many(session, stage_id, kind, [Produced(item_id, model, model_version, payload, score)])


def store_many(session: Session, stage_id: int, kind: str, rows: Sequence[Produced]) -> None:
    """Store a batch of one kind's outputs in one statement; a row computed again with the same
    model version replaces the stored one."""
    latest = {(r.item_id, r.model, r.model_version): r for r in rows}  # one row per key in a statement
    if not latest:
        return
    insert = pg_insert(Suggestion).values([
        {"item_id": r.item_id, "stage_id": stage_id, "kind": kind, "model": r.model, "model_version": r.model_version,
         "payload": r.payload, "score": r.score}
        for r in latest.values()
    ])
    session.execute(
        insert.on_conflict_do_update(
            index_elements=["item_id", "stage_id", "kind", "model", "model_version"],
            set_={"payload": insert.excluded.payload, "score": insert.excluded.score, "created_at": sa.func.now()},
        )
    )


def for_item(session: Session, item_id: int, stage_id: int) -> dict[str, SuggestionView]:
    """The newest suggestion of each kind for the item in the stage."""
    rows = session.scalars(
        sa.select(Suggestion)
        .where(Suggestion.item_id == item_id, Suggestion.stage_id == stage_id)
        .order_by(Suggestion.kind, Suggestion.created_at.desc(), Suggestion.id.desc())
        .ext(distinct_on(Suggestion.kind))
    )
    return {s.kind: SuggestionView(s.id, s.kind, s.model, s.model_version, s.payload, s.score) for s in rows}


def record_outcomes(
    session: Session, annotation_id: int, stage_id: int, shown: dict[str, SuggestionView], payload: dict[str, Any], item: dict[str, Any], workflow
) -> None:
    """Store what the annotation did with each suggestion the screen showed (first submit only)."""
    for view in shown.values():
        outcome = workflow.suggestion_outcome(view.kind, view.payload, payload, item)
        if outcome is None:
            continue
        session.execute(
            pg_insert(SuggestionOutcome)
            .values(
                annotation_id=annotation_id, suggestion_id=view.id, stage_id=stage_id, kind=view.kind,
                model=view.model, model_version=view.model_version, outcome=outcome,
            )
            .on_conflict_do_nothing(index_elements=["annotation_id", "suggestion_id"])
        )
