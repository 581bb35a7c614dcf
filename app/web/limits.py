"""JSON request bodies held to the size and depth limits (`max_json_bytes`, `max_json_depth`), and
refused if they hold a NUL character (as are query parameters: `check_query`), before FastAPI parses them, then parsed with the numbers JSON
allows (`jsontext.loads`): a route class, so the refusal goes through the app's error handlers; and the
API's router class, which uses it."""

from __future__ import annotations

import json

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute, APIRouter
from starlette.routing import Match
from starlette.types import Scope

from app import jsontext
from app.errors import Invalid, TooLarge, ascii_digits


def _is_json(request: Request) -> bool:
    # FastAPI parses a body without a content type as JSON too.
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return kind in ("", "application/json") or kind.endswith("+json")


async def _limited_body(request: Request, max_bytes: int) -> bytes:
    refusal = f"The request body is larger than {max_bytes:,} bytes (VLCURATE_MAX_JSON_BYTES)."
    declared = request.headers.get("content-length", "")
    if ascii_digits(declared) and int(declared) > max_bytes:
        raise TooLarge(refusal)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise TooLarge(refusal)
        chunks.append(chunk)
    return b"".join(chunks)


async def check_json_body(request: Request) -> None:
    """Read a JSON body within the size limit and refuse it if it nests too deep, naming the line."""
    settings = request.app.state.settings
    body = await _limited_body(request, settings.max_json_bytes)
    request._body = body  # Starlette's cache of the body: FastAPI parses these bytes, read once
    text = body.decode("utf-8", errors="replace")
    if (why := jsontext.nul_problem(text)) is not None:
        raise Invalid(f"The request body holds {why}.")
    at = jsontext.too_deep_at(text, settings.max_json_depth)
    if at is not None:
        line = jsontext.line_of(text, at)
        column = at - text.rfind("\n", 0, at)
        raise Invalid(
            f"The request body nests arrays and objects deeper than {settings.max_json_depth} levels "
            f"(VLCURATE_MAX_JSON_DEPTH): line {line}, column {column}."
        )
    if body:
        try:
            # Starlette's cache of the parsed body, which FastAPI reads: parsed once, here.
            request._json = jsontext.loads(body.decode(json.detect_encoding(body)))
        except jsontext.NumberRefused as exc:
            # As FastAPI reports a field's error, so the answer names the field like any other 422.
            raise RequestValidationError([{"type": "value_error", "loc": ("body", *exc.path), "msg": exc.why, "input": None}]) from None
        except ValueError:
            pass  # not JSON (or not text): FastAPI parses it again and answers as it always has


def check_query(request: Request) -> None:
    """Refuse a query parameter that holds a NUL character: no text PostgreSQL stores or searches can
    match it (a search would fail, a 500)."""
    for name, value in request.query_params.multi_items():
        if "\x00" in name or "\x00" in value:
            shown = name.replace("\x00", "")
            raise Invalid(f"The query parameter '{shown}' holds a NUL character (%00), which no stored text holds.", field=shown)


class LimitedJsonRoute(APIRoute):
    """An API route whose JSON body is checked by `check_json_body` first."""

    def get_route_handler(self):
        handler = super().get_route_handler()

        async def limited(request: Request):
            if b"%00" in request.scope["query_string"]:
                check_query(request)
            if _is_json(request):
                await check_json_body(request)
            return await handler(request)

        return limited


class ApiRouter(APIRouter):
    """The HTTP API's routers (`/api/v1`, JSON bodies held to the limits above). Routes are matched in
    order and the API's come before the pages' (app/main.py), so a page's request is tried against
    each of them: a path outside the router's prefix is refused at once instead of being tried
    against the API's routes one by one (app/tuning.py)."""

    def __init__(self, *, tags: list[str], dependencies: list | None = None) -> None:
        super().__init__(prefix="/api/v1", tags=tags, route_class=LimitedJsonRoute, dependencies=dependencies)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        path, root = scope["path"], scope.get("root_path", "")
        if not path.startswith(self.prefix + "/", len(root) if root and path.startswith(root) else 0):
            return Match.NONE, {}
        return super().matches(scope)
