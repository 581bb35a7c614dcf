"""Perceptual hashes after an import: a push stores its images and takes no hash; it queues the
worker's `hash_images` job once committed (one waiting copy a project, however many pushes), and a
real worker then hashes every new image as the leaks job would; an import whose defer is missing
(the CLI, a failed defer) leaves a request that reconcile queues."""

from __future__ import annotations

import asyncio
import json

import pytest
import sqlalchemy as sa

from app import leakage
from app.db import transaction
from app.errors import Invalid
from app.models import Asset, ImageHash, JobRequest, JobRun
from app.services.imports import imports
from app.worker import jobs, upkeep
from tests import factories
from tests.conftest import png_bytes, zip_bytes
from tests.services.test_leaks import encode, texture
from tests.worker.test_queued_requests import run_worker


def _push(client, headers, project_id: int, first: int, images: dict[str, bytes]):
    body = "\n".join(json.dumps({"id": f"r{first + i}", "image": name, "question": "Which?"}) for i, name in enumerate(images))
    return client.post(f"/api/v1/projects/{project_id}/records", headers=headers,
                       files={"file": ("r.jsonl", body.encode()), "images": ("i.zip", zip_bytes(images))})


def _state(sessions) -> tuple[int, list, list]:
    with transaction(sessions) as s:
        hashes = s.scalar(sa.select(sa.func.count()).select_from(ImageHash))
        requests = s.execute(sa.select(JobRequest.task, JobRequest.key)).all()
        queued = s.execute(sa.text("SELECT args, status::text FROM procrastinate_jobs WHERE task_name = 'vlcurate:hash_images'")).all()
    return hashes, [tuple(r) for r in requests], [tuple(q) for q in queued]


def test_a_push_takes_no_hash_and_a_worker_hashes_its_images_after(committed, client, app, storage):
    sessions = app.state.sessions
    with transaction(sessions) as s:
        admin = factories.bearer(s, "boss", "admin")
        project_id, _ = factories.project(s, "generic.choice")
    first = {f"a{i}.png": encode(texture(i)) for i in range(3)} | {"a3.jpg": encode(texture(3), "JPEG", quality=90)}
    second = {f"b{i}.png": encode(texture(10 + i)) for i in range(2)}
    assert _push(client, admin, project_id, 0, first).status_code == 200
    assert _push(client, admin, project_id, 10, second).status_code == 200
    # Stored and recorded, not hashed: two pushes, one request, one waiting job (its queueing lock).
    hashes, requests, queued = _state(sessions)
    assert hashes == 0 and requests == [("hash_images", project_id)]
    assert queued == [({"project_id": project_id}, "todo")]

    run_worker(app.state.settings, ["maintenance"])
    hashes, requests, queued = _state(sessions)
    assert hashes == 6 and requests == [] and queued == [({"project_id": project_id}, "succeeded")]
    with transaction(sessions) as s:
        stored = dict(s.execute(sa.select(ImageHash.sha256, ImageHash.phash)).all())
        keys = dict(s.execute(sa.select(Asset.sha256, Asset.storage_key)).all())
        assert s.execute(sa.select(JobRun.task, JobRun.status, JobRun.done, JobRun.total)).all() == [("hash_images", "succeeded", 6, 6)]
    # The same hash as hashing the stored bytes afresh, the JPEG's included.
    assert stored == {sha: leakage.phash(storage.get(key)) for sha, key in keys.items()}

    # A push of images stored before asks again, and the job finds nothing left to hash.
    assert _push(client, admin, project_id, 20, {"again.png": first["a0.png"]}).status_code == 200
    run_worker(app.state.settings, ["maintenance"])
    hashes, requests, queued = _state(sessions)
    assert hashes == 6 and requests == [] and [status for _, status in queued] == ["succeeded"] * 2


def test_an_import_without_a_defer_leaves_a_request_that_reconcile_queues(committed, settings, storage, tmp_path):
    with transaction(committed) as s:
        project_id, _ = factories.project(s, "generic.choice")
        factories.items(s, settings, storage, project_id, [{"id": "x", "image": "x.png", "question": "Q"}],
                        {"x.png": png_bytes()}, tmp_path)
    # A refused import records nothing (its savepoint rolled back with it).
    with transaction(committed) as s:
        other, _ = factories.project(s, "generic.choice")
    with pytest.raises(Invalid) as refused, transaction(committed) as s:
        factories.items(s, settings, storage, other, [{"id": "y", "image": "y.png", "question": "Q"}],
                        {"y.png": encode(texture(5))[:-100]}, tmp_path)
    assert "y.png" in refused.value.errors[0] and "truncated" in refused.value.errors[0]
    with transaction(committed) as s:
        assert upkeep.unqueued_requests(s) == ([], [(imports.HASH_TASK, project_id)])

    async def requeue() -> int:
        async with jobs.make_app(settings).open_async():
            return await jobs.requeue_requests(committed)

    assert asyncio.run(requeue()) == 1
    run_worker(settings, ["maintenance"])
    with transaction(committed) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(ImageHash)) == 1
        assert upkeep.unqueued_requests(s) == ([], [])
