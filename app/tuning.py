"""The planner and garbage-collector tweaks the app makes, each one that a benchmark pays for.

Each earns its place by a figure in docs/performance.md (measured with the scripts in `bench/`):

- `without_jit`: PostgreSQL's JIT compiled small statements whose stale estimates passed
  `jit_above_cost` (a submit's read: 21.5 ms to 0.19 ms; § "JIT compiling, and the floor read ...").
- `replan_on_growth`: a plan cached while a table was small scanned it whole once it had grown
  (2.3 ms instead of 0.03-0.4 ms a statement until an ANALYZE; § "The annotation hot path").
- `freeze_after_start` (`vlcurate serve`): gc.freeze of the loaded app removes a ~100 ms pause of a
  full collection, and a rarer gen-0 collection takes a tenth off the hot path's app CPU
  (§ "The annotation hot path", § "Submit to next screen").
- `fewer_collections` (an import): gen 0 collected every 50,000 allocations, 18 % less app CPU for
  200,000 records (§ "Import").

Elsewhere, beside the statements they serve (their figures in the same document):

- `app.queue.PLAN_ONCE`: the first statement of a claim or screen forces generic plans for the rest of
  its transaction (0.67 ms of planning for 0.43 ms of running on a 10K stage; § "A claim planned anew
  on every run ...").
- `app.queue._floors`: each stage's lowest claimable id, read every few seconds per process, bounds the
  pick (260 ms to 6 ms on a 1M stage at 90 %; § "JIT compiling, and the floor read ...").
- `app.services.annotation.annotation.claim_json`: the claim's answer spliced from JSON text PostgreSQL built.
- `app.web.limits.ApiRouter.matches`: a page's request is refused by the API's routers at once
  (about 80 µs to 9 µs; § "The annotation hot path").
- `app.web.deps.Sessions` and `ApiTurn`: the request's turn at the database taken by a plain
  dependency that puts its release on FastAPI's function-scoped exit stack, not by a generator
  dependency, and the API's routes solve one dependency for the turn and the token (148 thousand
  instructions off a claim, 4.7 %, and 253 thousand off a claim and submit, 3.3 %;
  docs/performance.md § "The turn without a generator dependency").
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

# -- the database connections ------------------------------------------------------------------


def without_jit(engine: sa.Engine) -> None:
    """Turn PostgreSQL's JIT compilation off on the pool's connections, once each, when opened: the
    app's statements read a few rows through indexes, and the estimates that pass `jit_above_cost`
    are stale ones. Set per session, not as a startup option, which a PgBouncer in front refuses."""

    @sa.event.listens_for(engine, "connect")
    def _connected(dbapi_connection, record) -> None:
        autocommit = dbapi_connection.autocommit
        dbapi_connection.autocommit = True
        try:
            dbapi_connection.execute("SET jit = off")
        finally:
            dbapi_connection.autocommit = autocommit


# How often a process looks at the tables' sizes to decide whether its connections' plans are stale.
REPLAN_CHECK_S = 1.0

# A table's rows (live and dead, as PostgreSQL's statistics count them as they change, without ANALYZE).
_TABLE_ROWS = "SELECT relid::bigint, n_live_tup + n_dead_tup FROM pg_stat_user_tables"


def _grew(before: int, now: int) -> bool:
    """Doubled or halved, past a few hundred rows either way (the planner's choices change in steps of that order)."""
    return now > 2 * before + 200 or 2 * now + 200 < before


def replan_on_growth(engine: sa.Engine, check_every_s: float) -> None:
    """Make the pool's connections drop their cached query plans once a table has doubled or halved.

    The hot statements are prepared once per connection (psycopg, after a few runs), and PostgreSQL
    keeps one generic plan for each until something invalidates it (an ANALYZE, a schema change); a
    plan made while a table was small scans it whole after it grew. At most every `check_every_s`,
    the checkout that comes first reads the tables' row counts from PostgreSQL's activity statistics
    (no table is opened or locked). If one has doubled or halved since the plans were last dropped,
    every connection runs `DISCARD PLANS` at its next checkout: it keeps the prepared statements,
    each planned again once on its next run. Dropping them every second whatever the data did cost
    claims, so only a change of size drops them."""
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


# -- the garbage collector ---------------------------------------------------------------------

# A server process collects the youngest generation this rarely (the default is every 700 allocations).
SERVE_GC_GEN0 = 10_000


def freeze_after_start() -> None:
    """Once a server process has loaded the app (about 180,000 objects that live as long as it), move
    them out of the collector's sight, and collect the youngest generation every SERVE_GC_GEN0
    allocations: a request's thousands of short-lived containers are freed by reference counting."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(SERVE_GC_GEN0, *gc.get_threshold()[1:])


# While any import runs, the garbage collector's youngest generation is collected this rarely.
IMPORT_GC_GEN0 = 50_000
_gc_lock = threading.Lock()
_gc_imports = 0  # imports running in this process
_gc_saved: tuple[int, ...] = ()


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect the youngest generation every IMPORT_GC_GEN0 allocations while the block runs (the
    process's threshold, shared by concurrent imports: the first sets it, the last puts it back).
    An import's records leave short-lived containers that reference counting frees anyway."""
    global _gc_imports, _gc_saved
    with _gc_lock:
        if _gc_imports == 0:
            _gc_saved = gc.get_threshold()
            gc.set_threshold(max(IMPORT_GC_GEN0, _gc_saved[0]), *_gc_saved[1:])
        _gc_imports += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_imports -= 1
            if _gc_imports == 0:
                gc.set_threshold(*_gc_saved)
