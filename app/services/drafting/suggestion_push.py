"""Suggestions pushed from outside (a model run in a notebook): a batch of rows keyed by the item's
external id, checked against the stage's suggestion kinds and each kind's payload schema (as the
worker's drafts are, `Workflow.check_suggestion`), stored idempotently by model version."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.datasets import get_workflow
from app.errors import Invalid
from app.models import Item, Suggestion
from app.services.projects.projects import get_stage

MAX_REPORTED_ERRORS = 20


def push(session: Session, stage_id: int, rows: list[dict[str, Any]]) -> tuple[int, int]:
    """Store every row or none; returns (stored, unchanged). A row pushed again with the same model
    version replaces the earlier one only if its payload or score differ, so a batch pushed twice
    changes nothing the second time."""
    stage = get_stage(session, stage_id)
    workflow = get_workflow(stage.workflow)
    kinds = workflow.suggestion_kinds
    ids = session.execute(
        sa.select(Item.external_id, Item.id).where(
            Item.project_id == stage.project_id,
            Item.external_id == sa.any_(sa.literal(sorted({r["external_id"] for r in rows}), ARRAY(sa.Text))),
        )
    ).all()
    item_of = dict(ids)
    errors, seen, values = [], {}, []
    for n, row in enumerate(rows):
        where = f"suggestions[{n}]"
        if row["kind"] not in kinds:
            errors.append(f"{where}: kind {row['kind']!r} is not read by {stage.workflow}; use one of: {', '.join(kinds) or 'none'}")
            continue
        if row["external_id"] not in item_of:
            errors.append(f"{where}: no item with id {row['external_id']!r} in this project")
            continue
        if problems := workflow.check_suggestion(row["kind"], row["payload"], prefix=f"{where}."):
            errors.extend(problems)
            continue
        key = (row["external_id"], row["kind"], row["model"], row["model_version"])
        if key in seen:
            errors.append(f"{where}: repeats {seen[key]} (same item, kind, model and version)")
            continue
        seen[key] = where
        values.append({"item_id": item_of[row["external_id"]], "stage_id": stage_id, "kind": row["kind"], "model": row["model"],
                       "model_version": row["model_version"], "payload": row["payload"], "score": row["score"]})
        if len(errors) >= MAX_REPORTED_ERRORS:
            break
    if errors:
        raise Invalid("Nothing was stored.", errors[:MAX_REPORTED_ERRORS])
    stmt = pg_insert(Suggestion)
    stmt = stmt.on_conflict_do_update(
        index_elements=["item_id", "stage_id", "kind", "model", "model_version"],
        set_={"payload": stmt.excluded.payload, "score": stmt.excluded.score, "created_at": sa.func.now()},
        where=sa.or_(Suggestion.payload != stmt.excluded.payload, Suggestion.score.is_distinct_from(stmt.excluded.score)),
    ).returning(Suggestion.id)
    stored = len(session.execute(stmt.values(values)).all())
    return stored, len(values) - stored
