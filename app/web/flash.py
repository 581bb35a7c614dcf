"""One-shot notices that survive a POST-redirect-GET: the POST keeps a short message in the session
cookie, the GET it redirects to shows it once."""

from __future__ import annotations

from typing import Any

from fastapi import Request


def flash(request: Request, message: str | dict[str, Any], slot: str = "flash") -> None:
    """Keep `message` (text, or a small dict a page lays out) for the next GET that takes `slot`.
    It is never put in a URL or a log line."""
    request.session[slot] = message[:500] if isinstance(message, str) else message  # the cookie holds it: keep it short


def take_flash(request: Request, slot: str = "flash") -> Any:
    return request.session.pop(slot, None)
