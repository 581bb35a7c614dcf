"""Database settings: URL normalisation and the embedded PostgreSQL server."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from app.db import normalize_url


def test_urls_are_normalised_to_psycopg():
    assert normalize_url("postgres://u:p@h/db").drivername == "postgresql+psycopg"
    assert normalize_url("postgresql://u@h:5/db").render_as_string(hide_password=False) == "postgresql+psycopg://u@h:5/db"
    with pytest.raises(ValueError, match="PostgreSQL only"):
        normalize_url("sqlite:///x.db")


def test_embedded_postgres_starts_migrates_and_stops(tmp_path):
    """In a separate process, as a user would run it: no DATABASE_URL, data in VLCURATE_DATA_DIR."""
    script = textwrap.dedent(
        """
        import os, sqlalchemy as sa
        os.environ.pop("DATABASE_URL", None)
        from app.settings import Settings
        from app.db import database_url
        from app.migrate import upgrade, check_current
        url = database_url(Settings())
        upgrade(url)
        assert check_current(url)
        engine = sa.create_engine(url)
        with engine.connect() as c:
            print("socket" if "host=/" in str(url) or url.query.get("host", "").startswith("/") else "tcp")
            print(c.scalar(sa.text("select count(*) from users")))
        engine.dispose()
        """
    )
    # A login shell's PATH: as root, the wheel creates its system user with useradd (in sbin).
    env = {"VLCURATE_DATA_DIR": str(tmp_path), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["socket", "0"]
    assert (tmp_path / "postgres" / "PG_VERSION").exists()
    # Stopped cleanly when the process exited: no server holds the data directory.
    assert not (tmp_path / "postgres" / "postmaster.pid").exists()


def test_a_request_while_the_database_is_unreachable_answers_503_and_asks_to_retry(settings):
    from fastapi.testclient import TestClient

    from app.main import create_app
    from tests.conftest import csrf_from, free_port

    down = settings.model_copy(update={"database_url": f"postgresql://postgres@127.0.0.1:{free_port()}/vlcurate"})
    client = TestClient(create_app(down))  # no lifespan: nothing connects before the request
    api = client.get("/api/v1/projects", headers={"Authorization": "Bearer vlc_x"})
    assert api.status_code == 503 and api.headers["retry-after"] == "1"
    assert api.json() == {"detail": "The database is not available right now. Try again in a moment."}
    form = client.get("/login")  # no database needed to show the form; logging in needs one
    page = client.post("/login", data={"username": "ann", "password": "pw", "csrf_token": csrf_from(form.text), "next": "/"})
    assert page.status_code == 503 and "The database is not available right now" in page.text


def test_plans_cached_while_a_table_was_small_are_made_again_once_it_grew(db_url, engine):
    """A statement prepared while its table held a few rows keeps a plan that scans the table whole;
    with `replan_on_growth` the pool's connections drop their plans once the table has grown, and
    the next run uses the index (no ANALYZE between: the statistics still say the table is empty)."""
    import json
    import time
    import uuid

    import sqlalchemy as sa

    from app.tuning import replan_on_growth

    table = f"plans_{uuid.uuid4().hex[:8]}"
    lookup = sa.text(f"SELECT v FROM {table} WHERE id = :id")

    def plan_of(pool) -> str:
        with pool.begin() as conn:
            conn.execute(lookup, {"id": 7})
            name = conn.scalar(sa.text("SELECT name FROM pg_prepared_statements WHERE statement LIKE :s"), {"s": f"SELECT v FROM {table} %"})
            explained = conn.exec_driver_sql(f"EXPLAIN (FORMAT JSON) EXECUTE {name}(7)").scalar_one()
        return (explained if isinstance(explained, list) else json.loads(explained))[0]["Plan"]["Node Type"]

    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE {table} (id int PRIMARY KEY, v int) WITH (autovacuum_enabled = false)")
        conn.exec_driver_sql(f"ANALYZE {table}")
        conn.exec_driver_sql(f"INSERT INTO {table} SELECT g, g FROM generate_series(1, 20) g")
    pools = {}
    try:
        for replanned in (False, True):
            pools[replanned] = pool = sa.create_engine(db_url, pool_size=1, max_overflow=0)
            if replanned:
                replan_on_growth(pool, 0.2)
            with pool.begin() as conn:
                for i in range(20):  # prepared after a few runs, planned for these values a few times, then once for all
                    conn.execute(lookup, {"id": i})
            assert plan_of(pool) == "Seq Scan"
        time.sleep(0.3)
        assert plan_of(pools[True]) == "Seq Scan"  # nothing grew: the plan stays

        with engine.begin() as conn:
            conn.exec_driver_sql(f"INSERT INTO {table} SELECT g, g FROM generate_series(21, 50000) g")
            conn.exec_driver_sql("SELECT pg_stat_force_next_flush()")  # else up to 10 s after this backend's last report
        deadline = time.monotonic() + 15
        while plan_of(pools[True]) != "Index Scan":
            assert time.monotonic() < deadline, "the plan was not made again"
            time.sleep(0.2)
        assert plan_of(pools[False]) == "Seq Scan"  # without: the old plan, until an ANALYZE
    finally:
        for pool in pools.values():
            pool.dispose()
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE {table}")


def test_the_apps_connections_never_compile_a_statement_with_jit(db_url, engine):
    """A statement costed past `jit_above_cost` (here every statement: the threshold is set to 0 on
    both connections) is compiled on a plain connection and not on the app's: with statistics gone
    stale after a bulk write, a submit's sub-millisecond read was costed past the default threshold
    and spent 20 ms compiling (app.tuning.without_jit)."""
    import sqlalchemy as sa

    from app.tuning import without_jit

    query = "EXPLAIN (ANALYZE, FORMAT TEXT) SELECT sum(g * 2) FROM generate_series(1, 1000) g"
    with engine.connect() as conn:
        # A server built without a JIT provider (the embedded one) never compiles; the setting is
        # still checked below.
        if conn.scalar(sa.text("SELECT pg_jit_available()")):
            conn.exec_driver_sql("SET jit_above_cost = 0")
            assert "JIT:" in "\n".join(conn.exec_driver_sql(query).scalars())
        assert conn.scalar(sa.text("SHOW jit")) == "on"
    pool = sa.create_engine(db_url, pool_size=1, max_overflow=0)
    without_jit(pool)
    try:
        for _ in range(2):  # the setting outlives the first transaction (a rolled-back SET would not)
            with pool.connect() as conn:
                assert conn.scalar(sa.text("SHOW jit")) == "off"
                conn.exec_driver_sql("SET LOCAL jit_above_cost = 0")
                assert "JIT:" not in "\n".join(conn.exec_driver_sql(query).scalars())
                conn.rollback()
    finally:
        pool.dispose()
