"""Queueing webhook events: `emit` writes one delivery per subscribed endpoint and queues its job, in
the caller's transaction, so an event goes out exactly when the change that made it commits.

Callers on the submit path never pay for this when nobody listens: `HOOKED_SQL` is a column of the
submit's existing context query (one index probe on `webhooks`), and only a workspace with an
enabled webhook for the event reaches `emit`. Where to call what:
- `item.finalized`, `stage.completed`: `finalized` (the submit and the review call it);
- `export.finished`: `emit_for_project` when an export is done (app.services.exports.export);
- `annotator.paused`: `emit_for_project(session, project_id, "annotator.paused", {...})` where a pause is written.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.lifecycle import ItemStatus

DELIVER_TASK = "vlcurate:deliver_webhook"  # app.worker.webhook_job registers it under this name
QUEUE = "webhook"
# Events of the finalization path: a workspace with an enabled webhook for either is "hooked".
FINAL_EVENTS = ("item.finalized", "stage.completed")
HOOKED_SQL = """(SELECT p.workspace_id FROM projects p WHERE p.id = :project AND EXISTS (
            SELECT 1 FROM webhooks w WHERE w.workspace_id = p.workspace_id AND w.enabled
               AND w.events && CAST(ARRAY['item.finalized', 'stage.completed'] AS varchar[])))"""
_HOOKED = sa.text(f"SELECT {HOOKED_SQL}")

# One statement: a delivery per matching webhook (its `webhook-id` made here, kept for every retry),
# and a procrastinate job per delivery through procrastinate's own defer function, so the jobs
# commit or roll back with the caller's change. The job's lock keeps two runs of one delivery apart.
_EMIT = """
WITH d AS (
    INSERT INTO webhook_deliveries (webhook_id, message_id, event_type, body)
    SELECT w.id, 'msg_' || replace(CAST(gen_random_uuid() AS text), '-', ''), CAST(:type AS varchar), :body
    FROM webhooks w WHERE {where}
    RETURNING id)
SELECT coalesce(cardinality(procrastinate_defer_jobs_v1(ARRAY(
    SELECT CAST(ROW(:queue, :task, 0, 'webhook:' || d.id, NULL, jsonb_build_object('delivery_id', d.id), NULL)
                AS procrastinate_job_to_defer_v1) FROM d))), 0)
"""
_TO_WORKSPACE = sa.text(_EMIT.format(where="w.workspace_id = :target AND w.enabled AND CAST(:type AS varchar) = ANY(w.events)"))
_TO_WEBHOOK = sa.text(_EMIT.format(where="w.id = :target"))
_WORKSPACE_OF = sa.text("SELECT workspace_id FROM projects WHERE id = :project")
_LISTENS = sa.text("SELECT EXISTS (SELECT 1 FROM webhooks WHERE workspace_id = :ws AND enabled AND CAST(:type AS varchar) = ANY(events))")
# Items still to finish in a stage, from the maintained counts (app.models.counts).
_LEFT_IN_STAGE = sa.text(
    f"SELECT coalesce(sum(n), 0) FROM item_counts WHERE project_id = :project AND stage_id = :stage"
    f" AND status IN ('{ItemStatus.active}', '{ItemStatus.review}')"
)
# Serializes the stage-completion check of one stage, so that the last two items finishing together
# cannot each see the other as still open (the second waits, then sees the first committed).
_STAGE_LOCK = sa.text("SELECT pg_advisory_xact_lock(4242010, CAST(:stage AS integer))")


def body(event_type: str, data: dict[str, Any]) -> str:
    """The JSON body of an event, as the Standard Webhooks specification lays it out."""
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return json.dumps({"type": event_type, "timestamp": stamp, "data": data}, ensure_ascii=False, separators=(",", ":"))


def emit(session: Session, workspace_id: int, event_type: str, data: dict[str, Any]) -> int:
    """Queue `event_type` with `data` to every enabled webhook of the workspace that subscribes to it,
    in the caller's transaction; returns how many deliveries were queued."""
    params = {"target": workspace_id, "type": event_type, "body": body(event_type, data), "queue": QUEUE, "task": DELIVER_TASK}
    return session.execute(_TO_WORKSPACE, params).scalar_one()


def emit_to(session: Session, webhook_id: int, event_type: str, data: dict[str, Any]) -> int:
    """Queue an event to one webhook whatever it subscribes to (the test button)."""
    params = {"target": webhook_id, "type": event_type, "body": body(event_type, data), "queue": QUEUE, "task": DELIVER_TASK}
    return session.execute(_TO_WEBHOOK, params).scalar_one()


def emit_for_project(session: Session, project_id: int, event_type: str, data: dict[str, Any]) -> int:
    """`emit` to the workspace of the project; `project_id` joins the data."""
    workspace_id = session.scalar(_WORKSPACE_OF, {"project": project_id})
    if workspace_id is None:
        return 0
    return emit(session, workspace_id, event_type, {"project_id": project_id, **data})


def hooked_workspace(session: Session, project_id: int) -> int | None:
    """The project's workspace if it has an enabled webhook for a finalization event (else None): `HOOKED_SQL` alone."""
    return session.scalar(_HOOKED, {"project": project_id})


def finalized(session: Session, workspace_id: int, final: dict[str, Any]) -> None:
    """An item got its final record in a stage (and so left it): `item.finalized`, then `stage.completed`
    when no item is left to finish there. `final`: item_id, project_id, stage_id, record, discard, source."""
    emit(session, workspace_id, "item.finalized", final)
    if session.scalar(_LISTENS, {"ws": workspace_id, "type": "stage.completed"}):
        session.execute(_STAGE_LOCK, {"stage": final["stage_id"]})
        if session.scalar(_LEFT_IN_STAGE, {"project": final["project_id"], "stage": final["stage_id"]}) == 0:
            emit(session, workspace_id, "stage.completed", {"project_id": final["project_id"], "stage_id": final["stage_id"]})
