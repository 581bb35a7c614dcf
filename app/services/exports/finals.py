"""Finished records of a project or of one split, as the published export writes them, streamed as
JSON lines without an export job (what the Python client's `finals()` reads).

The rows are read as text from a psycopg server-side cursor, many at a time: the JSON columns are
parsed here only where a line needs them (the record as it came; the item's working copy only when
the dataset's `export_record` looks at it, through `_Lazy`), and the stored image pointers are put
into the line as PostgreSQL writes them. The lines are the ones `app.exporters.rows.split_rows`
and `Dataset.export_record` make, without building a Row per item: measured, that was most of the
stream's time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from sqlalchemy.orm import Session

from app.errors import Invalid
from app.exporters import project_dataset
from app.exporters.rows import ALL, DONE
from app.services.exports import splits
from app.services.projects.projects import get_project

FETCH = 2000  # rows a round trip to the cursor, and lines a chunk of the stream

_COLUMNS = """i.id, i.external_id, i.data::text, i.source::text, i.assets::text,
    (SELECT jsonb_object_agg(st.workflow, r.payload ORDER BY r.id)
       FROM item_results r JOIN stages st ON st.id = r.stage_id WHERE r.item_id = i.id)::text"""
_PROJECT = f"SELECT {_COLUMNS} FROM items i WHERE i.project_id = %(project)s AND i.status = '{DONE}' ORDER BY i.id"
_SPLIT = f"""SELECT {_COLUMNS} FROM item_splits s JOIN items i ON i.id = s.item_id
              WHERE s.definition_id = %(definition)s AND s.split = %(split)s AND i.status = '{DONE}' ORDER BY s.item_id"""


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


class _Lazy(Mapping):
    """A JSON object given as text, parsed on first use."""

    __slots__ = ("_text", "_value")

    def __init__(self, text: str):
        self._text, self._value = text, None

    def _parsed(self) -> dict[str, Any]:
        if self._value is None:
            self._value = json.loads(self._text)
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self._parsed()[key]

    def __iter__(self):
        return iter(self._parsed())

    def __len__(self) -> int:
        return len(self._parsed())


def _plain(value: Any) -> Any:
    """json's `default`: a record that holds the item's working copy itself (a plugin's
    `export_record` may return it as it is) is written as the object it stands for."""
    if isinstance(value, _Lazy):
        return value._parsed()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def final_lines(session: Session, project_id: int, split: str | None, definition) -> Iterator[str]:
    """JSON lines, a chunk of up to FETCH at a time, one per finished (kept) item in import order:
    external_id, item_id, split, the published record and its stored images' sha256 by pointer."""
    dataset = project_dataset(session, project_id)
    if definition is None:
        sql, params = _PROJECT, {"project": project_id}
    else:
        sql, params = _SPLIT, {"definition": definition.id, "split": split}
    split_json = json.dumps(split or ALL, ensure_ascii=False)
    dumps, loads, export_record = json.dumps, json.loads, dataset.export_record
    raw = session.connection().connection.driver_connection
    with raw.cursor(name="finals") as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(FETCH):
            lines = []
            for item_id, external_id, data, source, assets, results in rows:
                record = export_record(_Lazy(data), loads(results) if results else {}, None if source is None else loads(source))
                lines.append(f'{{"external_id": {dumps(external_id, ensure_ascii=False)}, "item_id": {item_id}, "split": {split_json}, '
                             f'"record": {dumps(record, ensure_ascii=False, default=_plain)}, "images": {assets or "{}"}}}\n')
            yield "".join(lines)
