"""What both clients share around their requests: the base URL and headers checked before any request,
retries after a connection error for idempotent calls only, and typed errors from the answers."""

from __future__ import annotations

import os
from typing import Any

import httpx

from vlcurate._protocol import Call, Reply, check
from vlcurate.errors import ConnectionFailed

RETRIES = 3
BACKOFF = 0.5  # seconds before the first retry; doubled each time


def base_url(url: str | None) -> str:
    """The API's base URL; ValueError at once (no request, no retry) for one that cannot be a server's."""
    url = url or os.environ.get("VLCURATE_SERVER")
    if not url:
        raise ValueError("Give the server's URL (or set VLCURATE_SERVER).")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"The server's URL {url!r} is not a URL: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"The server's URL {url!r} needs its scheme and host, as in http://localhost:8000 or https://{url.split('://')[-1]}")
    return url.rstrip("/") + "/api/v1"


def headers_for(token: str | None) -> dict[str, str]:
    """The headers of every request: the token (or VLCURATE_TOKEN's) as a bearer token."""
    token = token or os.environ.get("VLCURATE_TOKEN")
    if not token:
        raise ValueError("Give an API token (or set VLCURATE_TOKEN): `vlcurate token create USERNAME` makes one.")
    return {"Authorization": f"Bearer {token}", "User-Agent": "vlcurate-client"}


def retry_delay(call: Call, attempt: int, retries: int, exc: httpx.TransportError) -> float:
    """How long to wait before sending `call` again after a connection error, or ConnectionFailed when
    it may not be sent again (not idempotent) or has had its retries."""
    if not call.idempotent or attempt == retries:
        raise ConnectionFailed(f"{call.method} {call.path}: {exc}") from exc
    return float(BACKOFF * 2**attempt)


def reply_of(response: httpx.Response) -> Reply:
    """The answer as a Reply; the typed error of a refusal."""
    check(response.status_code, response.content, dict(response.headers))
    return Reply(response.status_code, response.content, dict(response.headers))


def request_args(call: Call) -> dict[str, Any]:
    """httpx's arguments for the call's parameters, body and files."""
    return {k: v for k, v in (("params", call.params), ("json", call.json), ("files", call.files), ("data", call.data)) if v is not None}
