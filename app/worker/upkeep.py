"""The queue's upkeep, run by reconcile: requests that have no job, jobs whose worker stopped, and
the periodic task's old runs."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import sqlalchemy as sa
from procrastinate.exceptions import AlreadyEnqueued
from sqlalchemy.orm import Session, sessionmaker

from app.db import transaction
from app.models import JobRequest
from app.services.imports import imports
from app.services.projects import archive

log = logging.getLogger(__name__)


def unqueued_requests(session: Session) -> tuple[list[int], list[tuple[str, int]]]:
    """What was asked for but has no job: exports still "queued" with no copy waiting or running
    (their defer failed), and recorded leak and agreement requests (a waiting copy refuses a second
    by its queueing lock); none of an archived project."""
    exports = session.scalars(sa.text(
        """
        SELECT e.id FROM exports e
         WHERE e.status = 'queued'
           AND NOT EXISTS (SELECT 1 FROM projects p WHERE p.id = e.project_id AND p.archived_at IS NOT NULL)
           AND NOT EXISTS (SELECT 1 FROM procrastinate_jobs j
                            WHERE j.task_name = 'vlcurate:export' AND j.status IN ('todo', 'doing')
                              AND j.args->>'export_id' = e.id::text)
         ORDER BY e.id
        """
    )).all()
    requests = session.execute(sa.select(JobRequest.task, JobRequest.key).order_by(JobRequest.requested_at)).all()
    # An archived project's requests wait, untouched, for its restore.
    live = [(r.task, r.key) for r in requests
            if not archive.archived_target(session, {"stage_id" if r.task == "agreement" else "project_id": r.key})]
    return list(exports), live


async def defer_each(pending: list[tuple[Any, dict[str, Any]]]) -> int:
    """Queue each (job, arguments) once: a copy that already waits refuses it by its queueing lock.
    Returns how many were queued."""
    queued = 0
    for job, kwargs in pending:
        try:
            await job.defer_async(**kwargs)
            queued += 1
        except AlreadyEnqueued:
            pass
    return queued


def requeue_stalled(session: Session, job_id: int) -> bool:
    """Put one stalled job back in the queue; False if it is no longer running (another worker
    requeued it first).

    A job keeps its queueing lock while it runs, so reconcile may meanwhile have queued a copy of
    the same batch (its items still lack the suggestion). That copy waits behind the running job's
    lock, and the running job, once requeued, would clash with it on the queueing lock: neither
    would ever run. The copy is dropped in the same transaction, and the stalled job runs again."""
    job = session.execute(
        sa.text("SELECT queueing_lock FROM procrastinate_jobs WHERE id = :id AND status = 'doing' FOR UPDATE"), {"id": job_id}
    ).first()
    if job is None:
        return False
    if job.queueing_lock is not None:
        session.execute(
            sa.text("DELETE FROM procrastinate_jobs WHERE status = 'todo' AND queueing_lock = :lock AND id <> :id"),
            {"lock": job.queueing_lock, "id": job_id},
        )
    session.execute(sa.text("SELECT procrastinate_retry_job_v2(:id, now(), NULL, NULL, NULL)"), {"id": job_id})
    return True


async def retry_stalled(manager, sessions: sessionmaker[Session], seconds: int) -> int:
    """Put back in the queue the jobs of workers that stopped sending heartbeats (killed, crashed)."""
    stalled = list(await manager.get_stalled_jobs(seconds_since_heartbeat=seconds))

    def requeue(job_id: int) -> bool:
        with transaction(sessions) as s:
            return requeue_stalled(s, job_id)

    requeued = 0
    for job in stalled:
        if await asyncio.to_thread(requeue, job.id):
            log.warning("re-running job %s (%s): its worker stopped", job.id, job.task_name)
            requeued += 1
    return requeued


# A periodic task's succeeded runs are kept this long: one a minute would otherwise grow the queue's
# table (and the jobs page's work) by half a million rows a year. Failed runs stay until looked at.
KEEP_PERIODIC_RUNS_SECONDS = 24 * 3600


def prune_periodic_runs(session: Session, task_name: str, keep_seconds: int = KEEP_PERIODIC_RUNS_SECONDS) -> int:
    """Delete a periodic task's succeeded runs scheduled more than `keep_seconds` ago (procrastinate
    passes each run its schedule as `timestamp`); returns how many went. The newest defer, which the
    scheduler's own table points at, always stays."""
    return session.execute(
        sa.text(
            """
            DELETE FROM procrastinate_jobs
             WHERE task_name = :task AND status = 'succeeded'
               AND (args->>'timestamp')::bigint < extract(epoch FROM now()) - :keep
               AND id NOT IN (SELECT job_id FROM procrastinate_periodic_defers WHERE job_id IS NOT NULL)
            """
        ),
        {"task": task_name, "keep": keep_seconds},
    ).rowcount


def sweep_stored(sessions: sessionmaker[Session], storage, *, hourly: bool) -> int:
    """Delete what imports left behind: staged objects a day old, and, with `hourly` (the job's run in
    the first minute of an hour: it reads every pack's name from the assets table), day-old packs no
    asset names. Returns how many objects went."""
    swept = imports.sweep_staging(storage)
    if hourly:
        with transaction(sessions) as s:
            swept += imports.sweep_packs(s, storage)
    return swept
