"""Periodic runs on the real queue tables: reconcile's old succeeded runs are dropped, the rest stay."""

from __future__ import annotations

import json
import time

import sqlalchemy as sa

from app.worker import jobs, upkeep


def _periodic(session, timestamp: int) -> int:
    return session.execute(
        sa.text("SELECT procrastinate_defer_periodic_job_v2('maintenance', NULL, NULL, 'vlcurate:reconcile', 0, 'reconcile', :ts, CAST(:args AS jsonb))"),
        {"ts": timestamp, "args": json.dumps({"timestamp": timestamp})},
    ).scalar_one()


def _status(session, job_id: int, status: str) -> None:
    session.execute(sa.text("UPDATE procrastinate_jobs SET status = CAST(:st AS procrastinate_job_status) WHERE id = :id"), {"st": status, "id": job_id})


def test_old_succeeded_reconcile_runs_are_pruned(session):
    now = int(time.time())
    before = set(session.scalars(sa.text("SELECT id FROM procrastinate_jobs")))  # other tests' jobs (an import's image hashes)
    old = [_periodic(session, now - 3 * 86400 + 60 * m) for m in range(5)]
    recent = [_periodic(session, now - 3600 + 60 * m) for m in range(3)]
    for job_id in old + recent:
        _status(session, job_id, "doing")
        _status(session, job_id, "succeeded")
    _status(session, old[1], "failed")
    other = session.execute(
        sa.text("INSERT INTO procrastinate_jobs (queue_name, task_name, args, status) VALUES ('suggest', 'vlcurate:suggest', CAST(:a AS jsonb), 'succeeded') RETURNING id"),
        {"a": json.dumps({"stage_id": 1, "kind": "k", "item_ids": [1], "timestamp": 1})},
    ).scalar_one()

    assert upkeep.prune_periodic_runs(session, "vlcurate:reconcile") == 4
    left = set(session.scalars(sa.text("SELECT id FROM procrastinate_jobs"))) - before
    assert left == {old[1], *recent, other}  # the failed run, the last day's, another task's
    events = set(session.scalars(sa.text("SELECT DISTINCT job_id FROM procrastinate_events WHERE job_id = ANY(:ids)"), {"ids": old}))
    assert events == {old[1]}  # the pruned runs' events went with them
    assert upkeep.prune_periodic_runs(session, "vlcurate:reconcile") == 0


def test_the_newest_defer_stays_however_old(session):
    # A worker that stopped a week ago: its last run is what the scheduler's table points at.
    job_id = _periodic(session, int(time.time()) - 7 * 86400)
    _status(session, job_id, "succeeded")
    assert upkeep.prune_periodic_runs(session, "vlcurate:reconcile") == 0


def test_a_real_worker_prunes_old_runs_and_the_pages_see_its_heartbeat(committed, settings, client):
    import subprocess

    from app.db import transaction
    from tests.conftest import login, make_user
    from tests.worker.test_jobs import VLCURATE, _wait, _worker_env

    with transaction(committed) as s:
        stale = _periodic(s, int(time.time()) - 2 * 86400)
        _status(s, stale, "succeeded")
        _periodic(s, int(time.time()) - 2 * 86400 + 60)  # the newest defer, which points at another run
    make_user(committed, "boss", "admin")
    login(client, "boss")
    assert "No worker is running" in client.get("/admin/jobs").text

    worker = subprocess.Popen([VLCURATE, "worker", "--queues", "maintenance"], env=_worker_env(settings),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        def pruned() -> bool:
            with transaction(committed) as s:
                return not s.scalar(sa.text("SELECT count(*) FROM procrastinate_jobs WHERE id = :id"), {"id": stale})

        _wait(pruned, timeout=120, proc=worker)
        page = client.get("/admin/jobs").text
        assert "No worker is running" not in page and "1 worker running" in page
        assert client.get("/admin/worker").text.strip() == ""
    finally:
        worker.terminate()
        output = worker.communicate(timeout=20)[0]
    # A worker that stops says goodbye: the pages notice at once.
    assert "No worker is running" in client.get("/admin/worker").text, output
