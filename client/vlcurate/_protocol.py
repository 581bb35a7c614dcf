"""The request code both clients share, written once without I/O: every operation is a generator that
yields `Call`s and gets `Reply`s back (or, on a streamed call, yields `NEXT_LINE` and gets the body's
next line, None at its end) and `Emit`s the values an iterating operation hands out. `Client` drives
these generators with httpx's sync client, `AsyncClient` with its async one.

Written by hand: httpx has no shared sync/async layer to hang operations on (its two clients are
separate classes), and a sans-I/O generator is the smallest way to keep one copy of the logic."""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from vlcurate.errors import UnexpectedAnswer, error_for

NEXT_LINE = object()  # yielded on a streamed call: send me the body's next line


@dataclass
class Call:
    method: str
    path: str  # under /api/v1
    params: dict[str, Any] | None = None
    json: Any = None
    files: dict[str, Any] | None = None
    data: dict[str, str] | None = None  # form fields sent with `files`
    idempotent: bool = False  # safe to send again after a connection error
    stream: bool = False  # the body is read line by line (NEXT_LINE)
    download_to: Path | None = None  # the body is written to this file

    def __post_init__(self) -> None:
        # Reads, PUT and DELETE are idempotent by HTTP's definition; a POST only when its call says so.
        self.idempotent = self.idempotent or idempotent_method(self.method)


@dataclass
class Reply:
    status: int
    content: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        """The body parsed as JSON; UnexpectedAnswer where the server answered something else."""
        if not self.content:
            return None
        expect_json(self.status, self.headers, self.content)
        return json.loads(self.content)


@dataclass
class Parallel:
    """Calls sent at once; the operation gets back a list in their order, each a Reply or the
    VlcurateError that call raised (the operation decides what a refusal means)."""

    calls: list[Call]


@dataclass
class Sleep:
    seconds: float


@dataclass
class Emit:
    value: Any


T = TypeVar("T")
# An operation: yields Calls (and the other steps above), gets Replies back, returns a T.
Op = Generator[Any, Any, T]


JSON_TYPES = ("application/json", "application/x-ndjson", "application/problem+json")


def expect_json(status: int, headers: dict[str, str], content: bytes = b"") -> None:
    """Raise UnexpectedAnswer unless the answer says it is JSON (or JSON lines): an HTML page, say,
    from a URL that is not a vlcurate server's (or a proxy's error page)."""
    content_type = headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() in JSON_TYPES:
        return
    excerpt = " ".join(content[:200].decode("utf-8", "replace").split())[:120]
    raise UnexpectedAnswer(
        f"The server answered HTTP {status} with {content_type or 'no content type'}, not JSON: is this the URL of a "
        f"vlcurate server (its root, without /api/v1)?" + (f" The answer began: {excerpt!r}" if excerpt else ""), status=status)


def check(status: int, content: bytes, headers: dict[str, str] | None = None) -> None:
    """Raise the typed error of a refused call (UnexpectedAnswer where its body is not JSON)."""
    if status < 400:
        return
    if content and headers is not None:
        expect_json(status, headers, content)
    try:
        body = json.loads(content)
    except ValueError:
        body = content.decode("utf-8", "replace")
    raise error_for(status, body)


def idempotent_method(method: str) -> bool:
    return method in ("GET", "HEAD", "PUT", "DELETE", "OPTIONS")
