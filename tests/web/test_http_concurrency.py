"""The queue's guarantees through HTTP, against a live uvicorn process."""

from __future__ import annotations

import threading
import uuid
from collections import Counter

import httpx
import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation, Assignment
from tests.conftest import make_choice_project, make_token, make_user, run_concurrently


def test_32_http_clients_as_8_annotators_drain_a_stage(live_process, committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 150, overlap=3)
    tokens = [make_token(committed, make_user(committed, f"web{i}")) for i in range(8)]
    statuses, lost = Counter(), set()
    lock = threading.Lock()

    def worker(token: str) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=live_process, headers=headers, timeout=30) as http:
            while True:
                r = http.post(f"/api/v1/stages/{stage_id}/claim")
                with lock:
                    statuses[r.status_code] += 1
                if r.status_code == 204:
                    return
                r.raise_for_status()
                aid = r.json()["assignment_id"]
                body = {"payload": {"choice": "b"}, "idempotency_key": uuid.uuid4().hex}
                # Every submit is sent twice, as a client retrying after a lost response would.
                first = http.post(f"/api/v1/assignments/{aid}/submit", json=body)
                if first.status_code == 409:
                    # Four clients share each token, and a claim resumes the annotator's live
                    # lease: a sibling client submitted this assignment first.
                    with lock:
                        lost.add(aid)
                    continue
                second = http.post(f"/api/v1/assignments/{aid}/submit", json=body)
                first.raise_for_status()
                assert second.json()["annotation_id"] == first.json()["annotation_id"]

    run_concurrently(worker, [(tokens[i % 8],) for i in range(32)])
    # 450 leases; a resumed one is answered again to the sibling that asked.
    assert set(statuses) == {200, 204} and statuses[200] >= 450
    with transaction(committed) as s:
        # Siblings sharing a lease may each submit it: the later ones are the annotator's revisions.
        per_item = Counter(dict(s.execute(
            sa.select(Annotation.item_id, sa.func.count(Annotation.annotator_id.distinct())).group_by(Annotation.item_id)).all()))
        keys = s.execute(sa.select(Annotation.annotator_id, Annotation.idempotency_key)).all()
        pairs = s.execute(sa.select(Assignment.item_id, Assignment.annotator_id)).all()
        submitted = set(s.scalars(sa.select(Annotation.assignment_id)))
    assert len(per_item) == 150 and set(per_item.values()) == {3}
    assert len(pairs) == len(set(pairs)) == 450
    assert lost <= submitted  # every refused submit was a lease a sibling had submitted
    assert len(keys) == len(set(keys))  # no retried submit stored twice
