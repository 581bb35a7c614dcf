"""Honeypots under concurrency, through HTTP against a live uvicorn process: the queue's guarantees
hold and gold items are served at the configured share."""

from __future__ import annotations

import json
import math
import threading
import uuid
from collections import Counter

import httpx
import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation, Assignment, Item, Stage
from app.services.quality import gold
from tests.conftest import make_choice_project, make_token, make_user, run_concurrently

SHARE = 0.2


def test_32_http_clients_with_honeypots_at_20_percent(live_process, committed, settings, storage):
    ordinary, n_gold = 150, 80
    _, stage_id = make_choice_project(committed, settings, storage, ordinary + n_gold, overlap=3)
    with transaction(committed) as s:
        body = "\n".join(json.dumps({"id": f"it-{i}", "answer": {"choice": "b"}}) for i in range(ordinary, ordinary + n_gold))
        gold.import_answers(s, stage_id, body.encode(), actor_id=None)
        stage = s.get(Stage, stage_id)
        stage.config = {**stage.config, "gold_share": SHARE}
        gold_ids = gold.gold_item_ids(s, stage_id)
    tokens = [make_token(committed, make_user(committed, f"web{i}")) for i in range(8)]
    statuses = Counter()
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
                sent = http.post(f"/api/v1/assignments/{aid}/submit", json={"payload": {"choice": "b"}, "idempotency_key": uuid.uuid4().hex})
                if sent.status_code != 409:  # 409: a sibling client sharing the token submitted this lease first
                    sent.raise_for_status()

    run_concurrently(worker, [(tokens[i % 8],) for i in range(32)])
    assert set(statuses) == {200, 204}
    with transaction(committed) as s:
        rows = s.execute(sa.select(Assignment.item_id, Assignment.annotator_id)).all()
        per_item = Counter(dict(s.execute(
            sa.select(Annotation.item_id, sa.func.count(Annotation.annotator_id.distinct()))
            .where(Annotation.item_id.notin_(gold_ids)).group_by(Annotation.item_id)).all()))
        over = s.scalar(sa.select(sa.func.count()).select_from(Item).where(Item.status == "active"))
        statuses_left = set(s.scalars(sa.select(Item.status).where(Item.id.in_(gold_ids))))
        gold_runs = s.execute(sa.text(
            "SELECT a.annotator_id, bool_or(g AND prev_g) FROM (SELECT a.annotator_id, i.status = 'gold' AS g,"
            " lag(i.status = 'gold') OVER (PARTITION BY a.annotator_id ORDER BY a.id) AS prev_g"
            " FROM assignments a JOIN items i ON i.id = a.item_id) a GROUP BY a.annotator_id")).all()
    # Exactly N: every ordinary item has 3 annotators, none more; no (item, annotator) twice, gold or not.
    assert len(per_item) == ordinary and set(per_item.values()) == {3} and over == 0
    assert len(rows) == len(set(rows))
    assert statuses_left == {"gold"}
    assert not any(twice for _, twice in gold_runs), "two gold items in a row"
    # Gold served at the configured share of claims, within a 4-sigma binomial bound.
    n = len(rows)
    served = sum(1 for item, _ in rows if item in gold_ids)
    assert n >= ordinary * 3
    assert abs(served - SHARE * n) <= 4 * math.sqrt(n * SHARE * (1 - SHARE)), (served, n)
