"""Suggestion jobs on the real queue: stored once, errors on the jobs page, and a worker killed mid-job."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa

from app.datasets.visargs.demo import visargs_records
from app.datasets.workflow import ItemContext
from app.db import transaction
from app.models import Item, JobRun, Suggestion
from app.services.annotation import annotation
from app.services.imports import imports
from app.services.projects import projects
from app.settings import Settings
from app.worker import availability, jobs, runtime, suggest_batch, upkeep
from tests.conftest import colorswap_records, login, make_user, start_annotating

VLCURATE = str(Path(sys.executable).parent / "vlcurate")


def _import(sessions, settings, storage, name, workflows, records, files) -> tuple[int, list[int]]:
    with tempfile.TemporaryDirectory() as tmp, transaction(sessions) as s:
        for rel, data in files.items():
            Path(tmp, rel).parent.mkdir(parents=True, exist_ok=True)
            Path(tmp, rel).write_bytes(data)
        project = projects.create_project(s, name, [projects.StageSpec(workflow=w) for w in workflows])
        body = "\n".join(json.dumps(r) for r in records).encode()
        imports.import_items(s, project.id, body, "r.jsonl", settings=settings, storage=storage, images=imports.ImageSource(settings, storage, base=Path(tmp)))
        return project.id, [st.id for st in projects.stages_of(s, project.id)]


def _with(settings: Settings, **changes) -> Settings:
    return settings.model_copy(update=changes)


def test_colorswap_scores_are_stored_once_and_preselect(committed, settings, storage, tiny_clip):
    records, files = colorswap_records(3)
    project_id, (filter_id, _) = _import(committed, settings, storage, "cs", ["colorswap.filter", "colorswap.recaption"], records, files)
    cfg = _with(settings, clip_model_dir=tiny_clip)
    runtime.configure(cfg)
    with transaction(committed) as s:
        batches = jobs.missing_batches(s, cfg, project_id=project_id)
    assert [(b.stage_id, b.kind, len(b.item_ids)) for b in batches] == [(filter_id, "colorswap.itm", 3)]
    assert suggest_batch.compute_suggestions(filter_id, "colorswap.itm", batches[0].item_ids) == 3
    assert suggest_batch.compute_suggestions(filter_id, "colorswap.itm", batches[0].item_ids) == 3  # a rerun replaces
    with transaction(committed) as s:
        rows = s.scalars(sa.select(Suggestion)).all()
        assert len(rows) == 3 and {r.model for r in rows} == {"tiny-clip"}
        assert all(len(r.payload["scores"]) == 4 and len(r.payload["scores"][0]) == 2 for r in rows)
        assert jobs.missing_batches(s, cfg, project_id=project_id) == []
        screen_item = s.get(Item, batches[0].item_ids[0])
    from app.datasets import get_workflow
    from app.services.annotation import suggestions

    with transaction(committed) as s:
        found = suggestions.for_item(s, screen_item.id, filter_id)
    values = get_workflow("colorswap.filter").initial_values(ItemContext(screen_item.data, suggestions=found))
    assert set(values) == {"choice_1", "choice_2"} and values["choice_1"] != values["choice_2"]


def test_kinds_that_cannot_run_are_not_enqueued_by_reconcile(committed, settings, storage):
    records, files = colorswap_records(1)
    project_id, _ = _import(committed, settings, storage, "cs2", ["colorswap.filter"], records, files)
    assert availability.unavailable("colorswap.itm", settings) == (
        "VLCURATE_CLIP_MODEL_DIR is not set (a local CLIP model directory; nothing is downloaded)"
    )
    with transaction(committed) as s:
        assert jobs.missing_batches(s, settings, project_id=project_id) == []
        assert len(jobs.missing_batches(s, settings, project_id=project_id, available_only=False)) == 1


def _worker_env(settings: Settings, **extra) -> dict:
    env = {
        **os.environ,
        "DATABASE_URL": settings.database_url,
        "VLCURATE_DATA_DIR": str(settings.data_dir),
        "VLCURATE_SECRET_KEY": settings.secret_key.get_secret_value(),
    }
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _job_status(sessions, job_ids) -> dict[int, str]:
    with transaction(sessions) as s:
        return dict(s.execute(sa.text("SELECT id, status::text FROM procrastinate_jobs WHERE id = ANY(:ids)"), {"ids": job_ids}).all())


def _wait(predicate, timeout: float = 90, proc=None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"worker exited: {proc.stdout.read()}")
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_worker_process_runs_jobs_and_the_jobs_page_shows_errors(committed, settings, storage, app, client, tiny_clip):
    records, files = colorswap_records(2)
    project_id, (filter_id,) = _import(committed, settings, storage, "cs3", ["colorswap.filter"], records, files)
    runtime.configure(settings)
    with transaction(committed) as s:
        ids = s.scalars(sa.select(Item.id).order_by(Item.id)).all()
    queue = jobs.make_app(settings)
    with queue.open():
        ok = jobs.defer_batches(queue, [jobs.Batch(filter_id, "colorswap.itm", [ids[0]])])
        gone = jobs.defer_batches(queue, [jobs.Batch(filter_id, "colorswap.itm", [999_999])])
        # A second copy of a waiting batch is refused by its queueing lock.
        assert jobs.defer_batches(queue, [jobs.Batch(filter_id, "colorswap.itm", [ids[0]])]) == []
    worker = subprocess.Popen(
        [VLCURATE, "worker", "--queues", "suggest"], env=_worker_env(settings, VLCURATE_CLIP_MODEL_DIR=tiny_clip),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        _wait(lambda: set(_job_status(committed, ok + gone).values()) <= {"succeeded", "failed"}, proc=worker)
    finally:
        worker.terminate()
        output = worker.communicate(timeout=20)[0]
    assert _job_status(committed, ok + gone) == {ok[0]: "succeeded", gone[0]: "failed"}, output

    # Without a model directory the job fails with a message naming the setting.
    with queue.open():
        missing = jobs.defer_batches(queue, [jobs.Batch(filter_id, "colorswap.itm", [ids[1]])])
    worker = subprocess.Popen([VLCURATE, "worker", "--queues", "suggest"], env=_worker_env(settings), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait(lambda: _job_status(committed, missing)[missing[0]] == "failed", proc=worker)
    finally:
        worker.terminate()
        worker.wait(20)
    with transaction(committed) as s:
        runs = {r.job_id: r for r in s.scalars(sa.select(JobRun))}
    assert runs[gone[0]].error == "None of the items 999999 exists in stage %d any more (deleted or moved on)." % filter_id
    assert "VLCURATE_CLIP_MODEL_DIR" in runs[missing[0]].error and runs[missing[0]].attempts == 1

    make_user(committed, "boss", "admin")
    login(client, "boss")
    page = client.get("/admin/jobs").text
    assert "None of the items 999999 exists" in page and "VLCURATE_CLIP_MODEL_DIR" in page
    # (The worker's own reconcile job may have queued more batches; these three are ours.)
    for job_id in ok + gone + missing:
        assert '<tr class="job-row status-' in page and f"<td>{job_id}</td>" in page
    fragment = client.get("/admin/jobs", headers={"HX-Request": "true", "HX-Target": "jobs"}).text
    assert fragment.lstrip().startswith('<section id="jobs"') and "<html" not in fragment
    make_user(committed, "ann", "annotator")
    client.cookies.clear()
    login(client, "ann")
    assert client.get("/admin/jobs").status_code == 403


def test_a_worker_killed_mid_job_leaves_nothing_half_written_and_the_batch_runs_again(committed, settings, storage):
    folder = Path(tempfile.mkdtemp())
    records = visargs_records(folder, copies=4)  # 12 posters: one OCR job of several seconds
    files = {r["image"]: (folder / r["image"]).read_bytes() for r in records}
    project_id, (premises_id, grounding_id) = _import(committed, settings, storage, "va", ["visargs.premises", "visargs.grounding"], records, files)
    user_id = make_user(committed, "ann", "annotator")
    for _ in records:
        with transaction(committed) as s:
            claimed = annotation.claim(s, premises_id, user_id)
            item = s.get(Item, claimed.item_id)
            kept = [item.data["candidate_premises"][0].split(";")[0]]
            annotation.submit(s, claimed.assignment_id, user_id, {"visual_premises": kept}, f"k{claimed.item_id}")
    runtime.configure(settings)
    with transaction(committed) as s:
        batches = jobs.missing_batches(s, settings, project_id=project_id)
    assert [(b.kind, len(b.item_ids)) for b in batches] == [("visargs.boxes", 12)]
    queue = jobs.make_app(settings)
    with queue.open():
        (job_id,) = jobs.defer_batches(queue, batches)

    env = _worker_env(settings, VLCURATE_WORKER_STALLED_SECONDS=5)
    first = subprocess.Popen([VLCURATE, "worker", "--queues", "suggest"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait(lambda: _job_status(committed, [job_id])[job_id] == "doing", proc=first)
        time.sleep(1.0)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    assert _job_status(committed, [job_id])[job_id] == "doing"  # nobody finished it
    with transaction(committed) as s:
        # The batch's rows are written in one statement at its end: a kill mid-batch leaves none.
        assert s.scalar(sa.select(sa.func.count()).select_from(Suggestion)) == 0
        assert s.get(JobRun, job_id).status == "running"

    # Once the dead worker's heartbeat is stale, a new worker puts the job back and runs it.
    def stale() -> bool:
        with transaction(committed) as s:
            return bool(s.scalar(sa.text("SELECT bool_and(last_heartbeat < now() - interval '5 seconds') FROM procrastinate_workers")))

    _wait(stale, timeout=30)
    second = subprocess.Popen([VLCURATE, "worker", "--queues", "suggest"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait(lambda: _job_status(committed, [job_id])[job_id] == "succeeded", timeout=120, proc=second)
    finally:
        second.terminate()
        output = second.communicate(timeout=20)[0]
    assert "Re-queued 1 jobs whose worker had stopped" in output
    with transaction(committed) as s:
        per_item = s.execute(sa.select(Suggestion.item_id, sa.func.count()).group_by(Suggestion.item_id)).all()
        run = s.get(JobRun, job_id)
    assert len(per_item) == 12 and {n for _, n in per_item} == {1}
    assert run.status == "succeeded" and run.attempts == 2


def test_a_stalled_job_whose_batch_was_queued_again_runs_again_instead_of_blocking_both(committed, settings, storage):
    # A worker is killed mid-job; before its heartbeat is stale, reconcile queues the batch again
    # (its items still lack the suggestion). The copy waits behind the dead job's lock, and putting
    # the dead job back used to clash with the copy's queueing lock: neither ever ran.
    import asyncio

    records, files = colorswap_records(2)
    project_id, _ = _import(committed, settings, storage, "stall", ["colorswap.filter"], records, files)
    one = _with(settings, worker_batch_size=1)
    with transaction(committed) as s:
        batches = jobs.missing_batches(s, one, project_id=project_id, available_only=False)
    queue = jobs.make_app(settings)
    with queue.open():
        dead, waiting = jobs.defer_batches(queue, batches)
    with transaction(committed) as s:
        worker = s.scalar(sa.text("INSERT INTO procrastinate_workers (last_heartbeat) VALUES (now() - interval '1 hour') RETURNING id"))
        s.execute(sa.text("UPDATE procrastinate_jobs SET status = 'doing', worker_id = :w WHERE id = :id"), {"w": worker, "id": dead})
    with queue.open():
        (copy,) = jobs.defer_batches(queue, batches)  # the waiting batch's copy is refused, the running one's is not

    async def retry() -> int:
        async with queue.open_async():
            return await upkeep.retry_stalled(queue.job_manager, committed, seconds=60)

    assert asyncio.run(retry()) == 1
    assert asyncio.run(retry()) == 0  # already back in the queue
    assert _job_status(committed, [dead, waiting]) == {dead: "todo", waiting: "todo"}
    with transaction(committed) as s:
        assert s.scalar(sa.text("SELECT count(*) FROM procrastinate_jobs WHERE id = :id"), {"id": copy}) == 0
        fetched = [s.scalar(sa.text("SELECT id FROM procrastinate_fetch_job_v2(ARRAY['suggest']::varchar[], NULL)")) for _ in range(3)]
    assert fetched == [dead, waiting, None]  # the dead job runs again, and nothing waits forever


def test_wikido_fit_and_unsupported_spans_reach_the_screen(committed, settings, storage, app, client, tiny_clip):
    from tests.conftest import png_bytes

    records = [
        {"image_id": str(i), "orig_cap": "A stone church in Paris.", "caption": f"A stone church {i} in Paris with a golden dragon.", "image": f"{i}.png"}
        for i in range(2)
    ]
    files = {f"{i}.png": png_bytes((120, 20 * i, 40)) for i in range(2)}
    project_id, (stage_id,) = _import(committed, settings, storage, "wd", ["wikido.verify"], records, files)
    cfg = _with(settings, clip_model_dir=tiny_clip)
    runtime.configure(cfg)
    with transaction(committed) as s:
        batches = jobs.missing_batches(s, cfg, project_id=project_id)
    assert sorted(b.kind for b in batches) == ["wikido.itm", "wikido.unsupported"]
    for b in batches:
        assert suggest_batch.compute_suggestions(b.stage_id, b.kind, b.item_ids) == 2
    make_user(committed, "ann", "annotator")
    login(client, "ann")
    html = start_annotating(client, stage_id).text
    assert "data-fit>image-text fit" in html and "(tiny-clip)" in html
    assert 'class="tok unsupported"' in html and "<strong>Suggestion</strong> from <code>all-MiniLM-L6-v2" in html


def test_suggest_follows_the_jobs_until_they_are_done(committed, settings, storage, tiny_clip):
    records, files = colorswap_records(3)
    _import(committed, settings, storage, "follow", ["colorswap.filter"], records, files)
    env = _worker_env(settings, VLCURATE_CLIP_MODEL_DIR=tiny_clip, VLCURATE_WORKER_BATCH_SIZE=1)
    worker = subprocess.Popen([VLCURATE, "worker", "--queues", "suggest"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        done = subprocess.run([VLCURATE, "suggest", "follow"], env=env, capture_output=True, text=True, timeout=120)
    finally:
        worker.terminate()
        worker.wait(20)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Enqueued 3 jobs for 3 items" in done.stdout and "Suggestions are in." in done.stdout
    with transaction(committed) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Suggestion)) == 3
