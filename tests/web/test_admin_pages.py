"""Admin pages through the app: the jobs page on real procrastinate rows, the worker notice, adding users."""

from __future__ import annotations

import json
import re

import pytest
import sqlalchemy as sa

from app.db import transaction
from tests import factories
from tests.conftest import login


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
    assert re.search(r"<time datetime=\"\d{4}-\d\d-\d\dT", cells[1])

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


def test_no_worker_notice_until_a_worker_sends_heartbeats(app, client, boss):
    notice = "No worker is running"
    _defer(app, "vlcurate:export", {"export_id": 1}, "export")
    assert notice in client.get("/admin/jobs").text
    fragment = client.get("/admin/worker", headers={"HX-Request": "true", "HX-Target": "worker-notice"}).text
    assert notice in fragment and "vlcurate worker" in fragment and "1 job waiting" in fragment and "<html" not in fragment
    # Every admin page loads the notice.
    home = client.get("/").text
    assert 'hx-get="/admin/worker"' in home and 'hx-trigger="load, every 30s"' in home

    # A worker that stopped beating long ago does not count; the notice says when it was last heard.
    _sql(app, "INSERT INTO procrastinate_workers (last_heartbeat) VALUES (now() - interval '2 hours')")
    assert "the last heartbeat came 2 h ago" in client.get("/admin/worker").text

    # A fresh heartbeat: no notice.
    _sql(app, "INSERT INTO procrastinate_workers DEFAULT VALUES")
    assert client.get("/admin/worker").text.strip() == ""
    jobs = client.get("/admin/jobs").text
    assert notice not in jobs and "1 worker running; last heartbeat 0 s ago." in jobs


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
