"""A ColorSwap filtering stage's probe through the API: the claim shows scores that preselect the gold
answer's images the wrong way round, in bytes shaped like every other claim, and the submit records
whether the annotator caught it by the task's own comparison."""

from __future__ import annotations

import json
import uuid

import sqlalchemy as sa

from app.datasets.colorswap.filter import preselect
from app.datasets.colorswap.schema import ITM_KIND
from app.db import transaction
from app.models import Annotation, Item, Stage
from app.services.annotation import suggestions
from app.services.quality import gold
from tests import factories
from tests.bias.test_probe_bytes import skeleton


def record(i: int) -> dict:
    return {"id": f"p{i}", "caption_1": f"a red cup on a blue table {i}", "caption_2": f"a blue cup on a red table {i}",
            "candidates": [{"image": f"https://example.org/{i}-{k}.png", "from_caption": 1 + k % 2} for k in range(3)]}


def filter_stage(s, settings, storage, folder, n: int, n_gold: int) -> tuple[int, dict[int, dict]]:
    """The stage, and each gold item's true answer by item id."""
    _, (stage_id,) = factories.project(s, "colorswap.filter", overlap=1, config={"gold_share": 0.5, "probe_share": 1.0})
    project_id = s.get_one(Stage, stage_id).project_id
    factories.items(s, settings, storage, project_id, [record(i) for i in range(n + n_gold)], {}, folder)
    ids = {item.external_id: item.id for item in s.query(Item).filter(Item.project_id == project_id)}
    for i in range(n + n_gold):  # the model's preselection: image 1 for caption 1, image 2 for caption 2 (right on gold)
        suggestions.store(s, ids[f"p{i}"], stage_id, ITM_KIND, "clip", {"scores": [[0.29, 0.21], [0.2, 0.27], [0.18, 0.19]]},
                          model_version="itm v1")
    truths = {ids[f"p{i}"]: {"choice_1": 0, "choice_2": 1} for i in range(n, n + n_gold)}
    lines = [json.dumps({"id": f"p{i}", "answer": {"choice_1": 0, "choice_2": 1}}) for i in range(n, n + n_gold)]
    gold.import_answers(s, stage_id, "\n".join(lines).encode(), actor_id=None)
    return stage_id, truths


def test_a_filter_probe_swaps_the_preselection_and_a_correction_is_caught(app, client, settings, storage, tmp_path):
    with transaction(app.state.sessions) as s:
        stage_id, truths = filter_stage(s, settings, storage, tmp_path, n=3, n_gold=4)
        headers = [factories.bearer(s, f"filter-{k}") for k in range(2)]
    probes, ordinary, answered = [], None, {}
    for k, h in enumerate(headers):
        while (r := client.post(f"/api/v1/stages/{stage_id}/claim", headers=h)).status_code == 200:
            body = r.json()
            (itm,) = body["suggestions"]
            pre = preselect(itm["payload"]["scores"])
            if body["item_id"] in truths:
                assert (pre.choice_1, pre.choice_2) == (1, 0)  # the gold answer's images, the wrong way round
                probes.append(r.text)
            else:
                ordinary = r.text
            # The first annotator takes the preselection as shown; the second chooses the right images.
            choice = {"choice_1": pre.choice_1, "choice_2": pre.choice_2} if k == 0 else {"choice_1": 0, "choice_2": 1}
            answered[body["assignment_id"]] = k
            assert client.post(f"/api/v1/assignments/{body['assignment_id']}/submit", headers=h,
                               json={"payload": choice, "idempotency_key": uuid.uuid4().hex}).status_code == 200
    assert probes and ordinary is not None
    assert all(skeleton(p) == skeleton(ordinary) for p in probes)
    with transaction(app.state.sessions) as s:
        rows = s.execute(sa.select(Annotation.assignment_id, Annotation.arm, Annotation.probe_caught)
                         .where(Annotation.probe_caught.is_not(None))).all()
    assert rows and {arm for _, arm, _ in rows} == {"probe"}
    assert {(answered[a], caught) for a, _, caught in rows} == {(0, False), (1, True)}
