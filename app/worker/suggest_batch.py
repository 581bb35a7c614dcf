"""One batch of one suggestion kind: the items' inputs read, the producer run, the results stored."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.datasets import producers
from app.datasets.suggest import Failed, ItemInput, Produced
from app.db import transaction
from app.models import Asset, Item, Stage
from app.services.annotation import suggestion_failures, suggestions as suggestions_service
from app.services.annotation.pipeline import results_by_stage_many
from app.storage import Storage, get_many
from app.worker import backends
from app.worker.runtime import JobFailed, env


def load_inputs(session: Session, storage: Storage, stage_id: int, item_ids: list[int], with_images: bool) -> list[ItemInput]:
    """The items still in the stage, with their earlier stages' results and, when the kind needs
    them, the bytes of their stored images (read concurrently: on S3 each read is a round trip)."""
    items = session.scalars(sa.select(Item).where(Item.id.in_(item_ids), Item.stage_id == stage_id).order_by(Item.id)).all()
    shas = {sha for item in items for sha in item.assets.values()} if with_images else set()
    keys = dict(session.execute(sa.select(Asset.sha256, Asset.storage_key).where(Asset.sha256.in_(shas))).all()) if shas else {}
    data = get_many(storage, keys.values())
    results = results_by_stage_many(session, [item.id for item in items])
    inputs = []
    for item in items:
        images = {p: data[keys[sha]] for p, sha in item.assets.items() if sha in keys} if with_images else {}
        inputs.append(ItemInput(item.id, item.data, images, results[item.id]))
    return inputs


def compute_suggestions(stage_id: int, kind: str, item_ids: list[int]) -> int:
    """Compute and store one kind of suggestion for the items; returns how many were stored.

    The rows are written in one statement once the whole batch is computed, so a worker killed
    mid-batch leaves nothing of it behind (the batch runs again whole). Items the producer could
    not compute (an unreadable image) are recorded as failed in the same transaction (reconcile
    leaves them alone until their inputs change), and fail the job, not retried, with their reasons."""
    known = producers()
    producer = known.get(kind)
    if producer is None:
        raise JobFailed(f"Unknown suggestion kind '{kind}'. Known kinds: {', '.join(sorted(known))}.")
    e = env()
    with transaction(e.sessions) as s:
        if s.get(Stage, stage_id) is None:
            raise JobFailed(f"Stage {stage_id} no longer exists.")
        inputs = load_inputs(s, e.storage, stage_id, item_ids, producer.needs_images)
        fingerprints = suggestion_failures.fingerprints(s, [i.id for i in inputs])
    if not inputs:
        raise JobFailed(f"None of the items {_ids(item_ids)} exists in stage {stage_id} any more (deleted or moved on).")
    results = producer.run(inputs, e.settings, backends)
    produced = [r for r in results if isinstance(r, Produced)]
    failed = [r for r in results if isinstance(r, Failed)]
    with transaction(e.sessions) as s:
        suggestions_service.store_many(s, stage_id, kind, produced)
        suggestion_failures.clear(s, stage_id, kind, [p.item_id for p in produced])
        suggestion_failures.record(s, stage_id, kind, failed, fingerprints)
    if failed:
        reasons = "; ".join(f.reason for f in failed[:3]) + (f"; and {len(failed) - 3} more" if len(failed) > 3 else "")
        raise JobFailed(f"{len(failed)} of {len(results)} items failed, the other {len(produced)} are stored: {reasons}")
    return len(produced)


def _ids(ids: list[int]) -> str:
    return ", ".join(map(str, ids[:5])) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
