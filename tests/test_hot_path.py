"""The annotation hot path: tokens and sessions checked on every request, bearer calls without
cookie sessions, the claim answer written by PostgreSQL, the claim's plan with stale statistics, and serve's defaults."""

from __future__ import annotations

import os
import re

import pytest
import sqlalchemy as sa

from app.cli import server
from app.db import transaction
from app.services.annotation import annotation, submit_statements, suggestions
from app.services.users import users
from tests import factories
from tests.conftest import login, make_choice_project


@pytest.fixture
def world(app, settings, storage):
    project_id, stage_id = make_choice_project(app.state.sessions, settings, storage, 3)
    with transaction(app.state.sessions) as s:
        annotator = factories.user(s, "hot")
        admin = factories.user(s, "hotboss", "admin")
        return {
            "stage": stage_id,
            "annotator": annotator,
            "admin": admin,
            "ann": {"Authorization": f"Bearer {factories.token(s, annotator)}"},
        }


def test_a_token_revoked_elsewhere_stops_working_on_the_next_request(client, app, world):
    assert client.get("/api/v1/projects", headers=world["ann"]).status_code == 200
    # Another process (a second worker, the command line) revokes it: nothing here keeps it.
    with transaction(app.state.sessions) as s:
        s.execute(sa.text("UPDATE api_tokens SET revoked_at = now() WHERE user_id = :u"), {"u": world["annotator"]})
    assert client.get("/api/v1/projects", headers=world["ann"]).status_code == 401


def test_deactivating_a_user_here_stops_their_token_at_once(client, app, world):
    assert client.post(f"/api/v1/stages/{world['stage']}/claim", headers=world["ann"]).status_code == 200
    with transaction(app.state.sessions) as s:
        users.update_user(s, users.get_user(s, world["annotator"]), is_active=False, actor_id=world["admin"])
    assert client.post(f"/api/v1/stages/{world['stage']}/claim", headers=world["ann"]).status_code == 401


def test_a_page_session_ends_on_the_next_request_whoever_deactivates_the_user(client, app, world):
    """A page looks its session and user up on every request (one read by primary key): another
    process deactivating the user ends the session on its next page."""
    login(client, "hot")
    assert client.get("/", follow_redirects=False).status_code == 200
    with transaction(app.state.sessions) as s:
        s.execute(sa.text("UPDATE users SET is_active = false WHERE id = :u"), {"u": world["annotator"]})
    assert client.get("/", follow_redirects=False).status_code == 303


def test_bearer_calls_get_no_cookie_and_keep_the_security_headers(client, world):
    r = client.post(f"/api/v1/stages/{world['stage']}/claim", headers=world["ann"])
    assert r.status_code == 200
    assert "set-cookie" not in r.headers
    assert r.headers["x-frame-options"] == "DENY" and "default-src 'self'" in r.headers["content-security-policy"]
    assert r.headers["server-timing"].startswith("app;dur=")
    page = client.get("/login")  # pages keep their cookie session
    assert "vlcurate_session" in page.headers.get("set-cookie", "") and page.headers["x-frame-options"] == "DENY"


def test_the_claim_answer_is_the_screen_data(client, app, world):
    with transaction(app.state.sessions) as s:
        item_id = s.scalar(sa.text("SELECT min(id) FROM items WHERE stage_id = :s"), {"s": world["stage"]})
        suggestions.store(s, item_id, world["stage"], "choice", "m", {"choice": "a"}, model_version="1", score=0.25)
        suggestions.store(s, item_id, world["stage"], "choice", "m", {"choice": "b"}, model_version="2", score=0.5)
    body = client.post(f"/api/v1/stages/{world['stage']}/claim", headers=world["ann"]).json()
    with transaction(app.state.sessions) as s:
        screen = annotation.open_assignment(s, body["assignment_id"], world["annotator"])
        lease = screen.assignment.lease_until.isoformat()
    assert body == {
        "assignment_id": screen.assignment.id, "item_id": item_id, "lease_until": lease, "data": screen.item.data,
        "assets": screen.item.assets, "results": screen.results, "suggestions": [v.__dict__ for v in screen.suggestions.values()],
    }
    assert [s["payload"] for s in body["suggestions"]] == [{"choice": "b"}]
    # Asked again, the live lease comes back (a client that lost the answer).
    assert client.post(f"/api/v1/stages/{world['stage']}/claim", headers=world["ann"]).json() == body


def test_claim_plan_stays_on_claimable_rows_with_stale_statistics(committed, settings, storage):
    """Most items finished in one transaction, no ANALYZE since: the claim still reads the claimable
    rows through the partial index, not the finished ones or the annotator's assignments."""
    _, stage_id = make_choice_project(committed, settings, storage, 20)
    user = factories_user(committed)
    with transaction(committed) as s:
        s.execute(sa.text("ANALYZE items"))
        s.execute(sa.text(
            "INSERT INTO items (project_id, external_id, data, stage_id, status, slots_left)"
            " SELECT project_id, 'x' || g, '{}', stage_id, 'done', 0 FROM items, generate_series(1, 5000) g WHERE id = (SELECT min(id) FROM items)"
        ))
        plan = "\n".join(s.execute(sa.text(
            "EXPLAIN (ANALYZE, BUFFERS) " + str(_take_fresh_sql())), {"stage": stage_id, "user": user, "floor": 0}).scalars())
    assert "ix_items_claimable" in plan, plan


def test_a_claim_after_most_items_finished_reads_few_pages_before_vacuum(committed, settings, storage):
    """Most of a stage finished in one transaction, no VACUUM or ANALYZE since: the partial index
    still holds every finished item's entry, and the claim's walk starts past them at the floor."""
    from app import queue

    _, stage_id = make_choice_project(committed, settings, storage, 3)
    user = factories_user(committed)
    with transaction(committed) as s:
        _add_claimable_copies(s)
    with transaction(committed) as s:
        last = _finish_all_but_the_last_ten(s, stage_id)
    try:
        with transaction(committed) as s:
            claimed = annotation.claim(s, stage_id, user)
            assert claimed.item_id == last - 10  # the lowest claimable item
            floor = queue._floor(s, stage_id)
            plan = "\n".join(s.execute(sa.text("EXPLAIN (ANALYZE, BUFFERS) " + str(_take_fresh_sql())),
                                       {"stage": stage_id, "user": user, "floor": floor}).scalars())
        lines = plan.splitlines()
        scan = next(n for n, line in enumerate(lines) if " on items i " in line)  # the pick's walk
        buffers = next(line for line in lines[scan:] if "Buffers:" in line)
        # From the start, the walk reads the index pages of 20,000 finished items (~60); from the floor, a few.
        assert sum(int(n) for n in re.findall(r"=(\d+)", buffers)) < 20, plan
    finally:
        with transaction(committed) as s:
            s.execute(sa.text("ALTER TABLE items RESET (autovacuum_enabled)"))


def test_the_floor_read_from_the_start_walks_the_claimable_index_with_stale_statistics(committed, settings, storage):
    """Statistics taken while a stage's items were all claimable, most of them finished since (no
    ANALYZE): the lowest claimable id, read from the start every FULL_FLOOR_SECONDS, still walks the
    partial index. Through the primary key it visited every finished row (260 ms on a 1M-item stage
    at 90 % done, measured)."""
    from app import queue

    _, stage_id = make_choice_project(committed, settings, storage, 3)
    with transaction(committed) as s:
        _add_claimable_copies(s, data="jsonb_build_object('question', repeat('x', 200))")
        s.execute(sa.text("ANALYZE items"))
    try:
        with transaction(committed) as s:
            last = _finish_all_but_the_last_ten(s, stage_id)
        with transaction(committed) as s:
            params = {"stage": stage_id, "since": 0}
            assert s.scalar(queue._LOWEST_CLAIMABLE, params) == last - 10
            plan = "\n".join(s.execute(sa.text("EXPLAIN " + queue._LOWEST_CLAIMABLE.text), params).scalars())
        assert "ix_items_claimable" in plan and "pk_items" not in plan, plan
    finally:
        with transaction(committed) as s:
            s.execute(sa.text("ALTER TABLE items RESET (autovacuum_enabled)"))


def test_claims_and_screens_run_generic_plans_and_leave_the_other_transactions_alone(committed, settings, storage):
    """A claim and an annotation screen run their prepared statements from a generic plan, made once
    per connection, from the first run on: left to choose, PostgreSQL planned the pick of one stage
    anew on every claim (0.67 ms of planning for 0.43 ms of running, bench/http_bench.py's matrix).
    A submit, in a transaction of its own, still starts with the custom plans PostgreSQL makes first."""
    from app import queue
    from app.db import normalize_url, session_factory

    stages = [make_choice_project(committed, settings, storage, 12)[1] for _ in range(2)]
    user = factories_user(committed)
    engine = sa.create_engine(normalize_url(settings.database_url), pool_size=1, max_overflow=0)  # one connection: one plan cache
    try:
        sessions = session_factory(engine)
        for n in range(20):
            stage = stages[n % 2]
            with transaction(sessions) as s:
                claimed = annotation.claim(s, stage, user, answer=True)
                annotation.claim_json(s, claimed, stage)
            with transaction(sessions) as s:
                annotation.open_assignment(s, claimed.assignment_id, user)
                annotation.upcoming_images(s, stage, user, claimed.item_id)
            with transaction(sessions) as s:
                annotation.submit(s, claimed.assignment_id, user, {"choice": "a"}, f"k{n}")
        with engine.connect() as conn:
            plans = {sql: (generic, custom) for sql, generic, custom in conn.execute(sa.text(
                "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE NOT from_sql"))}
    finally:
        engine.dispose()

    def counts(statement: sa.TextClause) -> tuple[int, int]:
        return next(v for sql, v in plans.items() if _same(sql, statement.text))

    # The pick and the look-ahead run after the statement that sets it (the claim's first, the screen's).
    for statement in (queue._take_fresh(annotation._ITEM_ANSWER), queue._PEEK_FRESH):
        generic, custom = counts(statement)
        assert custom == 0 and generic > 0, (statement.text[:80], generic, custom)
    _, custom = counts(submit_statements.LOCK_FOR_SUBMIT)
    assert custom > 0, "the submit's transaction ran under the claim's setting"


def _same(prepared: str, text: str) -> bool:
    """Whether `prepared` (as PostgreSQL holds it, $1, $2, ...) is `text` (with :names)."""
    return re.sub(r"\$\d+", "?", prepared).split() == re.sub(r"(?<!:):(\w+)", "?", text).split()


def _add_claimable_copies(session, data: str = "'{}'") -> None:
    """20,000 claimable copies of the first item, in its stage, with autovacuum off on `items`
    (the test resets it); `data` is their data as an SQL expression."""
    session.execute(sa.text("ALTER TABLE items SET (autovacuum_enabled = false)"))
    session.execute(sa.text(
        "INSERT INTO items (project_id, external_id, data, stage_id, status, slots_left)"
        f" SELECT project_id, 'x' || g, {data}, stage_id, 'active', 1 FROM items, generate_series(1, 20000) g"
        " WHERE id = (SELECT min(id) FROM items)"
    ))


def _finish_all_but_the_last_ten(session, stage_id: int) -> int:
    """Mark every item of the stage done but its last ten, in one statement; the stage's last item id."""
    last = session.scalar(sa.text("SELECT max(id) FROM items WHERE stage_id = :s"), {"s": stage_id})
    session.execute(sa.text("UPDATE items SET status = 'done', slots_left = 0 WHERE stage_id = :s AND id < :last - 10"),
                    {"s": stage_id, "last": last})
    return last


def factories_user(sessions) -> int:
    with transaction(sessions) as s:
        return factories.user(s)


def _take_fresh_sql():
    from app import queue

    return queue._take_fresh(None).text  # the screens' claim (the API's adds its answer)


def test_serve_picks_one_worker_per_cpu_up_to_four_and_one_on_the_embedded_database(monkeypatch):
    monkeypatch.setattr(server, "_cpus", lambda: 2)
    assert server.default_workers() == 2
    monkeypatch.setattr(server, "_cpus", lambda: 64)
    assert server.default_workers() == 4
    assert server.default_workers(embedded=True) == 1


def test_a_served_process_freezes_its_start_up_objects_and_collects_young_objects_less_often(settings):
    import json
    import subprocess
    import sys

    from app.tuning import SERVE_GC_GEN0

    probe = ("import gc, json; from app.main import serve_app; serve_app(); "
             "print(json.dumps([gc.get_threshold(), gc.get_freeze_count()]))")
    out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "DATABASE_URL": settings.database_url,
                         "VLCURATE_DATA_DIR": str(settings.data_dir)}, capture_output=True, text=True, check=True)
    threshold, frozen = json.loads(out.stdout.strip().splitlines()[-1])
    assert threshold == [SERVE_GC_GEN0, 10, 10] and frozen > 50_000


def test_a_submit_that_finalizes_an_item_is_three_statements(committed, settings, storage):
    """Lock, one read of what the submit decides on, one statement of writes: consolidation, the
    final record and the item's move included."""
    _, stage_id = make_choice_project(committed, settings, storage, 2)
    user = factories_user(committed)
    with transaction(committed) as s:
        claimed = annotation.claim(s, stage_id, user)
    statements: list[str] = []
    with transaction(committed) as s:
        engine = s.get_bind()
        sa.event.listen(engine, "before_cursor_execute", record := lambda conn, cursor, sql, *rest: statements.append(sql))
        try:
            result = annotation.submit(s, claimed.assignment_id, user, {"choice": "a"}, "one")
        finally:
            sa.event.remove(engine, "before_cursor_execute", record)
    assert len(statements) == 3, statements
    assert result.item_status == "done" and not result.replayed
    with transaction(committed) as s:
        assert s.scalar(sa.text("SELECT count(*) FROM item_results WHERE item_id = :i"), {"i": claimed.item_id}) == 1
        assert s.scalar(sa.text("SELECT status FROM assignments WHERE id = :a"), {"a": claimed.assignment_id}) == "submitted"
        again = annotation.submit(s, claimed.assignment_id, user, {"choice": "a"}, "one")
    assert again.replayed and again.annotation_id == result.annotation_id


def test_the_api_and_the_pages_answer_under_a_root_path_and_each_path_reaches_its_route(app, world):
    """The API's routers refuse a path outside /api/v1 before trying their routes (limits.ApiRouter):
    behind a proxy's path prefix (root_path) the API and the pages still answer."""
    from fastapi.testclient import TestClient

    for root in ("", "/curate"):
        with TestClient(app, root_path=root) as c:
            claimed = c.post(f"{root}/api/v1/stages/{world['stage']}/claim", headers=world["ann"])
            assert claimed.status_code == 200 and claimed.json()["item_id"]
            assert c.get(f"{root}/api/v1/no-such-thing", headers=world["ann"]).status_code == 404
            assert "password" in c.get(f"{root}/login").text
            # An annotation page is matched too: without a session it sends the browser to log in.
            screen = c.get(f"{root}/assignments/{claimed.json()['assignment_id']}", follow_redirects=False)
            assert screen.status_code in (302, 303) and "/login" in screen.headers["location"]
