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
from app.models import Suggestion


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
    prompt_id: int | None = None,
    latency_ms: int | None = None,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
) -> None:
    """Store a model's output; computing it again with the same model version replaces it. A drafted
    one names its prompt version and what the call cost (latency, tokens)."""
    drafted = {"prompt_id": prompt_id, "latency_ms": latency_ms, "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
    session.execute(
        pg_insert(Suggestion)
        .values(
            item_id=item_id, stage_id=stage_id, kind=kind, model=model, model_version=model_version, payload=payload, score=score,
            **drafted,
        )
        .on_conflict_do_update(
            index_elements=["item_id", "stage_id", "kind", "model", "model_version"],
            set_={"payload": payload, "score": score, **drafted, "created_at": sa.func.now()},
        )
    )


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
