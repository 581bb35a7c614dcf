"""Jobs that never stay queued: one queue app per process, shared by concurrent defers, and
requests whose defer failed queued again by reconcile."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import httpx
import sqlalchemy as sa

from app.db import transaction
from app.models import Export, JobRequest, JobRun
from app.worker import jobs, runtime, upkeep
from tests import factories
from tests.conftest import run_concurrently
from tests.worker.test_jobs import VLCURATE, _wait, _worker_env


def test_parallel_first_calls_in_a_fresh_process_register_the_tasks_once(settings):
    # Twenty fresh starts (the module reloaded: a new blueprint and cache), 16 first requests each,
    # switching threads every microsecond so that they interleave inside make_app as under load.
    code = textwrap.dedent(
        """
        import importlib, sys, threading
        from app.settings import Settings
        from app.worker import jobs

        sys.setswitchinterval(1e-6)
        settings = Settings(database_url=sys.argv[1])
        seen = set()
        for _ in range(20):
            jobs = importlib.reload(jobs)
            start = threading.Barrier(16)

            def first_request():
                start.wait()
                jobs.make_app(settings)

            threads = [threading.Thread(target=first_request) for _ in range(16)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            names = sorted(n for n in jobs.make_app(settings).tasks if n.startswith("vlcurate"))
            seen.add(" ".join([*names, jobs.export.name]))
        print("\\n".join(sorted(seen)))
        """
    )
    out = subprocess.run([sys.executable, "-c", code, settings.database_url], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:-1] == [
        "vlcurate:agreement vlcurate:deliver_webhook vlcurate:draft vlcurate:export vlcurate:hash_images vlcurate:leaks vlcurate:reconcile vlcurate:suggest vlcurate:export"
    ]


def test_32_concurrent_export_requests_all_finish(committed, settings, live_process):
    with transaction(committed) as s:
        admin = factories.bearer(s, "boss", "admin")
        project_id, _ = factories.project(s, "generic.choice")
    worker = subprocess.Popen([VLCURATE, "worker", "--queues", "export"], env=_worker_env(settings),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    answers: list[int] = []
    try:
        with httpx.Client(base_url=live_process, headers=admin, timeout=60) as http:

            def request(_: int) -> None:
                r = http.post(f"/api/v1/projects/{project_id}/exports", json={"format": "jsonl"})
                assert r.status_code == 202, r.text
                answers.append(r.json()["id"])

            run_concurrently(request, [(i,) for i in range(32)], timeout=60)

        def statuses() -> dict[str, int]:
            with transaction(committed) as s:
                return dict(s.execute(sa.select(Export.status, sa.func.count()).group_by(Export.status)).all())

        _wait(lambda: statuses() == {"done": 32}, timeout=90, proc=worker)
    finally:
        worker.terminate()
        worker.wait(20)
    assert len(set(answers)) == 32
    with transaction(committed) as s:
        names = set(s.scalars(sa.text("SELECT DISTINCT task_name FROM procrastinate_jobs WHERE task_name <> 'vlcurate:reconcile'")).all())
        runs = s.scalar(sa.select(sa.func.count()).select_from(JobRun).where(JobRun.task == "export", JobRun.status == "succeeded"))
    assert names == {"vlcurate:export"} and runs == 32  # each export ran once (the worker's scheduler adds its reconcile)


def closed_under_the_defers(settings) -> None:
    """What a request closing the shared pool did to the others' defers: the pool is closed, still in place."""
    jobs.open_queue(settings).connector.get_sync_connector().pool.close()


def run_worker(settings, queues: list[str]) -> None:
    runtime.configure(settings)
    jobs.make_app(settings).run_worker(queues=queues, wait=False, install_signal_handlers=False)


def test_failed_defers_are_queued_again_by_reconcile_and_run_once(committed, settings):
    with transaction(committed) as s:
        project_id, (stage_id,) = factories.project(s, "generic.choice")
        from app.services.exports import export

        export_id = export.create_export(s, project_id, "jsonl", settings=settings).id
    closed_under_the_defers(settings)
    try:
        assert jobs.defer_export(settings, export_id) is None
        assert jobs.defer_agreement(settings, stage_id) is None
        assert jobs.defer_leaks(settings, project_id) is None
    finally:
        jobs.close_queue()
    with transaction(committed) as s:
        assert s.scalar(sa.text("SELECT count(*) FROM procrastinate_jobs")) == 0  # nothing was queued
        assert s.get(Export, export_id).status == "queued"
        assert upkeep.unqueued_requests(s) == ([export_id], [("agreement", stage_id), ("leaks", project_id)])

    async def reconcile_twice() -> tuple[int, int]:
        async with jobs.make_app(settings).open_async():
            return await jobs.requeue_requests(committed), await jobs.requeue_requests(committed)

    assert asyncio.run(reconcile_twice()) == (3, 0)  # a second pass finds each one waiting
    run_worker(settings, ["export", "maintenance"])
    with transaction(committed) as s:
        assert s.get(Export, export_id).status == "done"
        jobs_run = dict(s.execute(sa.text("SELECT task_name, status::text FROM procrastinate_jobs")).all())
        assert s.scalar(sa.select(sa.func.count()).select_from(JobRequest)) == 0  # each job took its request
        assert upkeep.unqueued_requests(s) == ([], [])
    assert jobs_run["vlcurate:export"] == "succeeded" and jobs_run["vlcurate:agreement"] == "succeeded"
    assert jobs_run["vlcurate:leaks"] == "failed"  # ran, and reported that the project has no split version


def test_a_second_copy_of_an_export_job_does_not_run_it_again(committed, settings):
    with transaction(committed) as s:
        project_id, _ = factories.project(s, "generic.choice")
        from app.services.exports import export

        export_id = export.create_export(s, project_id, "jsonl", settings=settings).id
    first = jobs.defer_export(settings, export_id)
    assert first is not None and jobs.defer_export(settings, export_id) is None  # one copy waits at a time
    run_worker(settings, ["export"])
    with transaction(committed) as s:
        finished = s.get(Export, export_id).finished_at
    # The request's defer and reconcile's crossed: a copy queued once the first has started runs after it.
    assert jobs.defer_export(settings, export_id) is not None
    run_worker(settings, ["export"])
    with transaction(committed) as s:
        assert s.get(Export, export_id).finished_at == finished
        assert s.scalar(sa.select(sa.func.count()).select_from(JobRun).where(JobRun.task == "export")) == 1
