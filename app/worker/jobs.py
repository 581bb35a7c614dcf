"""Background jobs on procrastinate (PostgreSQL only): suggestion batches and the periodic reconcile job.

`suggest(stage_id, kind, item_ids)` computes one kind of suggestion for a batch of items and
stores it (an upsert keyed by item, stage, kind, model and version, so a rerun never stores
twice). `draft(prompt_id, item_ids)` runs a prompt version over a batch on the "draft" queue
(`app.drafting.run`), so a GPU box can take only drafting (`vlcurate worker --queues draft`). `reconcile` runs every minute: it re-runs jobs whose worker stopped sending heartbeats
(a killed worker), enqueues batches for items that lack a suggestion a stage reads, queues again
the exports, leak reports and agreement reports that were asked for but have no job (their defer
failed), and drops its own succeeded runs older than a day. A defer cannot share the caller's
transaction; reconcile is what makes the queue catch up regardless.
Jobs report their progress and errors in `job_runs`, which the jobs page shows; a long job (the
leak report) also names the step it is on (`progress_of`), which the export page shows as it runs.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from procrastinate import App, Blueprint, JobContext, PsycopgConnector, RetryStrategy
from procrastinate.exceptions import AlreadyEnqueued, AppNotOpen
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session, sessionmaker

from app.datasets import get_task, producers
from app.datasets.suggest import Failed, ItemInput, Produced
from app.db import QUEUE_POOL_SIZE, database_url, get_engine, session_factory, transaction
from app.errors import DomainError
from app.lifecycle import ItemStatus
from app.models import Asset, Export, Item, JobRequest, JobRun, Stage, Suggestion
from app.services.annotation import suggestions as suggestions_service
from app.services.annotation.pipeline import results_by_stage
from app.services.imports import imports
from app.services.users import web_sessions
from app.settings import Settings
from app.storage import Storage, get_many, make_storage
from app.worker import backends
from app.worker.backends import ModelUnavailable

log = logging.getLogger(__name__)
blueprint = Blueprint()
QUEUES = ("suggest", "draft", "maintenance", "export")


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
        raise RuntimeError("the worker is not configured: call app.worker.jobs.configure(settings)")
    return _env


_apps: dict[str, App] = {}
# Parallel first requests of a fresh process must not build two apps: the second registration
# would namespace the shared tasks again (`vlcurate:vlcurate:export`, which no worker knows).
_apps_lock = threading.Lock()


def make_app(settings: Settings) -> App:
    """The procrastinate App for this database, one per process: registering the blueprint's
    tasks renames them in place, so it happens once, under a lock."""
    url = database_url(settings).set(drivername="postgresql").render_as_string(hide_password=False)
    with _apps_lock:
        if url not in _apps:
            if _apps:
                raise RuntimeError("one process serves the job queue of one database")
            app = App(connector=PsycopgConnector(conninfo=url, min_size=1, max_size=QUEUE_POOL_SIZE))
            app.add_tasks_from(blueprint, namespace="vlcurate")
            _apps[url] = app
        return _apps[url]


def open_queue(settings: Settings) -> App:
    """This process's App, open for synchronous defers: the web process opens it at start-up and
    every request's defer shares its pool (thread-safe); anything else opens it on first use. A
    worker that ran in this process (tests) leaves it closed, so it is reopened when found closed."""
    app = make_app(settings)
    with _apps_lock:
        try:
            app.connector.get_sync_connector().pool
        except AppNotOpen:
            app.open()
    return app


def close_queue() -> None:
    """Close this process's queue pool (the web process's shutdown)."""
    with _apps_lock:
        for app in _apps.values():
            app.close()


# -- reporting ----------------------------------------------------------------------------------------


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


# -- suggestions ----------------------------------------------------------------------------------------


def load_inputs(session: Session, storage: Storage, stage_id: int, item_ids: list[int], with_images: bool) -> list[ItemInput]:
    """The items still in the stage, with their earlier stages' results and, when the kind needs
    them, the bytes of their stored images (read concurrently: on S3 each read is a round trip)."""
    items = session.scalars(sa.select(Item).where(Item.id.in_(item_ids), Item.stage_id == stage_id).order_by(Item.id)).all()
    shas = {sha for item in items for sha in item.assets.values()} if with_images else set()
    keys = dict(session.execute(sa.select(Asset.sha256, Asset.storage_key).where(Asset.sha256.in_(shas))).all()) if shas else {}
    data = get_many(storage, keys.values())
    inputs = []
    for item in items:
        images = {p: data[keys[sha]] for p, sha in item.assets.items() if sha in keys} if with_images else {}
        inputs.append(ItemInput(item.id, item.data, images, results_by_stage(session, item.id)))
    return inputs


def compute_suggestions(stage_id: int, kind: str, item_ids: list[int]) -> int:
    """Compute and store one kind of suggestion for the items; returns how many were stored.

    The rows are written in one statement once the whole batch is computed, so a worker killed
    mid-batch leaves nothing of it behind (the batch runs again whole). Items the producer could
    not compute (an unreadable image) fail the job, not retried, with their reasons, after the
    others are stored."""
    known = producers()
    producer = known.get(kind)
    if producer is None:
        raise JobFailed(f"Unknown suggestion kind '{kind}'. Known kinds: {', '.join(sorted(known))}.")
    e = env()
    with transaction(e.sessions) as s:
        if s.get(Stage, stage_id) is None:
            raise JobFailed(f"Stage {stage_id} no longer exists.")
        inputs = load_inputs(s, e.storage, stage_id, item_ids, producer.needs_images)
    if not inputs:
        raise JobFailed(f"None of the items {_ids(item_ids)} exists in stage {stage_id} any more (deleted or moved on).")
    results = producer.run(inputs, e.settings, backends)
    produced = [r for r in results if isinstance(r, Produced)]
    failed = [r for r in results if isinstance(r, Failed)]
    with transaction(e.sessions) as s:
        suggestions_service.store_many(s, stage_id, kind, produced)
    if failed:
        reasons = "; ".join(f.reason for f in failed[:3]) + (f"; and {len(failed) - 3} more" if len(failed) > 3 else "")
        raise JobFailed(f"{len(failed)} of {len(results)} items failed, the other {len(produced)} are stored: {reasons}")
    return len(produced)


def _ids(ids: list[int]) -> str:
    return ", ".join(map(str, ids[:5])) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


@blueprint.task(name="suggest", queue="suggest", pass_context=True, retry=RETRY)
def suggest(context: JobContext, stage_id: int, kind: str, item_ids: list[int]) -> int:
    label = f"{kind} · stage {stage_id} · {len(item_ids)} items"
    with report(context.job.id, "suggest", label, len(item_ids)):
        return compute_suggestions(stage_id, kind, item_ids)


# -- drafts ------------------------------------------------------------------------------------------------


def draft_job(prompt_id: int, item_ids: list[int]):
    """The draft task for one batch of one prompt version, locked by it: one copy waits at a time,
    copies never run together."""
    lock = f"draft:{prompt_id}:{item_ids[0]}-{item_ids[-1]}:{len(item_ids)}"
    return draft.configure(queueing_lock=lock, lock=lock)


def defer_draft(settings: Settings, prompt_id: int, item_ids: list[int]) -> int | None:
    """Queue one batch of a prompt run; None when the same batch already waits."""
    make_app(settings)  # binds the tasks, which a fresh process (the CLI) has not done yet
    return _defer(settings, draft_job(prompt_id, item_ids), {"prompt_id": prompt_id, "item_ids": item_ids}, f"draft {prompt_id}")


@blueprint.task(name="draft", queue="draft", pass_context=True, retry=RETRY)
def draft(context: JobContext, prompt_id: int, item_ids: list[int]) -> int:
    """Draft a batch of items with a prompt version; items with a valid draft of it are skipped. The
    job's label ends saying how many answers were drafted, invalid (stored as draft failures) and skipped."""
    from app.drafting import run as drafting

    label = f"prompt {prompt_id} · {len(item_ids)} items"
    with report(context.job.id, "draft", label, len(item_ids)) as run:
        outcome = drafting.draft(prompt_id, item_ids)
        run.label = f"{label} · {outcome.drafted} drafted, {outcome.invalid} invalid, {outcome.skipped} skipped"
        return outcome.drafted


def drafter_lines(settings: Settings) -> list[str]:
    """What the worker says at start-up about the drafters it can call: name, backend, URL or model
    directory, model (never a key)."""
    from app.drafting.config import drafters

    try:
        found = drafters(settings)
    except DomainError as exc:
        return [f"  drafters: unavailable — {exc.message}"]
    if not found:
        return ["  drafters: none (set VLCURATE_DRAFTERS_FILE to a TOML file of [drafters.<name>] tables)"]
    return [f"  drafter {name}: {config.describe()}" for name, config in sorted(found.items())]


@blueprint.task(name="agreement", queue="maintenance", pass_context=True, retry=RETRY)
def agreement(context: JobContext, stage_id: int, samples: int = 1000, seed: int = 0) -> int:
    """Compute a stage's agreement report and store it with its time (the dashboard reads it)."""
    taken("agreement", stage_id)
    with report(context.job.id, "agreement", f"stage {stage_id}", 1):
        return compute_agreement(stage_id, samples=samples, seed=seed)


@blueprint.task(name="export", queue="export", pass_context=True)
def export(context: JobContext, export_id: int) -> int:
    """Write a recorded export (its row shows progress on the project's export page)."""
    from app.services.exports import export as export_service

    e = env()
    with transaction(e.sessions) as s:
        status = s.scalar(sa.select(Export.status).where(Export.id == export_id))
    if status not in (None, "queued") and not context.job.attempts:
        # A second copy (the request's defer and reconcile's crossed): the first ran or runs it.
        # A stalled run put back in the queue comes with attempts > 0 and runs again.
        return 0
    with report(context.job.id, "export", f"export {export_id}", 0):
        try:
            manifest = export_service.run_export(e.sessions, e.storage, e.settings, export_id)
        except DomainError as exc:
            raise JobFailed(exc.message) from None
        return sum(manifest["splits"].values())


@blueprint.task(name="leaks", queue="maintenance", pass_context=True, retry=RETRY)
def leaks(context: JobContext, project_id: int, version: int | None = None) -> int:
    """Make and store the leakage and duplicates report of a project's split version (the export
    page reads it): its images that have no perceptual hash yet are hashed first. Each step
    (hashing images, matching, embeddings) is reported with its progress as it runs."""
    from app.services.leaks import leaks as leaks_service

    e = env()
    taken("leaks", project_id)
    with report(context.job.id, "leaks", f"project {project_id}", 0):
        progress = progress_of(context.job.id)
        progress("loading models", 0, 1)
        embedders = leak_embedders(e.settings)
        try:
            report_id, _ = leaks_service.run(e.sessions, e.storage, project_id, version, embedders=embedders, progress=progress)
        except DomainError as exc:
            raise JobFailed(exc.message) from None
        return report_id


def leak_embedders(settings: Settings):
    """The embedding matchers this worker can run for the leak report: MiniLM over texts where the
    worker extra is installed, CLIP over images where a model directory is configured; for each
    one that can't, the reason the report shows."""
    from app.services.leaks.leaks import Embedders

    out = Embedders()
    try:
        out.texts = backends.text_similarity().embed
    except ModelUnavailable:
        out.texts_missing = "MiniLM not installed (the worker extra)"
    if not settings.clip_model_dir:
        out.images_missing = "CLIP: no model directory configured (VLCURATE_CLIP_MODEL_DIR)"
    else:
        try:
            out.images = backends.image_text_for(settings).image_embeddings
        except ModelUnavailable as exc:
            out.images_missing = f"CLIP unavailable: {exc}"
    return out


def defer_leaks(settings: Settings, project_id: int) -> int | None:
    """Queue the leaks job for the project's newest split version; None when one already waits
    or the queue could not take it now (reconcile queues it then)."""
    return defer_requested(settings, "leaks", project_id)


def defer_export(settings: Settings, export_id: int) -> int | None:
    """Queue a recorded export (after its row is committed); None when a copy already waits or the
    queue could not take it now: the row stays "queued" and reconcile queues it."""
    return _defer(settings, export_job(export_id), {"export_id": export_id}, f"export {export_id}")


def _defer(settings: Settings, job, kwargs: dict[str, int], what: str) -> int | None:
    """Queue `job` on this process's open queue: its id, or None when a copy already waits (its
    queueing lock) or the queue could not take it now (its connection or pool); what was asked for
    is recorded, so the reconcile job queues it then."""
    try:
        open_queue(settings)
        return job.defer(**kwargs)
    except AlreadyEnqueued:
        return None
    except Exception as exc:
        log.warning("%s not queued now (%s); the reconcile job queues it", what, why(exc))
        return None


def why(exc: BaseException) -> str:
    """One line naming what failed (procrastinate wraps the pool's error as "Database error.")."""
    cause = exc.__cause__ or exc
    return f"{type(cause).__name__}: {(str(cause).strip().splitlines() or [''])[0]}"


def export_job(export_id: int):
    """The export task keyed by its row: one copy waits at a time, and copies never run together."""
    lock = f"export:{export_id}"
    return export.configure(queueing_lock=lock, lock=lock)


def defer_requested(settings: Settings, task: str, key: int) -> int | None:
    """Record that `task` was asked for `key` (committed first, on a connection of its own, so that
    reconcile finds the request should the defer fail), then queue it. The job takes the request
    when it starts (`taken`); a request made while one runs is queued again."""
    with transaction(session_factory(get_engine(settings))) as s:
        s.execute(insert(JobRequest).values(task=task, key=key)
                  .on_conflict_do_update(index_elements=["task", "key"], set_={"requested_at": sa.func.now()}))
    job, kwargs = requested_job(task, key)
    return _defer(settings, job, kwargs, f"{task} {key}")


def requested_job(task: str, key: int):
    """The job a recorded request stands for, with its queueing lock, and its arguments."""
    job, argument = {"leaks": (leaks, "project_id"), "agreement": (agreement, "stage_id")}[task]
    return job.configure(queueing_lock=f"{task}:{key}"), {argument: key}


def taken(task: str, key: int) -> None:
    """A job took its request: reconcile no longer needs to queue it."""
    with transaction(env().sessions) as s:
        s.execute(sa.delete(JobRequest).where(JobRequest.task == task, JobRequest.key == key))


def compute_agreement(stage_id: int, *, samples: int = 1000, seed: int = 0) -> int:
    from app.services.review import agreement as agreement_service

    with transaction(env().sessions) as s:
        stage = s.get(Stage, stage_id)
        if stage is None:
            raise JobFailed(f"Stage {stage_id} no longer exists.")
        figures = agreement_service.stage_report(s, stage_id, samples=samples, seed=seed, embed=backends.soft_match_embedder(stage.workflow))
        return agreement_service.store(s, stage_id, figures).id


def defer_agreement(settings: Settings, stage_id: int) -> int | None:
    """Queue an agreement job for the stage (from a web request or the CLI); None when one waits
    or the queue could not take it now (reconcile queues it then)."""
    return defer_requested(settings, "agreement", stage_id)


# -- finding work ------------------------------------------------------------------------------------------


NO_EXTRA = "the worker extra is not installed"
NO_CLIP = "VLCURATE_CLIP_MODEL_DIR is not set"
# What to do about each reason, said once beside it.
_REMEDY = {NO_EXTRA: backends.WORKER_EXTRA, NO_CLIP: "a local CLIP model directory; nothing is downloaded"}


def blockers(kind: str, settings: Settings) -> dict[str, list[str]]:
    """What keeps a kind from running in this installation (a cheap check, no model load): each reason,
    worded the same for every kind it holds back, with the modules it misses; empty when the kind can run."""
    producer = producers().get(kind)
    if producer is None:
        return {f"unknown kind {kind}": []}
    found: dict[str, list[str]] = {}
    missing = [m for m in producer.modules if importlib.util.find_spec(m) is None]
    if missing:
        found[NO_EXTRA] = missing
    if producer.needs_clip and not settings.clip_model_dir:
        found[NO_CLIP] = []
    return found


def _said(reason: str, missing: list[str]) -> str:
    """A reason with its remedy and the modules missing: "the worker extra is not installed (pip install ...; missing torch)"."""
    notes = [n for n in (_REMEDY.get(reason), f"missing {', '.join(missing)}" if missing else None) if n]
    return f"{reason} ({'; '.join(notes)})" if notes else reason


def unavailable(kind: str, settings: Settings) -> str | None:
    """Why a kind cannot run in this installation, in one line, or None when it can."""
    return "; ".join(_said(why, missing) for why, missing in blockers(kind, settings).items()) or None


def availability(settings: Settings) -> list[str]:
    """The worker's start-up lines on suggestions: how many kinds can run here, then one line per reason
    that holds kinds back, naming them and the modules missing (not one line per kind)."""
    kinds = sorted(producers())
    held: dict[str, tuple[list[str], list[str]]] = {}  # reason -> (kinds, modules missing)
    for kind in kinds:
        for why, missing in blockers(kind, settings).items():
            names, modules = held.setdefault(why, ([], []))
            names.append(kind)
            modules.extend(m for m in missing if m not in modules)
    if not held:
        return [f"Suggestions: all {len(kinds)} kinds can run here."]
    ready = [k for k in kinds if not any(k in names for names, _ in held.values())]
    lines = [f"Suggestions: {len(ready)} of {len(kinds)} kinds can run here{' (' + ', '.join(ready) + ')' if ready else ''}; "
             "exports, agreement and leak reports need no model and run all the same."]
    lines += [f"  - {_said(why, modules)}: {', '.join(names)}" for why, (names, modules) in held.items()]
    return lines


@dataclass
class Batch:
    stage_id: int
    kind: str
    item_ids: list[int]

    @property
    def lock(self) -> str:
        return f"suggest:{self.stage_id}:{self.kind}:{self.item_ids[0]}-{self.item_ids[-1]}"

    @property
    def job(self):
        """The suggest task for this batch, locked by it: one copy waits at a time, copies never run together."""
        return suggest.configure(queueing_lock=self.lock, lock=self.lock)

    @property
    def arguments(self) -> dict[str, Any]:
        return {"stage_id": self.stage_id, "kind": self.kind, "item_ids": self.item_ids}


def missing_batches(
    session: Session, settings: Settings, *, project_id: int | None = None, stage_id: int | None = None,
    kind: str | None = None, available_only: bool = True,
) -> list[Batch]:
    """Batches of active items lacking a suggestion kind that their stage reads."""
    q = sa.select(Stage)
    if project_id is not None:
        q = q.where(Stage.project_id == project_id)
    if stage_id is not None:
        q = q.where(Stage.id == stage_id)
    batches, known = [], producers()
    for stage in session.scalars(q.order_by(Stage.id)):
        for k in get_task(stage.workflow).suggestion_kinds:
            if (kind and k != kind) or k not in known or (available_only and unavailable(k, settings)):
                continue
            has = sa.exists().where(Suggestion.item_id == Item.id, Suggestion.stage_id == stage.id, Suggestion.kind == k)
            ids = session.scalars(
                sa.select(Item.id).where(Item.stage_id == stage.id, Item.status == ItemStatus.active, ~has).order_by(Item.id)
            ).all()
            size = settings.worker_batch_size
            batches += [Batch(stage.id, k, list(ids[i : i + size])) for i in range(0, len(ids), size)]
    return batches


def defer_batches(app: App, batches: list[Batch]) -> list[int]:
    """Enqueue each batch once (a queueing lock refuses a second copy while one waits); returns job ids."""
    ids = []
    for b in batches:
        try:
            ids.append(b.job.defer(**b.arguments))
        except AlreadyEnqueued:
            continue
    return ids


def unqueued_requests(session: Session) -> tuple[list[int], list[tuple[str, int]]]:
    """What was asked for but has no job: exports still "queued" with no copy waiting or running
    (their defer failed), and recorded leak and agreement requests (a waiting copy refuses a second
    by its queueing lock)."""
    exports = session.scalars(sa.text(
        """
        SELECT e.id FROM exports e
         WHERE e.status = 'queued'
           AND NOT EXISTS (SELECT 1 FROM procrastinate_jobs j
                            WHERE j.task_name = 'vlcurate:export' AND j.status IN ('todo', 'doing')
                              AND j.args->>'export_id' = e.id::text)
         ORDER BY e.id
        """
    )).all()
    requests = session.execute(sa.select(JobRequest.task, JobRequest.key).order_by(JobRequest.requested_at)).all()
    return list(exports), [(r.task, r.key) for r in requests]


async def requeue_requests(sessions: sessionmaker[Session]) -> int:
    """Queue again what `unqueued_requests` finds; returns how many jobs were queued."""

    def find() -> tuple[list[int], list[tuple[str, int]]]:
        with transaction(sessions) as s:
            return unqueued_requests(s)

    exports, requests = await asyncio.to_thread(find)
    return await defer_each([(export_job(i), {"export_id": i}) for i in exports] + [requested_job(task, key) for task, key in requests])


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


def recover_stalled(settings: Settings) -> int:
    """Run once when a worker starts, so that a restart picks up a killed worker's jobs at once."""

    async def run() -> int:
        app = make_app(settings)
        async with app.open_async():
            return await retry_stalled(app.job_manager, session_factory(get_engine(settings)), settings.worker_stalled_seconds)

    return asyncio.run(run())


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


@blueprint.periodic(cron="* * * * *", periodic_id="reconcile")
@blueprint.task(name="reconcile", queue="maintenance", pass_context=True, queueing_lock="reconcile")
async def reconcile(context: JobContext, timestamp: int) -> dict[str, int]:
    e = env()
    stalled = await retry_stalled(context.app.job_manager, e.sessions, e.settings.worker_stalled_seconds)

    def find() -> list[Batch]:
        with transaction(e.sessions) as s:
            return missing_batches(s, e.settings)

    def prune() -> int:
        with transaction(e.sessions) as s:
            return prune_periodic_runs(s, context.job.task_name)

    def end_expired() -> int:
        with transaction(e.sessions) as s:
            return web_sessions.sweep_expired(s)

    pruned = await asyncio.to_thread(prune)
    expired = await asyncio.to_thread(end_expired)
    requeued = await requeue_requests(e.sessions)
    swept = await asyncio.to_thread(imports.sweep_staging, e.storage)
    batches = await asyncio.to_thread(find)
    deferred = await defer_each([(b.job, b.arguments) for b in batches])
    return {"stalled": stalled, "deferred": deferred, "requeued": requeued, "pruned": pruned, "swept": swept, "sessions_ended": expired}
