"""One-shot notices that survive a POST-redirect-GET: the POST keeps a short message in the session
cookie, the GET it redirects to shows it once."""

from __future__ import annotations

from fastapi import Request

_KEY = "flash"


def flash(request: Request, message: str) -> None:
    request.session[_KEY] = message[:500]  # the cookie holds it: keep it short


def take_flash(request: Request) -> str | None:
    return request.session.pop(_KEY, None)
