"""What every job runs with: this process's database sessions and storage (`configure`, `env`), the
retry policy, and the record of each run in `job_runs` (running, succeeded or failed; a long job's step)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from procrastinate import RetryStrategy
from sqlalchemy.orm import Session, sessionmaker

from app.db import get_engine, session_factory, transaction
from app.models import JobRun
from app.services.projects import archive
from app.settings import Settings
from app.storage import Storage, make_storage
from app.worker.backends import ModelUnavailable


class JobFailed(RuntimeError):
    """A job that cannot succeed as asked (its items are gone, its kind unknown): not retried."""


# Retried: lost connections and storage hiccups. Not retried: missing models, deleted items.
RETRY = RetryStrategy(max_attempts=3, exponential_wait=2, retry_exceptions={sa.exc.OperationalError, ConnectionError, TimeoutError})


@dataclass
class Env:
    settings: Settings
    sessions: sessionmaker[Session]
    storage: Storage


_env: Env | None = None


def configure(settings: Settings) -> Env:
    """Set up this process's database sessions and storage for the tasks (once per worker)."""
    global _env
    _env = Env(settings, session_factory(get_engine(settings)), make_storage(settings))
    return _env


def env() -> Env:
    if _env is None:
        raise RuntimeError("the worker is not configured: call app.worker.runtime.configure(settings)")
    return _env


def archived(**ids: int) -> bool:
    """Whether the project of these ids (project_id, stage_id, export_id, prompt_id: see
    app.services.projects.archive) is archived: a job queued before the delete then does nothing."""
    with transaction(env().sessions) as s:
        return archive.archived_target(s, ids) is not None


@dataclass
class Run:
    label: str  # a job may say more about what it did when it ends (drafts: how many were invalid)


@contextmanager
def report(job_id: int, task: str, label: str, total: int) -> Iterator[Run]:
    """Record the job as running, then as succeeded or failed with a one-line error (no traceback)."""
    sessions = env().sessions
    with transaction(sessions) as s:
        run = s.get(JobRun, job_id)
        if run is None:
            s.add(JobRun(job_id=job_id, task=task, label=label, status="running", total=total, attempts=1))
        else:
            run.status, run.error, run.finished_at, run.total, run.done, run.step = "running", None, None, total, 0, ""
            run.attempts += 1
    run = Run(label)
    try:
        yield run
    except Exception as exc:
        message = str(exc) if isinstance(exc, (JobFailed, ModelUnavailable)) else f"{type(exc).__name__}: {exc}"
        with transaction(sessions) as s:
            s.execute(
                sa.update(JobRun)
                .where(JobRun.job_id == job_id)
                .values(status="failed", error=message.splitlines()[0][:2000] if message else type(exc).__name__, finished_at=sa.func.now())
            )
        raise
    with transaction(sessions) as s:
        # Done is the total of the last step a job reported (`progress_of`), else the one it started with.
        s.execute(
            sa.update(JobRun).where(JobRun.job_id == job_id)
            .values(status="succeeded", done=JobRun.total, label=run.label, finished_at=sa.func.now())
        )


# A step's progress is written at most this often (a new step is written at once).
PROGRESS_SECONDS = 1.0


def progress_of(job_id: int) -> Callable[[str, int, int], None]:
    """A callback (step, done, total) that records a running job's step and progress in `job_runs`."""
    sessions = env().sessions
    last: dict[str, Any] = {"step": None, "at": 0.0}

    def update(step: str, done: int, total: int) -> None:
        now = time.monotonic()
        if step == last["step"] and now - last["at"] < PROGRESS_SECONDS and done < total:
            return
        last.update(step=step, at=now)
        with transaction(sessions) as s:
            s.execute(sa.update(JobRun).where(JobRun.job_id == job_id).values(step=step, done=done, total=total))

    return update


def why(exc: BaseException) -> str:
    """One line naming what failed (procrastinate wraps the pool's error as "Database error.")."""
    cause = exc.__cause__ or exc
    return f"{type(cause).__name__}: {(str(cause).strip().splitlines() or [''])[0]}"
