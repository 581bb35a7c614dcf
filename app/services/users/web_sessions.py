"""Page sessions kept in PostgreSQL: start, look up, end (one, or all of a user's), and the one-time
notice a session's next users page shows."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session

from app.models import WebSession


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def start(session: Session, user_id: int, max_age_seconds: int) -> str:
    """A new session of the user, lasting `max_age_seconds`; returns the key the cookie keeps. The
    user's expired sessions go with it, so the table holds about one row per browser logged in."""
    session.execute(sa.delete(WebSession).where(WebSession.user_id == user_id, WebSession.expires_at <= sa.func.now()))
    key = secrets.token_urlsafe(32)
    expires = sa.func.now() + sa.func.make_interval(0, 0, 0, 0, 0, 0, max_age_seconds)
    session.execute(sa.insert(WebSession).values(id=_digest(key), user_id=user_id, expires_at=expires))
    return key


def sweep_expired(session: Session) -> int:
    """Delete every expired session (the reconcile job's sweep, for users who never log in again)."""
    return session.execute(sa.delete(WebSession).where(WebSession.expires_at <= sa.func.now())).rowcount


# One read by primary key, joined to the user's row: who the session is, if it is live and they are
# active. Nothing is cached, so a session ended or a user deactivated by any process is refused on
# the next request everywhere.
_OWNER = sa.text(
    "SELECT u.id, u.username, u.role, u.must_change_password FROM web_sessions s JOIN users u ON u.id = s.user_id"
    " WHERE s.id = :digest AND s.expires_at > now() AND u.is_active"
)


def owner(session: Session, key: object) -> sa.Row | None:
    """The user (id, username, role, must_change_password) of the live session `key`, or None."""
    if not isinstance(key, str) or not key:
        return None
    return session.execute(_OWNER, {"digest": _digest(key)}).first()


def end(session: Session, key: object) -> None:
    if isinstance(key, str) and key:
        session.execute(sa.delete(WebSession).where(WebSession.id == _digest(key)))


def end_all(session: Session, user_id: int, *, keep: str | None = None) -> None:
    """End every session of the user (but `keep`, the one that asked, if given)."""
    q = sa.delete(WebSession).where(WebSession.user_id == user_id)
    if keep:
        q = q.where(WebSession.id != _digest(keep))
    session.execute(q)


def keep_notice(session: Session, key: object, notice: dict[str, Any]) -> None:
    """Keep `notice` for the session's next `take_notice` (it replaces one not yet shown)."""
    if isinstance(key, str) and key:
        session.execute(sa.update(WebSession).where(WebSession.id == _digest(key)).values(notice=notice))


_TAKE_NOTICE = sa.text(
    "WITH old AS (SELECT id, notice FROM web_sessions WHERE id = :digest AND notice IS NOT NULL FOR UPDATE)"
    " UPDATE web_sessions s SET notice = NULL FROM old WHERE s.id = old.id RETURNING old.notice"
).columns(notice=JSONB)


def take_notice(session: Session, key: object) -> dict[str, Any] | None:
    """The session's notice, removed as it is read: two pages loaded at once show it once."""
    if not isinstance(key, str) or not key:
        return None
    return session.execute(_TAKE_NOTICE, {"digest": _digest(key)}).scalar()
