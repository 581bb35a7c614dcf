"""Benchmark helpers: a scratch database (DATABASE_URL's server, else an embedded one) and request timing."""

from __future__ import annotations

import os
import re
import statistics
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import URL

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.db import ensure_database, normalize_url, start_embedded  # noqa: E402
from app.migrate import upgrade  # noqa: E402


@contextmanager
def scratch_database() -> Iterator[tuple[URL, Path]]:
    """Yield (URL of a migrated scratch database, a temporary directory); drop both afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        server = (
            normalize_url(os.environ["DATABASE_URL"])
            if os.environ.get("DATABASE_URL")
            else start_embedded(Path(tmp) / "pg").set(database="postgres")
        )
        url = server.set(database=f"vlcurate_bench_{uuid.uuid4().hex[:8]}")
        ensure_database(server, url.database)
        try:
            upgrade(url)
            yield url, Path(tmp)
        finally:
            admin = sa.create_engine(server, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
            with admin.connect() as conn:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{url.database}" WITH (FORCE)'))
            admin.dispose()


# -- timing the app in process ---------------------------------------------------------------

BENCH_PASSWORD = "bench password 123"
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf(html: str) -> str:
    return _CSRF.search(html).group(1)


def log_in(client, username: str, password: str = BENCH_PASSWORD) -> None:
    client.post("/login", data={"username": username, "password": password, "csrf_token": csrf(client.get("/login").text), "next": "/"})


def claim(client, stage_id: int, token: str):
    """Claim the stage's next item as the start button does (a POST; a GET never leases): the
    answer is a 303 to the claimed item's screen."""
    return client.post(f"/stages/{stage_id}/annotate", data={"csrf_token": token}, follow_redirects=False)


def server_ms(response) -> float:
    """The time the app spent on a request, from its Server-Timing header."""
    return float(re.search(r"dur=([\d.]+)", response.headers["server-timing"]).group(1))


def p95(values: list[float]) -> float:
    return sorted(values)[int(0.95 * (len(values) - 1))]


def summary(values: list[float]) -> str:
    return f"p50 {statistics.median(values):.1f} ms, p95 {p95(values):.1f} ms, max {max(values):.1f} ms"
