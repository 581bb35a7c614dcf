"""Admin pages through the app: the jobs page on real procrastinate rows, the worker notice, adding users."""

from __future__ import annotations

import json
import re

import pytest
import sqlalchemy as sa

from app.db import transaction
from tests import factories
from tests.conftest import csrf_from, login, make_choice_project, start_annotating


@pytest.fixture
def boss(app, client):
    with transaction(app.state.sessions) as s:
        factories.user(s, "boss", "admin")
    login(client, "boss")
    return "boss"


def _sql(app, query: str, **params):
    with transaction(app.state.sessions) as s:
        result = s.execute(sa.text(query), params)
        return result.all() if result.returns_rows else []


def _defer(app, task: str, args: dict, queue: str = "suggest") -> int:
    """A job row as procrastinate's own defer writes it (its triggers record the events)."""
    return _sql(
        app,
        "SELECT unnest(procrastinate_defer_jobs_v1(ARRAY[ROW(:queue, :task, 0, NULL, NULL, CAST(:args AS jsonb), NULL)::procrastinate_job_to_defer_v1]))",
        queue=queue, task=task, args=json.dumps(args),
    )[0][0]


def _defer_periodic(app, timestamp: int) -> int:
    """A reconcile run as the worker's scheduler defers it, once per minute."""
    return _sql(
        app,
        "SELECT procrastinate_defer_periodic_job_v2('maintenance', NULL, NULL, 'vlcurate:reconcile', 0, 'reconcile', :ts, CAST(:args AS jsonb))",
        ts=timestamp, args=json.dumps({"timestamp": timestamp}),
    )[0][0]


def _set_status(app, job_id: int, *statuses: str) -> None:
    for status in statuses:
        _sql(app, "UPDATE procrastinate_jobs SET status = CAST(:st AS procrastinate_job_status) WHERE id = :id", st=status, id=job_id)


def _rows(html: str, cls: str) -> list[str]:
    return re.findall(rf'<tr class="{cls}[^"]*">(.*?)</tr>', html, re.S)


@pytest.mark.committed  # the job tables as this test leaves them: empty first, whatever ran before
def test_jobs_page_groups_periodic_runs_and_names_projects_and_stages(app, client, boss):
    with transaction(app.state.sessions) as s:
        project_id, (filter_id, recaption_id) = factories.project(s, ["colorswap.filter", "colorswap.recaption"], name="ColorSwap demo")
        s.execute(sa.text("UPDATE stages SET name = 'filter' WHERE id = :id"), {"id": filter_id})
        export_id = s.execute(
            sa.text("INSERT INTO exports (project_id, format, target) VALUES (:p, 'jsonl', '/tmp/x') RETURNING id"), {"p": project_id}
        ).scalar_one()
    # An hour of reconcile runs, one a minute, the last one still waiting, one that failed.
    runs = [_defer_periodic(app, 1_700_000_000 + 60 * m) for m in range(60)]
    for job_id in runs[:-1]:
        _set_status(app, job_id, "doing", "succeeded")
    _set_status(app, runs[10], "failed")
    suggest = _defer(app, "vlcurate:suggest", {"stage_id": filter_id, "kind": "colorswap.itm", "item_ids": [1, 2, 3]})
    agreement = _defer(app, "vlcurate:agreement", {"stage_id": recaption_id, "samples": 1000, "seed": 0}, "maintenance")
    export = _defer(app, "vlcurate:export", {"export_id": export_id}, "export")
    gone = _defer(app, "vlcurate:suggest", {"stage_id": 999_999, "kind": "colorswap.itm", "item_ids": [7]})
    _set_status(app, export, "doing", "succeeded")

    page = client.get("/admin/jobs").text
    (periodic,) = _rows(page, "periodic-row")
    cells = re.findall(r"<td>(.*?)</td>", periodic, re.S)
    assert cells[0] == "<code>reconcile</code>"
    assert "succeeded" in cells[2] and cells[3:] == ["60", "1", "1"]  # runs, failed, waiting
    assert re.search(r"<time datetime=\"\d{4}-\d\d-\d\dT", cells[1]) and re.search(r"\(\d+ s ago\)", cells[1])

    one_off = {int(re.search(r"<td>(\d+)</td>", r).group(1)): r for r in _rows(page, "job-row")}
    assert set(one_off) == {suggest, agreement, export, gone}  # no reconcile row among them
    assert "colorswap.itm · 3 items" in one_off[suggest]
    assert f'<a href="/projects/{project_id}">ColorSwap demo › filter</a>' in one_off[suggest]
    assert "agreement report" in one_off[agreement] and "ColorSwap demo › " in one_off[agreement]
    assert f"jsonl export #{export_id}" in one_off[export] and f'<a href="/projects/{project_id}">ColorSwap demo</a>' in one_off[export]
    assert "stage 999999 (deleted)" in one_off[gone]
    assert "stage " + str(filter_id) not in page
    # The counts are of one-off jobs: 60 reconcile runs would drown them.
    assert '<span class="job-count status-todo">todo 3</span>' in page and '<span class="job-count status-succeeded">succeeded 1</span>' in page


@pytest.mark.committed  # the job tables as this test leaves them: empty first, whatever ran before
def test_no_worker_notice_until_a_worker_sends_heartbeats(app, client, boss):
    notice = "No worker is running"
    _defer(app, "vlcurate:export", {"export_id": 1}, "export")
    assert notice in client.get("/admin/jobs").text
    fragment = client.get("/admin/worker", headers={"HX-Request": "true", "HX-Target": "worker-notice"}).text
    assert notice in fragment and "vlcurate worker" in fragment and "1 job waiting" in fragment and "<html" not in fragment
    # Every admin page loads the notice.
    home = client.get("/").text
    assert 'hx-get="/admin/worker"' in home and 'hx-trigger="load, every 30s"' in home
    assert 'hx-get="/admin/worker"' in client.get("/admin/users").text

    # A worker that stopped beating long ago does not count; the notice says when it was last heard.
    _sql(app, "INSERT INTO procrastinate_workers (last_heartbeat) VALUES (now() - interval '2 hours')")
    assert "the last heartbeat came 2 h ago" in client.get("/admin/worker").text

    # A fresh heartbeat: no notice.
    _sql(app, "INSERT INTO procrastinate_workers DEFAULT VALUES")
    assert client.get("/admin/worker").text.strip() == ""
    jobs = client.get("/admin/jobs").text
    assert notice not in jobs and "1 worker running; last heartbeat 0 s ago." in jobs


def test_annotation_screens_load_no_worker_notice(app, client, boss, settings, storage):
    _, stage_id = make_choice_project(app.state.sessions, settings, storage, 2)
    screen = start_annotating(client, stage_id)
    assert "/assignments/" in str(screen.url) and 'name="choice"' in screen.text
    assert 'hx-get="/admin/worker"' not in screen.text


def test_worker_notice_is_for_admins_and_reviewers(app, client):
    with transaction(app.state.sessions) as s:
        factories.user(s, "rev", "reviewer")
        factories.user(s, "ann", "annotator")
    login(client, "rev")
    assert "No worker is running" in client.get("/admin/worker").text
    assert 'hx-get="/admin/worker"' in client.get("/").text
    client.cookies.clear()
    login(client, "ann")
    assert client.get("/admin/worker").status_code == 403
    assert 'hx-get="/admin/worker"' not in client.get("/").text


def _log_in_as(client, username: str, password: str):
    client.cookies.clear()
    page = client.get("/login")
    return client.post("/login", data={"username": username, "password": password, "csrf_token": csrf_from(page.text), "next": "/"}, follow_redirects=False)


def test_adding_a_user_shows_a_generated_one_time_password_once(app, client, boss, caplog):
    token = csrf_from(client.get("/admin/users").text)
    r = client.post("/admin/users", data={"csrf_token": token, "username": "newbie", "role": "reviewer"}, follow_redirects=False)
    # Post, redirect, get: a reload shows the page again without adding anyone; nothing secret in the URL.
    assert r.status_code == 303 and r.headers["location"] == "/admin/users"
    page = client.get("/admin/users")
    assert page.headers["cache-control"] == "no-store"
    password = re.search(r'<code id="one-time-password">([^<]+)</code>', page.text).group(1)
    assert len(password) >= 12
    assert "User <strong>newbie</strong> added (reviewer); one-time password:" in page.text and "must change it at first login" in page.text
    again = client.get("/admin/users")
    assert password not in again.text and "one-time password:" not in again.text and "no-store" not in again.headers.get("cache-control", "")
    assert password not in caplog.text

    with transaction(app.state.sessions) as s:
        stored = s.execute(sa.text("SELECT role, must_change_password, password_hash FROM users WHERE username = 'newbie'")).one()
        events = s.execute(sa.text("SELECT detail::text FROM audit_events WHERE action = 'user.create'")).scalars().all()
    assert stored.role == "reviewer" and stored.must_change_password and password not in stored.password_hash
    assert all(password not in e for e in events)

    # The new user logs in with it and is sent to choose their own password first.
    r = _log_in_as(client, "newbie", password)
    assert r.status_code == 303 and r.headers["location"] == "/account/password"
    assert client.get("/", follow_redirects=False).headers["location"] == "/account/password"


def test_adding_a_user_keeps_what_was_typed_on_errors(app, client, boss):
    token = csrf_from(client.get("/admin/users").text)
    r = client.post("/admin/users", data={"csrf_token": token, "username": "no spaces!", "role": "reviewer"})
    assert r.status_code == 422 and 'value="no spaces!"' in r.text and "<option selected>reviewer</option>" in r.text
    assert "A username has 2 to 64" in r.text and "one-time password:" not in r.text
    r = client.post("/admin/users", data={"csrf_token": token, "username": "boss", "role": "annotator"})
    assert r.status_code == 409 and "already exists" in r.text and 'value="boss"' in r.text
    r = client.post("/admin/users", data={"csrf_token": token, "username": "newbie", "role": "owner"})
    assert r.status_code == 422 and "Unknown role" in r.text
    with transaction(app.state.sessions) as s:
        assert s.execute(sa.text("SELECT count(*) FROM users")).scalar() == 1


def test_a_new_one_time_password_replaces_the_old_one(app, client, boss):
    with transaction(app.state.sessions) as s:
        uid = factories.user(s, "forgetful", "annotator")
    token = csrf_from(client.get("/admin/users").text)
    r = client.post(f"/admin/users/{uid}/password", data={"csrf_token": token}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/admin/users"
    page = client.get("/admin/users").text
    password = re.search(r'<code id="one-time-password">([^<]+)</code>', page).group(1)
    assert "New one-time password for <strong>forgetful</strong>" in page
    assert _log_in_as(client, "forgetful", factories.PASSWORD).status_code == 401
    assert _log_in_as(client, "forgetful", password).headers["location"] == "/account/password"


def test_user_forms_redirect_after_posting(app, client, boss):
    with transaction(app.state.sessions) as s:
        uid = factories.user(s, "ann", "annotator")
    token = csrf_from(client.get("/admin/users").text)
    r = client.post(f"/admin/users/{uid}", data={"csrf_token": token, "role": "reviewer", "is_active": "on"}, follow_redirects=False)
    assert r.status_code == 303 and "Saved <strong>ann</strong>: reviewer, active." in client.get("/admin/users").text
    r = client.post(f"/admin/users/{uid}/tokens", data={"csrf_token": token, "name": "cli"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/admin/users"
    page = client.get("/admin/users").text
    plain = re.search(r'<code id="new-token">(vlc_[^<]+)</code>', page).group(1)
    assert plain not in client.get("/admin/users").text
    token_id = re.search(r'action="/admin/tokens/(\d+)/revoke"', page).group(1)
    r = client.post(f"/admin/tokens/{token_id}/revoke", data={"csrf_token": token}, follow_redirects=False)
    assert r.status_code == 303 and f"API token {token_id} revoked." in client.get("/admin/users").text
    assert client.get("/api/v1/projects", headers={"Authorization": f"Bearer {plain}"}).status_code == 401


def test_refused_user_changes_keep_what_was_chosen(app, client, boss):
    with transaction(app.state.sessions) as s:
        boss_id = s.execute(sa.text("SELECT id FROM users WHERE username = 'boss'")).scalar()
    token = csrf_from(client.get("/admin/users").text)
    r = client.post(f"/admin/users/{boss_id}", data={"csrf_token": token, "role": "reviewer", "is_active": "on"})
    assert r.status_code == 409 and "At least one active admin must remain." in r.text
    row = re.search(rf'action="/admin/users/{boss_id}".*?</form>', r.text, re.S).group(0)
    assert "<option selected>reviewer</option>" in row
    # Your own password is changed on your account page: a new one would end this session unseen.
    r = client.post(f"/admin/users/{boss_id}/password", data={"csrf_token": token})
    assert r.status_code == 409 and "Change your own password" in r.text
    assert f'action="/admin/users/{boss_id}/password"' not in client.get("/admin/users").text


def test_the_api_schema_documents_the_api_with_its_bearer_tokens(client):
    spec = client.get("/openapi.json").json()
    assert spec["components"]["securitySchemes"]["token"] == {
        "type": "http", "scheme": "bearer", "description": spec["components"]["securitySchemes"]["token"]["description"]
    }
    api_ops = [op for path, ops in spec["paths"].items() if path.startswith("/api/v1/") for op in ops.values()]
    assert len(api_ops) >= 15 and all(op["security"] == [{"token": []}] for op in api_ops)
    # The pages are not part of the HTTP API.
    assert set(spec["paths"]) - {p for p in spec["paths"] if p.startswith("/api/v1/")} == {"/healthz"}
    docs = client.get("/api/docs")
    assert docs.status_code == 200
    bundle = re.search(r'src="(/static/vendor/swagger-ui-bundle-5\.35\.0\.js\?v=\w+)"', docs.text)
    assert bundle and client.get(bundle[1]).status_code == 200
    assert "<script>" not in docs.text and 'data-openapi-url="/openapi.json"' in docs.text
