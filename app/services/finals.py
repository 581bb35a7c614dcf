"""Finished records of a project or of one split, as the published export writes them, streamed as
JSON lines without an export job (what the Python client's `finals()` reads)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from sqlalchemy.orm import Session

from app.errors import Invalid
from app.exporters import project_dataset
from app.exporters.rows import ALL, split_rows
from app.services import splits
from app.services.projects import get_project


def check_split(session: Session, project_id: int, split: str | None, version: int | None = None):
    """The split definition to read (the newest, or `version`), or None for every finished item;
    refused up front, before a stream starts, when the split is not one of the definition's."""
    get_project(session, project_id)
    if split is None:
        return None
    definition = splits.get_definition(session, project_id, version)
    if split not in definition.order:
        raise Invalid(f"Split version {definition.version} has no split {split!r}; it has: {', '.join(definition.order)}.")
    return definition


def final_lines(session: Session, project_id: int, split: str | None, definition) -> Iterator[str]:
    """One JSON line per finished (kept) item in import order: external_id, item_id, split, the
    published record and its stored images' sha256 by pointer. Read from a server-side cursor."""
    dataset = project_dataset(session, project_id)
    for batch in split_rows(session, project_id, definition, split or ALL):
        yield "".join(
            json.dumps(
                {"external_id": row.external_id, "item_id": row.item_id, "split": row.split,
                 "record": dataset.export_record(row.data, row.results, row.source), "images": row.assets},
                ensure_ascii=False,
            ) + "\n"
            for row in batch
        )
