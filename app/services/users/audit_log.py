"""Reading the audit log: filtered, newest first, a page at a time (keyset on id)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.models import AuditEvent, User

PAGE = 100


@dataclass(frozen=True)
class AuditFilter:
    action: str = ""  # a prefix: "user." matches user.create, user.update, ...
    actor: str = ""  # a username
    target: str = ""  # exact ("project:3") or a prefix ending in ":" ("project:")
    since: datetime | None = None
    until: datetime | None = None  # exclusive


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _conditions(f: AuditFilter) -> list[sa.ColumnElement[bool]]:
    where: list[sa.ColumnElement[bool]] = []
    if f.action:
        where.append(AuditEvent.action.like(_escape_like(f.action) + "%", escape="\\"))
    if f.actor:
        where.append(User.username == f.actor)
    if f.target:
        target = AuditEvent.target.like(_escape_like(f.target) + "%", escape="\\") if f.target.endswith(":") else AuditEvent.target == f.target
        where.append(target)
    if f.since is not None:
        where.append(AuditEvent.at >= f.since)
    if f.until is not None:
        where.append(AuditEvent.at < f.until)
    return where


def events(session: Session, f: AuditFilter, *, before_id: int | None = None, limit: int = PAGE) -> tuple[list[dict[str, Any]], int | None]:
    """Up to `limit` events matching `f`, newest first, with ids below `before_id`; and the id to ask
    the next page with (None on the last page)."""
    query = (
        sa.select(AuditEvent.id, AuditEvent.at, AuditEvent.action, AuditEvent.target, AuditEvent.ip, AuditEvent.detail,
                  AuditEvent.actor_id, User.username.label("actor"))
        .outerjoin(User, User.id == AuditEvent.actor_id)
        .where(*_conditions(f))
        .order_by(AuditEvent.id.desc())
        .limit(limit + 1)
    )
    if before_id is not None:
        query = query.where(AuditEvent.id < before_id)
    rows = [dict(r._mapping) for r in session.execute(query)]
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (rows[-1]["id"] if more else None)
