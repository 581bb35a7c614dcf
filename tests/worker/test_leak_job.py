"""The leak report as a job: the API queues it (202) and no request decodes an image; the worker's job
hashes the images stored without a hash, names each step with its progress (the export page follows
it as it runs) and stores the report that the API then returns."""

from __future__ import annotations

import threading
import time

import sqlalchemy as sa

from app.db import transaction
from app.models import Asset, ImageHash, JobRun, LeakReport
from tests import factories
from tests.conftest import csrf_from, login
from tests.services.test_leaks import planted_project
from tests.worker.test_queued_requests import run_worker


def count(sessions, model) -> int:
    with transaction(sessions) as s:
        return s.scalar(sa.select(sa.func.count()).select_from(model))


def test_the_api_queues_the_report_and_the_job_hashes_what_lacks_a_hash(committed, client, app, settings, storage, tmp_path):
    sessions = app.state.sessions
    with transaction(sessions) as s:
        admin = factories.bearer(s, "boss", "admin")
        project_id, _ = planted_project(s, settings, storage, tmp_path, distinct=60)
        bare, _ = factories.project(s, "generic.choice", name="no splits")
    images = count(sessions, Asset)
    assert count(sessions, ImageHash) == images == 84  # each image hashed after its import
    with transaction(sessions) as s:
        s.execute(sa.delete(ImageHash))  # as images stored before hashes were kept at import
    base = f"/api/v1/projects/{project_id}/leaks"

    assert client.get(f"{base}/job", headers=admin).json()["status"] == "none"
    none_yet = client.get(base, headers=admin)
    assert none_yet.status_code == 404 and "No leak report of split version 1 yet" in none_yet.json()["detail"]
    # Bad asks are refused and queue nothing.
    assert client.post("/api/v1/projects/999999/leaks", headers=admin).status_code == 404
    no_split = client.post(f"/api/v1/projects/{bare}/leaks", headers=admin)
    assert no_split.status_code == 404 and "no split definition" in no_split.json()["detail"]

    asked = client.post(base, headers=admin)
    assert asked.status_code == 202, asked.text
    job = asked.json()
    assert job["status"] == "queued" and job["job_id"] and job["poll"] == f"{base}/job" and job["report"] == base
    again = client.post(base, headers=admin)  # asked again while it waits: the same job
    assert again.status_code == 202 and again.json()["job_id"] == job["job_id"]
    assert client.get(job["poll"], headers=admin).json()["status"] == "queued"
    with transaction(sessions) as s:
        queued = s.execute(sa.text("SELECT args FROM procrastinate_jobs WHERE task_name = 'vlcurate:leaks'")).scalars().all()
    assert queued == [{"project_id": project_id}]
    # The requests hashed nothing and made no report: the worker does both.
    assert count(sessions, ImageHash) == 0 and count(sessions, LeakReport) == 0

    run_worker(app.state.settings, ["maintenance"])
    state = client.get(job["poll"], headers=admin).json()
    assert state["status"] == "succeeded" and state["job_id"] == job["job_id"] and state["error"] is None
    assert state["step"] == "grouping" and state["done"] == state["total"] == 1  # its last step, complete
    assert count(sessions, ImageHash) == images  # the job hashed every image that had no hash
    report = client.get(job["report"], headers=admin).json()
    assert report["hashed_now"] == images and report["leaks"] == {"test / train": 30}
    # The near copies (re-encoded, resized, cropped) are found by the hashes the job computed.
    assert sum("near image" in g["kinds"] for g in report["groups"]) == 18

    kept = client.post(f"{base}/keep-together", headers=admin)
    assert kept.status_code == 201 and kept.json()["version"] == 2
    assert client.post(base, headers=admin).status_code == 202
    run_worker(app.state.settings, ["maintenance"])
    fixed = client.get(base, headers=admin).json()
    assert fixed["version"] == 2 and fixed["leaked_groups"] == 0 and fixed["hashed_now"] == 0
    assert client.get(base, params={"version": 1}, headers=admin).json()["leaked_groups"] == 30
    with transaction(sessions) as s:
        runs = s.execute(sa.select(JobRun.status, JobRun.step).where(JobRun.task == "leaks")).all()
    assert runs == [("succeeded", "grouping")] * 2


def test_the_export_page_shows_the_running_step_and_its_progress(committed, client, app, settings, storage, tmp_path, engine):
    sessions = app.state.sessions
    with transaction(sessions) as s:
        factories.user(s, "boss", "admin")
        project_id, _ = planted_project(s, settings, storage, tmp_path, distinct=20)
        s.execute(sa.delete(ImageHash))
    images = count(sessions, Asset)
    login(client, "boss")
    page = client.get(f"/projects/{project_id}/export").text
    assert client.post(f"/projects/{project_id}/leaks", data={"csrf_token": csrf_from(page)}, follow_redirects=False).status_code == 303
    fragment = {"HX-Request": "true", "HX-Target": "leaks"}

    # Another transaction holds an uncommitted hash of one of the images: the job's first batch of
    # hashes waits for it, in the middle of the "hashing images" step.
    with engine.connect() as blocker:
        first = blocker.scalar(sa.select(sa.func.min(Asset.sha256)))
        blocker.execute(sa.insert(ImageHash).values(sha256=first, phash=0))
        worker = threading.Thread(target=run_worker, args=(app.state.settings, ["maintenance"]))
        worker.start()
        try:
            deadline = time.monotonic() + 60
            while count(sessions, JobRun) == 0 or _step(sessions) != "hashing images":
                assert time.monotonic() < deadline and worker.is_alive(), "the job never reached its hashing step"
                time.sleep(0.05)
            running = client.get(f"/projects/{project_id}/export", headers=fragment).text
        finally:
            blocker.rollback()
            worker.join(120)
    assert running.lstrip().startswith('<section id="leaks"') and 'hx-trigger="every 2s"' in running
    assert "Finding leaks (job" in running and ": hashing images" in running
    assert f'<progress value="0" max="{images}" aria-label="leak search progress">' in running

    done = client.get(f"/projects/{project_id}/export", headers=fragment).text
    assert 'id="leak-job"' not in done and "hx-trigger" not in done
    assert "leaked groups" in done and "data-leak-group" in done and count(sessions, ImageHash) == images


def _step(sessions) -> str:
    with transaction(sessions) as s:
        return s.scalar(sa.select(JobRun.step).where(JobRun.task == "leaks"))
