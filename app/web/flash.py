"""One-shot notices that survive a POST-redirect-GET: the POST keeps a short message in the session
cookie, the GET it redirects to shows it once; a notice holding a secret (a new password or API
token) is kept in the session's database row instead, never in the cookie."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from sqlalchemy.orm import Session

from app.services.users import web_sessions
from app.web.deps import SESSION_KEY


def flash(request: Request, message: str | dict[str, Any], slot: str = "flash") -> None:
    """Keep `message` (text, or a small dict a page lays out) for the next GET that takes `slot`.
    It is never put in a URL or a log line; the cookie carrying it is signed, not encrypted, so it
    must hold no secret (see `secret_notice`)."""
    request.session[slot] = message[:500] if isinstance(message, str) else message  # the cookie holds it: keep it short


def take_flash(request: Request, slot: str = "flash") -> Any:
    return request.session.pop(slot, None)


def secret_notice(request: Request, session: Session, message: dict[str, Any]) -> None:
    """Keep `message`, which may hold a secret, for the session's next `take_secret_notice`: in its
    row in the database, so that the browser never stores it (a cookie stays in the browser's
    profile, and an unencrypted one can be read by anyone who copies it)."""
    web_sessions.keep_notice(session, request.session.get(SESSION_KEY), message)


def take_secret_notice(request: Request, session: Session) -> Any:
    return web_sessions.take_notice(session, request.session.get(SESSION_KEY))
