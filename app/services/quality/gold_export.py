"""The project's gold items as the `gold.jsonl` file of an export."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.lifecycle import ItemStatus
from app.models import GoldItem, Item, Stage


def export_lines(session: Session, project_id: int, batch: int = 1000) -> Iterator[dict[str, Any]]:
    """The project's gold items as `gold.jsonl` lines, stage by stage in import order: the external
    id, the stage (name, workflow, position), the record as it was imported, and the gold answer.
    Streamed from a server-side cursor, so memory does not grow with the number of gold items."""
    query = (
        sa.select(Item.external_id, Item.data, Item.source, Stage.name, Stage.workflow, Stage.position, GoldItem.answer)
        .join(GoldItem, GoldItem.item_id == Item.id)
        .join(Stage, Stage.id == GoldItem.stage_id)
        .where(Stage.project_id == project_id, Item.project_id == project_id, Item.status == ItemStatus.gold)
        .order_by(Stage.position, Item.id)
        .execution_options(yield_per=batch)
    )
    for row in session.execute(query):
        yield {
            "id": row.external_id,
            "stage": {"name": row.name, "workflow": row.workflow, "position": row.position},
            "data": row.source if row.source is not None else row.data,
            "answer": row.answer,
        }
