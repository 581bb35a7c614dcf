"""A scratch database for benchmarks: on DATABASE_URL's server when set, else an embedded one."""

from __future__ import annotations

import os
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
