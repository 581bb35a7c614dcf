"""Typed errors of the client: each carries the server's message (`detail`) and field errors (`errors`)."""

from __future__ import annotations


class VlcurateError(Exception):
    """The server refused a request (or could not be reached); `status` is the HTTP status (0: no answer)."""

    status = 0

    def __init__(self, message: str, errors: list[str] | None = None, *, status: int | None = None):
        self.message = message
        self.errors = list(errors or [])
        if status is not None:
            self.status = status
        super().__init__(message + "".join(f"\n  - {e}" for e in self.errors))


class ConnectionFailed(VlcurateError):
    """No answer from the server (after the retries an idempotent call gets)."""


class UnexpectedAnswer(VlcurateError):
    """The server answered something other than the API's JSON (an HTML page, say): the URL is not a
    vlcurate server's, or a proxy in between answered instead; the message names the status, the
    content type and how the answer began."""


class BadRequest(VlcurateError):
    """The request could not be read (400)."""

    status = 400


class Unauthorized(VlcurateError):
    """No token, or a token the server does not know (or revoked)."""

    status = 401


class Forbidden(VlcurateError):
    """The token's user does not have the role this needs."""

    status = 403


class NotFound(VlcurateError):
    """No such project, stage, item, image or file (404)."""

    status = 404


class Conflict(VlcurateError):
    """The request conflicts with the state it found, such as an item already reviewed (409)."""

    status = 409


class TooLarge(VlcurateError):
    """The upload is larger than the server's limit (413)."""

    status = 413


class Invalid(VlcurateError):
    """The request is not valid; `errors` names each field or line that is wrong."""

    status = 422


class RateLimited(VlcurateError):
    """Too many requests for now (429): try again later."""

    status = 429


class ServerError(VlcurateError):
    """The server failed (5xx); its log says why."""

    status = 500


BY_STATUS = {c.status: c for c in (BadRequest, Unauthorized, Forbidden, NotFound, Conflict, TooLarge, Invalid, RateLimited)}


def error_for(status: int, body: object) -> VlcurateError:
    """The typed error of an answer: the API's error body is {"detail": ..., "errors": [...]}."""
    detail, errors = f"HTTP {status}", []
    if isinstance(body, dict):
        detail = str(body.get("detail", detail))
        errors = [str(e) for e in body.get("errors") or []]
    elif isinstance(body, str) and body.strip():
        detail = body.strip()[:500]
    cls = BY_STATUS.get(status, ServerError if status >= 500 else VlcurateError)
    return cls(detail, errors, status=status)
