"""A pushed record that replaces an item's record (`push_records(..., on_conflict="update")`): the item
gets the new record as it came and its working copy, and the record it had goes into its history as an
audit event (`item.revise`, with the revision number and the record before, as its text): nothing
annotated is touched, and every past record of the item can be read back. The same record again
changes nothing."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.models import AuditEvent

ACTION = "item.revise"

# One statement a batch: the items whose record differs from the one pushed get it; `o` is the row
# before the update (a self-join sees the old values), so the record they had comes back with them.
_REVISE = sa.text(f"""
    UPDATE items i SET data = CAST(u.data AS jsonb), source = CAST(u.source AS json), assets = CAST(u.assets AS jsonb),
                       group_id = u.group_id
    FROM items o, unnest(CAST(:ids AS text[]), CAST(:data AS text[]), CAST(:sources AS text[]), CAST(:assets AS text[]),
                         CAST(:groups AS text[])) AS u(external_id, data, source, assets, group_id)
    WHERE o.id = i.id AND i.project_id = :project AND i.external_id = u.external_id
      AND o.source::text IS DISTINCT FROM u.source
    RETURNING i.id, o.source::text,
      (SELECT count(*) FROM audit_events e WHERE e.target = 'item:' || i.id AND e.action = '{ACTION}') + 2
""")


def revise(session: Session, project_id: int, rows: list[tuple[Any, ...]], actor_id: int | None) -> int:
    """Give the project's items named by `rows` (import rows: project, external id, data, source,
    assets, group id, ...) their new record where it differs; returns how many changed."""
    columns = {"ids": [r[1] for r in rows], "data": [r[2] for r in rows], "sources": [r[3] for r in rows],
               "assets": [r[4] for r in rows], "groups": [r[5] for r in rows]}
    changed = session.execute(_REVISE, {"project": project_id, **columns}).all()
    session.add_all(AuditEvent(action=ACTION, actor_id=actor_id, target=f"item:{item_id}", detail={"revision": revision, "before": before})
                    for item_id, before, revision in changed)
    session.flush()
    return len(changed)
