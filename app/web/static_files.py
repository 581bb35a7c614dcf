"""Static files named by their content: `static_url("js/app.js")` gives `/static/js/app.js?v=<hash>`,
and a URL with the right hash is answered as immutable for a year, so a browser moving from one
screen to the next loads scripts and styles from its cache without asking the server again (without
it, each navigation revalidates every file: one round trip each before the page can run). A URL
without the hash, or with a stale one, is answered `no-cache` (revalidated by ETag), so an old page
after a deploy never pins an outdated file."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from urllib.parse import parse_qsl

from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from app import ROOT

STATIC = ROOT / "static"
IMMUTABLE = "public, max-age=31536000, immutable"


@lru_cache(maxsize=None)
def content_version(path: str) -> str:
    return hashlib.sha256((STATIC / path).read_bytes()).hexdigest()[:12]


def static_url(path: str) -> str:
    return f"/static/{path}?v={content_version(path)}"


class VersionedStaticFiles(StaticFiles):
    async def get_response(self, path: str, scope: Scope):
        response = await super().get_response(path, scope)
        if response.status_code in (200, 304):
            version = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"))).get("v")
            fresh = version is not None and version == _version_or_none(path)
            response.headers["Cache-Control"] = IMMUTABLE if fresh else "no-cache"
        return response


def _version_or_none(path: str) -> str | None:
    try:
        return content_version(path)
    except OSError:
        return None
