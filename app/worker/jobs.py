"""Background jobs on procrastinate (PostgreSQL only): suggestion batches and the periodic reconcile job.

`hash_images(project_id)` takes the perceptual hashes an import left to it (`app.services.imports`).
`suggest(stage_id, kind, item_ids)` computes one kind of suggestion for a batch of items and stores it
(an upsert keyed by item, stage, kind, model and version: a rerun never stores twice).
`draft(prompt_id, item_ids)` runs a prompt version over a batch on the "draft" queue
(`app.drafting.run`), so a GPU box can take only drafting (`vlcurate worker --queues draft`).
`deliver_webhook(delivery_id)` (`webhook_job`) posts one webhook event, on the "webhook" queue.
`reconcile` runs every minute: it re-runs jobs whose worker stopped sending heartbeats, enqueues
batches for items that lack a suggestion a stage reads (not those whose producer failed on them until
their record or images change: `suggestion_failures`), queues again the exports, leak and agreement
reports asked for but with no job (their defer failed), and drops its succeeded runs older than a
day: a defer cannot share the caller's transaction, so reconcile makes the queue catch up. A job of
an archived project does nothing.
Jobs report their progress and errors in `job_runs` (the jobs page); a long job (the leak report) also
names its step (`progress_of`), which the export page shows. Beside this module: `runtime` (sessions,
storage, run records), `availability` (what this worker can run), `suggest_batch` (one batch of
suggestions) and `upkeep` (what reconcile repairs).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from procrastinate import App, Blueprint, JobContext, PsycopgConnector
from procrastinate.exceptions import AlreadyEnqueued, AppNotOpen
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session, sessionmaker

from app.datasets import get_workflow, producers
from app.db import QUEUE_POOL_SIZE, database_url, get_engine, session_factory, transaction
from app.errors import DomainError
from app.lifecycle import ItemStatus
from app.models import Export, Item, JobRequest, Stage, Suggestion
from app.services.annotation import suggestion_failures
from app.services.imports import imports
from app.services.projects import archive
from app.services.users import web_sessions
from app.settings import Settings
from app.worker import backends, webhook_job
from app.worker.availability import leak_embedders, unavailable
from app.worker.runtime import RETRY, JobFailed, archived, env, progress_of, report, why
from app.worker.suggest_batch import compute_suggestions
from app.worker.upkeep import defer_each, prune_periodic_runs, retry_stalled, sweep_stored, unqueued_requests

log = logging.getLogger(__name__)
blueprint = Blueprint()
QUEUES = ("suggest", "draft", "maintenance", "export", "webhook")


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


deliver_webhook = webhook_job.register(blueprint)  # one attempt at a webhook delivery (app.worker.webhook_job)


# -- suggestions ----------------------------------------------------------------------------------------


@blueprint.task(name="suggest", queue="suggest", pass_context=True, retry=RETRY)
def suggest(context: JobContext, stage_id: int, kind: str, item_ids: list[int]) -> int:
    label = f"{kind} · stage {stage_id} · {len(item_ids)} items"
    if archived(stage_id=stage_id):
        return 0
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
    if archived(prompt_id=prompt_id):
        return 0
    with report(context.job.id, "draft", label, len(item_ids)) as run:
        outcome = drafting.draft(prompt_id, item_ids)
        run.label = f"{label} · {outcome.drafted} drafted, {outcome.invalid} invalid, {outcome.skipped} skipped"
        return outcome.drafted


@blueprint.task(name="agreement", queue="maintenance", pass_context=True, retry=RETRY)
def agreement(context: JobContext, stage_id: int, samples: int = 1000, seed: int = 0) -> int:
    """Compute a stage's agreement report and store it with its time (the dashboard reads it)."""
    taken("agreement", stage_id)
    if archived(stage_id=stage_id):
        return 0
    with report(context.job.id, "agreement", f"stage {stage_id}", 1):
        return compute_agreement(stage_id, samples=samples, seed=seed)


@blueprint.task(name="export", queue="export", pass_context=True)
def export(context: JobContext, export_id: int) -> int:
    """Write a recorded export (its row shows progress on the project's export page)."""
    from app.services.exports import export as export_service

    e = env()
    with transaction(e.sessions) as s:
        status = s.scalar(sa.select(Export.status).where(Export.id == export_id))
    if archived(export_id=export_id) or status not in (None, "queued") and not context.job.attempts:
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
    if archived(project_id=project_id):
        return 0
    with report(context.job.id, "leaks", f"project {project_id}", 0):
        progress = progress_of(context.job.id)
        progress("loading models", 0, 1)
        embedders = leak_embedders(e.settings)
        try:
            report_id, _ = leaks_service.run(e.sessions, e.storage, project_id, version, embedders=embedders, progress=progress)
        except DomainError as exc:
            raise JobFailed(exc.message) from None
        return report_id


@blueprint.task(name=imports.HASH_TASK, queue="maintenance", pass_context=True, retry=RETRY)
def hash_images(context: JobContext, project_id: int) -> int:
    """Take the perceptual hashes of the project's stored images that have none: each import that
    stored images asks for it, so hashes follow the storing without a request computing one."""
    from app.services.leaks import leaks as leaks_service

    e = env()
    taken(imports.HASH_TASK, project_id)
    if archived(project_id=project_id):
        return 0
    with report(context.job.id, imports.HASH_TASK, f"project {project_id}", 0):
        return leaks_service.hash_missing(e.sessions, e.storage, project_id, progress_of(context.job.id))


def defer_hashes(settings: Settings, project_id: int) -> int | None:
    """Queue the hash job of a project once an import that asked for it has committed; None when a
    copy already waits (it hashes this import's images too) or the queue could not take it now
    (reconcile queues it then: the import recorded the request)."""
    job, kwargs = requested_job(imports.HASH_TASK, project_id)
    return _defer(settings, job, kwargs, f"{imports.HASH_TASK} {project_id}")


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
    job, argument = {"leaks": (leaks, "project_id"), "agreement": (agreement, "stage_id"),
                     imports.HASH_TASK: (hash_images, "project_id")}[task]
    lock = f"{task}:{key}"
    # Two hash jobs of a project would hash the same images: the second waits for the first.
    return job.configure(queueing_lock=lock, **({"lock": lock} if task == imports.HASH_TASK else {})), {argument: key}


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
    kind: str | None = None, available_only: bool = True, retry_failed: bool = False,
) -> list[Batch]:
    """Batches of active items lacking a suggestion kind that their stage reads. An item whose
    producer failed on it is left out while its inputs are unchanged, unless `retry_failed`."""
    q = sa.select(Stage).where(archive.live(Stage.project_id))  # an archived project's stages ask for nothing
    if project_id is not None:
        q = q.where(Stage.project_id == project_id)
    if stage_id is not None:
        q = q.where(Stage.id == stage_id)
    batches, known = [], producers()
    for stage in session.scalars(q.order_by(Stage.id)):
        for k in get_workflow(stage.workflow).suggestion_kinds:
            if (kind and k != kind) or k not in known or (available_only and unavailable(k, settings)):
                continue
            has = sa.exists().where(Suggestion.item_id == Item.id, Suggestion.stage_id == stage.id, Suggestion.kind == k)
            wanted = sa.select(Item.id).where(Item.stage_id == stage.id, Item.status == ItemStatus.active, ~has)
            if not retry_failed:
                wanted = wanted.where(~suggestion_failures.failed_unchanged(stage.id, k))
            ids = session.scalars(wanted.order_by(Item.id)).all()
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


async def requeue_requests(sessions: sessionmaker[Session]) -> int:
    """Queue again what `unqueued_requests` finds; returns how many jobs were queued."""

    def find() -> tuple[list[int], list[tuple[str, int]]]:
        with transaction(sessions) as s:
            return unqueued_requests(s)

    exports, requests = await asyncio.to_thread(find)
    return await defer_each([(export_job(i), {"export_id": i}) for i in exports] + [requested_job(task, key) for task, key in requests])


def recover_stalled(settings: Settings) -> int:
    """Run once when a worker starts, so that a restart picks up a killed worker's jobs at once."""

    async def run() -> int:
        app = make_app(settings)
        async with app.open_async():
            return await retry_stalled(app.job_manager, session_factory(get_engine(settings)), settings.worker_stalled_seconds)

    return asyncio.run(run())


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
    swept = await asyncio.to_thread(sweep_stored, e.sessions, e.storage, hourly=timestamp % 3600 < 60)
    batches = await asyncio.to_thread(find)
    deferred = await defer_each([(b.job, b.arguments) for b in batches])
    return {"stalled": stalled, "deferred": deferred, "requeued": requeued, "pruned": pruned, "swept": swept, "sessions_ended": expired}
