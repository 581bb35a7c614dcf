"""An item whose image cannot be read fails once: recorded with its reason in the batch's transaction,
left alone by reconcile while its record and images are unchanged, tried again after a record update
replaces the image or when an admin asks (`vlcurate suggest --retry-failed`), and shown on the jobs page."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.datasets.suggest import Failed
from app.db import transaction
from app.models import Asset, Item, Suggestion, SuggestionFailure
from app.services.annotation import suggestion_failures
from app.services.imports import imports
from app.worker import jobs, runtime, suggest_batch
from tests.conftest import colorswap_records, damage_stored, login, make_user, png_bytes
from tests.worker.test_jobs import VLCURATE, _import, _worker_env


def _failures(sessions) -> list[tuple]:
    with transaction(sessions) as s:
        return s.execute(sa.select(SuggestionFailure.item_id, SuggestionFailure.kind, SuggestionFailure.model,
                                   SuggestionFailure.reason)).all()


def _missing(sessions, cfg, **kwargs) -> list[tuple[str, list[int]]]:
    with transaction(sessions) as s:
        return [(b.kind, b.item_ids) for b in jobs.missing_batches(s, cfg, **kwargs)]


def _corrupt_one(committed, settings, storage, tiny_clip):
    records, files = colorswap_records(3)
    project_id, (filter_id,) = _import(committed, settings, storage, "broken", ["colorswap.filter"], records, files)
    cfg = settings.model_copy(update={"clip_model_dir": tiny_clip})
    runtime.configure(cfg)
    with transaction(committed) as s:
        ids = s.scalars(sa.select(Item.id).order_by(Item.id)).all()
        key = s.scalar(sa.select(Asset.storage_key).where(Asset.sha256 == s.get(Item, ids[1]).assets["/candidates/1/image"]))
    damage_stored(storage, key)
    with pytest.raises(runtime.JobFailed, match=f"1 of 3 items failed, the other 2 are stored: item {ids[1]}: "):
        suggest_batch.compute_suggestions(filter_id, "colorswap.itm", ids)
    return (records, files), project_id, filter_id, ids, cfg


def test_a_corrupt_image_fails_once_and_runs_again_when_a_record_update_replaces_it(committed, settings, storage, tiny_clip):
    (records, files), project_id, filter_id, ids, cfg = _corrupt_one(committed, settings, storage, tiny_clip)
    ((item_id, kind, model, reason),) = _failures(committed)
    assert (item_id, kind, model) == (ids[1], "colorswap.itm", "tiny-clip")
    assert reason.startswith(f"item {ids[1]}: the image /candidates/1/image cannot be read (")
    # Reconcile's next runs queue nothing: the item failed on inputs that have not changed.
    assert _missing(committed, cfg) == []
    assert _missing(committed, cfg, retry_failed=True) == [("colorswap.itm", [ids[1]])]

    # The client pushes the record again naming a new file: the item's image is replaced.
    records[1]["candidates"][1]["image"] = "img/1_1-again.png"
    files["img/1_1-again.png"] = png_bytes((10, 200, 90), size=(41, 31))
    with tempfile.TemporaryDirectory() as tmp, transaction(committed) as s:
        Path(tmp, "img").mkdir()
        for name, data in files.items():
            Path(tmp, name).write_bytes(data)
        done = imports.import_items(s, project_id, json.dumps(records[1]).encode(), "again.jsonl", settings=settings, storage=storage,
                                    images=imports.ImageSource(settings, storage, base=Path(tmp)), skip_existing=True, update_existing=True)
        assert done.updated == 1
    assert _missing(committed, cfg) == [("colorswap.itm", [ids[1]])]
    assert suggest_batch.compute_suggestions(filter_id, "colorswap.itm", [ids[1]]) == 1
    assert _failures(committed) == []  # computed: the failure is history
    with transaction(committed) as s:
        assert s.scalars(sa.select(Suggestion.item_id).order_by(Suggestion.item_id)).all() == ids
    assert _missing(committed, cfg) == []


def test_suggest_retry_failed_queues_them_again_and_the_jobs_page_lists_them(committed, settings, storage, tiny_clip, client):
    _, project_id, filter_id, ids, cfg = _corrupt_one(committed, settings, storage, tiny_clip)
    env = _worker_env(settings, VLCURATE_CLIP_MODEL_DIR=tiny_clip)
    plain = subprocess.run([VLCURATE, "suggest", str(project_id), "--no-wait"], env=env, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0 and "nothing to do" in plain.stdout and "--retry-failed" in plain.stdout, plain.stdout + plain.stderr
    again = subprocess.run([VLCURATE, "suggest", str(project_id), "--no-wait", "--retry-failed"], env=env, capture_output=True,
                           text=True, timeout=120)
    assert again.returncode == 0 and "Enqueued 1 jobs for 1 items" in again.stdout, again.stdout + again.stderr

    # A failure's reason is shown escaped (a reason quotes whatever an image library said).
    with transaction(committed) as s:
        inputs = suggestion_failures.fingerprints(s, [ids[0]])
        suggestion_failures.record(s, filter_id, "colorswap.itm", [Failed(ids[0], "item: <b>bad</b> & worse", "tiny-clip", "v<1>")], inputs)
    make_user(committed, "boss", "admin")
    login(client, "boss")
    page = client.get("/admin/jobs").text
    assert "Suggestions that failed" in page and "2 items could not be computed" in page
    assert "item: &lt;b&gt;bad&lt;/b&gt; &amp; worse" in page and "<b>bad</b>" not in page and "v&lt;1&gt;" in page
    assert f'<a href="/items/{ids[1]}/history">pair-1</a>' in page and "/candidates/1/image cannot be read" in page
    fragment = client.get("/admin/jobs", headers={"HX-Request": "true", "HX-Target": "jobs"}).text
    assert "suggestion-failure" in fragment
