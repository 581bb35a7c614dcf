"""The worker leaves an archived project alone: reconcile finds no suggestion batch for its stages and
queues none of its exports or requested reports (the real queue stays empty); a job queued before the
delete does nothing; the jobs page's suggestion failures leave it out. A restore brings its work back."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from app.db import transaction
from app.models import Item, JobRequest, SuggestionFailure
from app.services.annotation import suggestion_failures
from app.services.exports import export
from app.services.imports import imports
from app.services.projects import archive
from app.worker import jobs, runtime, upkeep
from tests.conftest import colorswap_records
from tests.worker.test_jobs import _import


def test_reconcile_queues_nothing_for_an_archived_project(committed, settings, storage):
    records, files = colorswap_records(2)
    pid, (stage,) = _import(committed, settings, storage, "cs-archived", ["colorswap.filter"], records, files)
    with transaction(committed) as s:
        export_id = export.create_export(s, pid, "jsonl", settings=settings).id
        s.execute(insert(JobRequest).values([{"task": "leaks", "key": pid}, {"task": "agreement", "key": stage}]))
        item = s.scalar(sa.select(Item.id).where(Item.project_id == pid).limit(1))
        s.add(SuggestionFailure(item_id=item, stage_id=stage, kind="colorswap.itm", inputs="x", reason="unreadable"))
        s.flush()
        assert suggestion_failures.recent(s)[0] == 1
        assert len(jobs.missing_batches(s, settings, available_only=False)) == 1
        assert upkeep.unqueued_requests(s) == ([export_id], [(imports.HASH_TASK, pid), ("leaks", pid), ("agreement", stage)])
        archive.archive_project(s, pid, "cs-archived")
    runtime.configure(settings)
    with transaction(committed) as s:
        assert jobs.missing_batches(s, settings, available_only=False) == []
        assert upkeep.unqueued_requests(s) == ([], [])
        assert suggestion_failures.recent(s) == (0, [])  # the jobs page's failures leave it out too
    assert runtime.archived(stage_id=stage) and runtime.archived(export_id=export_id) and runtime.archived(project_id=pid)

    async def requeue() -> int:
        async with jobs.make_app(settings).open_async():
            return await jobs.requeue_requests(committed)

    assert asyncio.run(requeue()) == 0
    with transaction(committed) as s:
        assert s.scalar(sa.text("SELECT count(*) FROM procrastinate_jobs")) == 0
        assert s.scalar(sa.select(sa.func.count()).select_from(JobRequest)) == 3  # kept for the restore
        archive.restore_project(s, pid)
    with transaction(committed) as s:
        assert [b.stage_id for b in jobs.missing_batches(s, settings, available_only=False)] == [stage]
        assert suggestion_failures.recent(s)[0] == 1
        assert upkeep.unqueued_requests(s) == ([export_id], [(imports.HASH_TASK, pid), ("leaks", pid), ("agreement", stage)])
    assert not runtime.archived(stage_id=stage)
