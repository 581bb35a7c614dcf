"""A probe's claim answer is written like every other claim's: nothing in its bytes tells it is gold."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation, Item
from tests import factories
from tests.bias.world import stage, truth_answer

# A JSON string (with the colon after it when it is a key) or a number, left to right.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"(\s*:)?|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?')


def skeleton(raw: str) -> str:
    """The claim with its item-specific values (strings that are no keys, numbers) replaced."""
    def value(m: re.Match[str]) -> str:
        return m.group(0) if m.group(1) else ('"S"' if m.group(0).startswith('"') else "N")
    return _TOKEN.sub(value, raw)


def probe_round(app, client, stage_id: int, headers: list[dict], gold_ids: set[int], check: Callable[[dict, bool], None],
                answer: Callable[[int, dict], dict]) -> set[tuple[int, bool]]:
    """Each annotator (`headers`, in turn) claims through the API until nothing is left, `check`s each claim
    (its body, and whether its item is gold) and submits `answer(annotator's index, body)`. Every probe's
    claim must have an ordinary one's bytes shape; returns (annotator's index, caught) of the probe answers."""
    probes, ordinary, answered = [], None, {}
    for k, h in enumerate(headers):
        while (r := client.post(f"/api/v1/stages/{stage_id}/claim", headers=h)).status_code == 200:
            body = r.json()
            check(body, body["item_id"] in gold_ids)
            if body["item_id"] in gold_ids:
                probes.append(r.text)
            else:
                ordinary = r.text
            answered[body["assignment_id"]] = k
            assert client.post(f"/api/v1/assignments/{body['assignment_id']}/submit", headers=h,
                               json={"payload": answer(k, body), "idempotency_key": uuid.uuid4().hex}).status_code == 200
    assert probes and ordinary is not None
    assert all(skeleton(p) == skeleton(ordinary) for p in probes)
    with transaction(app.state.sessions) as s:
        rows = s.execute(sa.select(Annotation.assignment_id, Annotation.arm, Annotation.probe_caught)
                         .where(Annotation.stage_id == stage_id, Annotation.probe_caught.is_not(None))).all()
    assert len(rows) == len(probes) and {arm for _, arm, _ in rows} == {"probe"}
    return {(answered[a], caught) for a, _, caught in rows}


def test_a_probe_claim_has_the_bytes_shape_of_an_ordinary_one(app, client, settings, storage, tmp_path):
    with transaction(app.state.sessions) as s:
        stage_id, truths, drafts = stage(s, settings, storage, tmp_path, n=3, n_gold=3, overlap=1, gold_share=0.5, probe_share=1.0)
        s.execute(sa.update(Item).where(Item.id.in_(list(truths))).values(
            data=sa.func.replace(sa.cast(Item.data, sa.Text), "red?", "rouge, déjà vu?").cast(Item.data.type)))
        gold_ids = set(list(truths)[3:])
        headers = [factories.bearer(s, f"shape-{k}") for k in range(3)]
    probe, ordinary = None, None
    for h in headers:
        while (r := client.post(f"/api/v1/stages/{stage_id}/claim", headers=h)).status_code == 200:
            body = r.json()
            (check,) = body["suggestions"]
            if body["item_id"] in gold_ids and check["payload"] != drafts[body["item_id"]]:
                probe = r.text
            elif body["item_id"] not in gold_ids:
                ordinary = r.text
            client.post(f"/api/v1/assignments/{body['assignment_id']}/submit", headers=h,
                        json={"payload": truth_answer(truths[body["item_id"]]), "idempotency_key": uuid.uuid4().hex})
    assert probe is not None and ordinary is not None
    assert "rouge, déjà vu?" in probe and "\\u" not in probe
    assert skeleton(probe) == skeleton(ordinary)
