"""A VisArgs premises stage's probe through the API: the claim shows the model's own drafted premises with
one planted premise added (drawn per gold item, never the gold premises plus one line), in bytes shaped
like every other claim, and the submit records whether the annotator dropped it."""

from __future__ import annotations

import json

from app.datasets.visargs import probes
from app.datasets.visargs.schema import PREMISES_KIND
from app.db import transaction
from app.models import Item, Stage
from app.services.annotation import suggestions
from app.services.quality import gold
from tests import factories
from tests.bias.test_probe_bytes import probe_round
from tests.conftest import png_bytes

DRAFT = ["A poster with words", "A drop of water"]
# Drafts differ in length anyway; an ordinary item's draft as long as a probe's keeps the claims' shapes comparable.
LONGER = [*DRAFT, "A tap"]


def premises_stage(s, settings, storage, folder, n: int, n_gold: int) -> tuple[int, dict[int, dict]]:
    """The stage, and each gold item's true answer by item id."""
    _, (stage_id,) = factories.project(s, "visargs.premises", overlap=1, config={"gold_share": 0.5, "probe_share": 1.0})
    project_id = s.get_one(Stage, stage_id).project_id
    records = [{"id": f"v{i}", "image": f"v{i}.png"} for i in range(n + n_gold)]
    factories.items(s, settings, storage, project_id, records, {f"v{i}.png": png_bytes() for i in range(n + n_gold)}, folder)
    ids = {item.external_id: item.id for item in s.query(Item).filter(Item.project_id == project_id)}
    for i in range(n + n_gold):
        drafted = LONGER if i < n else DRAFT
        suggestions.store(s, ids[f"v{i}"], stage_id, PREMISES_KIND, "vlm", {"visual_premises": drafted}, model_version="v1")
    answers = {f"v{i}": {"visual_premises": [f"The words SAVE WATER {i}", "A blue drop"], "discard": False} for i in range(n, n + n_gold)}
    gold.import_answers(s, stage_id, "\n".join(json.dumps({"id": k, "answer": a}) for k, a in answers.items()).encode(), actor_id=None)
    return stage_id, {ids[k]: a for k, a in answers.items()}


def test_a_premises_probe_adds_a_drawn_premise_to_the_real_draft_and_a_drop_is_caught(app, client, settings, storage, tmp_path):
    with transaction(app.state.sessions) as s:
        stage_id, truths = premises_stage(s, settings, storage, tmp_path, n=3, n_gold=6)
        data = {item.id: item.data for item in s.query(Item).filter(Item.id.in_(list(truths)))}
        headers = [factories.bearer(s, f"premises-{k}") for k in range(2)]
    planted: set[str] = set()

    def check(body, is_gold):
        (drafted,) = body["suggestions"]
        shown = drafted["payload"]["visual_premises"]
        if is_gold:
            phrase = probes.planted_premise(truths[body["item_id"]], data[body["item_id"]])
            assert shown == [*DRAFT, phrase]  # the model's draft, not the gold premises
            planted.add(phrase)
        else:
            assert shown == LONGER

    def answer(k, body):
        # The first annotator keeps the draft as shown; the second answers the gold premises.
        shown = body["suggestions"][0]["payload"]["visual_premises"]
        return {"visual_premises": shown, "discard": False} if k == 0 else truths.get(body["item_id"], {"visual_premises": LONGER})

    assert probe_round(app, client, stage_id, headers, set(truths), check, answer) == {(0, False), (1, True)}
    assert len(planted) > 1  # not one sentence on every probe
