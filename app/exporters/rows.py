"""Finished items of a project as batches of rows, streamed from a server-side cursor.

Rows stream in batches (`BATCH` items), so memory stays flat in the number of items. Each row
carries the item's data, stored images and the latest final of every stage by workflow name, and,
when asked, its provenance (annotators, revisions, timestamps, finals, suggestion outcomes).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.lifecycle import ItemStatus, sql_values
from app.models import SplitDefinition

BATCH = 500
ALL = "all"  # the one split of an export without a split definition
DONE = ItemStatus.done.value
FINISHED = sql_values((ItemStatus.done, ItemStatus.discarded))


@dataclass
class Row:
    item_id: int
    external_id: str
    split: str
    data: dict[str, Any]
    assets: dict[str, str]
    results: dict[str, dict[str, Any]]
    source: dict[str, Any] | None = None  # the record as it came, in its key order
    provenance: dict[str, Any] | None = None


_RESULTS = """(SELECT jsonb_object_agg(st.workflow, r.payload ORDER BY r.id)
               FROM item_results r JOIN stages st ON st.id = r.stage_id WHERE r.item_id = i.id) AS results"""

_PROVENANCE = """,
    (SELECT jsonb_agg(jsonb_build_object('stage', st.name, 'annotator', u.username, 'revision', a.revision,
                                         'at', a.created_at, 'seconds', a.seconds_spent) ORDER BY a.id)
       FROM annotations a JOIN stages st ON st.id = a.stage_id JOIN users u ON u.id = a.annotator_id
      WHERE a.item_id = i.id) AS annotations,
    (SELECT jsonb_agg(jsonb_build_object('stage', st.name, 'source', r.source, 'by', u.username,
                                         'at', r.created_at, 'discard', r.discard) ORDER BY r.id)
       FROM item_results r JOIN stages st ON st.id = r.stage_id LEFT JOIN users u ON u.id = r.created_by
      WHERE r.item_id = i.id) AS finals,
    (SELECT jsonb_agg(jsonb_build_object('stage', st.name, 'kind', o.kind, 'model', o.model, 'version', o.model_version,
                                         'annotator', u.username, 'outcome', o.outcome) ORDER BY o.id)
       FROM suggestion_outcomes o JOIN annotations a ON a.id = o.annotation_id JOIN stages st ON st.id = o.stage_id
       JOIN users u ON u.id = a.annotator_id
      WHERE a.item_id = i.id) AS suggestions"""


def _stream(session: Session, sql: str, params: dict[str, Any], split: str | None, provenance: bool, stream: bool = True) -> Iterator[list[Row]]:
    # A server-side cursor read BATCH rows at a time (yield_per here buffered every row: measured);
    # `stream=False` reads on the client, for callers inside a savepoint (a page's request in tests).
    conn = session.connection().execution_options(stream_results=stream, max_row_buffer=BATCH)
    result = conn.execute(sa.text(sql), params)
    for part in result.partitions(BATCH):
        rows = []
        for r in part:
            m = r._mapping
            prov = None
            if provenance:
                prov = {"annotations": m["annotations"] or [], "finals": m["finals"] or [], "suggestions": m["suggestions"] or []}
            rows.append(Row(m["id"], m["external_id"], split or m["split"], m["data"], m["assets"] or {}, m["results"] or {},
                            m["source"], prov))
        yield rows


def split_rows(session: Session, project_id: int, definition: SplitDefinition | None, split: str, *, provenance: bool = False) -> Iterator[list[Row]]:
    """Batches of the split's finished items in import order. A split version's item that is no longer
    done is left out: made gold since (never data), or back in review (its annotator was flagged)."""
    extra = _PROVENANCE if provenance else ""
    if definition is None:
        sql = f"""SELECT i.id, i.external_id, i.data, i.source, i.assets, {_RESULTS}{extra}
                  FROM items i WHERE i.project_id = :project AND i.status = '{DONE}' ORDER BY i.id"""
        return _stream(session, sql, {"project": project_id}, split, provenance)
    sql = f"""SELECT i.id, i.external_id, i.data, i.source, i.assets, {_RESULTS}{extra}
              FROM item_splits s JOIN items i ON i.id = s.item_id
              WHERE s.definition_id = :definition AND s.split = :split AND i.status = '{DONE}' ORDER BY s.item_id"""
    return _stream(session, sql, {"definition": definition.id, "split": split}, split, provenance)


def finished_rows(session: Session, project_id: int, *, stream: bool = True) -> Iterator[list[Row]]:
    """Every finished item, kept or discarded (the WikiDO verification log lists both)."""
    sql = f"""SELECT i.id, i.external_id, i.data, i.source, i.assets, {_RESULTS}
              FROM items i WHERE i.project_id = :project AND i.status IN ({FINISHED}) ORDER BY i.id"""
    return _stream(session, sql, {"project": project_id}, ALL, False, stream)


def count_items(session: Session, project_id: int, definition: SplitDefinition | None) -> int:
    if definition is not None:
        return sum(definition.counts.values())
    return session.scalar(sa.text(f"SELECT count(*) FROM items WHERE project_id = :p AND status = '{DONE}'"), {"p": project_id})
