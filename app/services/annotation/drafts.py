"""Autosave: an assignment's work in progress and the active time its screen has gathered."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app import queue
from app.bias import arms
from app.errors import Conflict
from app.lifecycle import AssignmentStatus

# A draft's active time is capped as a submit's: at the time since the lease began and the lease's length;
# a save never lowers it (a late keepalive save of an older tab), and one without it keeps it.
_SAVE_DRAFT = sa.text(
    """INSERT INTO drafts (assignment_id, payload, active_seconds)
    SELECT a.id, CAST(:payload AS jsonb), CASE WHEN CAST(:active AS float8) IS NULL THEN NULL ELSE greatest(0, least(
        CAST(:active AS float8), s.lease_seconds, extract(epoch FROM clock_timestamp() - (a.lease_until - make_interval(secs => s.lease_seconds))))) END
    FROM assignments a JOIN stages s ON s.id = a.stage_id WHERE a.id = :assignment
    ON CONFLICT (assignment_id) DO UPDATE SET payload = excluded.payload, updated_at = now(),
        active_seconds = greatest(drafts.active_seconds, excluded.active_seconds)"""
)


def save_draft(session: Session, assignment_id: int, user_id: int, payload: dict[str, Any], active_seconds: Any = None) -> None:
    """Keep the work in progress. `active_seconds`: the screen's active time on the item so far (its
    drafts' earlier time included); the draft keeps the most it was told, capped as a submit's is, so
    that a reloaded or closed tab loses none of it (the submit takes it)."""
    assignment = queue.lock_assignment(session, assignment_id, user_id)  # a 404 but for theirs, in a live project
    if assignment.status != AssignmentStatus.active:
        raise Conflict(f"This assignment is {assignment.status}; the draft was not saved.")
    params = {"assignment": assignment_id, "payload": json.dumps(payload), "active": arms.active_seconds(active_seconds)}
    session.execute(_SAVE_DRAFT, params)
