"""Items a suggestion kind's producer could not compute: recorded with why, skipped by reconcile until
their inputs change (or an admin asks again), cleared when computed, and listed for the jobs page.

An item's inputs are its record and its images, fingerprinted as the md5 of `data` and `assets` as
PostgreSQL prints them (jsonb prints one value one way): a record update that replaces an image, or
changes the record, changes the fingerprint, and the item is tried again."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.datasets.suggest import Failed
from app.models import Item, Project, Stage, SuggestionFailure
from app.services.projects import archive

INPUTS = sa.func.md5(sa.cast(Item.data, sa.Text) + sa.cast(Item.assets, sa.Text))


def fingerprints(session: Session, item_ids: Sequence[int]) -> dict[int, str]:
    """The items' inputs fingerprints now (read with the inputs a job computes from)."""
    return dict(session.execute(sa.select(Item.id, INPUTS).where(Item.id.in_(item_ids))).all()) if item_ids else {}


def record(session: Session, stage_id: int, kind: str, failed: Sequence[Failed], inputs: dict[int, str]) -> None:
    """Record the items that failed (the newest failure of an item, stage and kind replaces the one before)."""
    rows = [{"item_id": f.item_id, "stage_id": stage_id, "kind": kind, "model": f.model, "model_version": f.model_version,
             "inputs": inputs[f.item_id], "reason": f.reason} for f in {f.item_id: f for f in failed}.values() if f.item_id in inputs]
    if not rows:
        return
    insert = pg_insert(SuggestionFailure).values(rows)
    columns = ("model", "model_version", "inputs", "reason")
    session.execute(insert.on_conflict_do_update(
        index_elements=["item_id", "stage_id", "kind"],
        set_={**{c: insert.excluded[c] for c in columns}, "created_at": sa.func.now()},
    ))


def clear(session: Session, stage_id: int, kind: str, item_ids: Sequence[int]) -> None:
    """The items were computed: their failures of the kind are history."""
    if item_ids:
        session.execute(sa.delete(SuggestionFailure).where(
            SuggestionFailure.stage_id == stage_id, SuggestionFailure.kind == kind, SuggestionFailure.item_id.in_(item_ids)
        ))


def failed_unchanged(stage_id: int, kind: str) -> sa.Exists:
    """Correlated on `Item`: the item failed this kind in the stage and its inputs are as they were then."""
    return sa.exists().where(
        SuggestionFailure.item_id == Item.id, SuggestionFailure.stage_id == stage_id, SuggestionFailure.kind == kind,
        SuggestionFailure.inputs == INPUTS,
    )


@dataclass(frozen=True)
class FailureRow:
    project_id: int
    where: str  # "project › stage"
    kind: str
    item_id: int
    external_id: str
    model: str
    model_version: str
    reason: str
    at: datetime


def recent(session: Session, limit: int = 20) -> tuple[int, list[FailureRow]]:
    """How many items failed in all, and the newest `limit` with their reasons (the jobs page)."""
    live = archive.live(Stage.project_id)  # an archived project's failures are left out with it
    total = session.scalar(sa.select(sa.func.count()).select_from(SuggestionFailure).join(Stage, Stage.id == SuggestionFailure.stage_id)
                           .where(live)) or 0
    if not total:
        return 0, []
    rows = session.execute(
        sa.select(Project.id, Project.name + " › " + Stage.name, SuggestionFailure.kind, Item.id, Item.external_id,
                  SuggestionFailure.model, SuggestionFailure.model_version, SuggestionFailure.reason, SuggestionFailure.created_at)
        .join(Stage, Stage.id == SuggestionFailure.stage_id).join(Project, Project.id == Stage.project_id)
        .join(Item, Item.id == SuggestionFailure.item_id).where(live)
        .order_by(SuggestionFailure.created_at.desc(), SuggestionFailure.id.desc()).limit(limit)
    ).all()
    return total, [FailureRow(*r) for r in rows]
