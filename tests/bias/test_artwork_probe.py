"""An ExpArt explanation stage's draft through the API: a probe's claim shows the item's real drafted
explanation with the phrase the gold answer strikes inserted, in bytes shaped like every other claim, and
the submit records whether the annotator still struck it; the drafted explanation's outcome and distance
are recorded for every answer, with `shown` false in the control arm, whose claims carry no draft."""

from __future__ import annotations

import json
import uuid

import sqlalchemy as sa

from app.bias import arms
from app.datasets.artwork import drafts as artwork_drafts
from app.datasets.artwork import probes as artwork
from app.datasets.artwork.schema import DRAFTED_KIND
from app.db import transaction
from app.models import Annotation, Item, Stage, SuggestionOutcome
from app.services.annotation import suggestions
from app.services.quality import gold
from tests import factories
from tests.bias.test_probe_bytes import probe_round
from tests.conftest import login

PHRASE = "for a rich banker"
TRUTH = {"score": 3, "struck": [[11, 15]]}  # "for a rich banker" of the explanation below


def record(i: int) -> dict:
    return {"id": f"a{i}", "title": f"The Red Circle {i}", "image": f"https://example.org/{i}.png", "section": "History",
            "text": f"The Red Circle {i} is an oil painting by Anna Berg, made in Oslo in 1921. It hangs in the National Museum.",
            "entities": ["Anna Berg", "Oslo", "National Museum"], "model": "vlm-a",
            # tokens 0-17: The Red Circle {i} was painted by Anna Berg in Oslo for a rich banker in 1921 .
            "explanation": f"The Red Circle {i} was painted by Anna Berg in Oslo {PHRASE} in 1921."}


DRAFT = "A red circle on a white ground, painted by Anna Berg in 1921. It hangs in the National Museum."


def explanation_stage(s, settings, storage, folder, n: int, n_gold: int, **config) -> tuple[int, dict[int, dict], set[int]]:
    """The stage; each item's real draft payload by item id, and the gold items' ids."""
    _, (stage_id,) = factories.project(s, "artwork.explanation", overlap=1, config=config)
    project_id = s.get_one(Stage, stage_id).project_id
    records = [record(i) for i in range(n + n_gold)]
    factories.items(s, settings, storage, project_id, records, {}, folder)
    ids = {item.external_id: item.id for item in s.query(Item).filter(Item.project_id == project_id)}
    drafts = {}
    for r in records:
        drafts[ids[r["id"]]] = {"explanation": DRAFT, "metrics": artwork_drafts.metrics(r, DRAFT)}
        suggestions.store(s, ids[r["id"]], stage_id, DRAFTED_KIND, "tiny-vlm", drafts[ids[r["id"]]], model_version="explain v1")
    if n_gold:
        lines = [json.dumps({"id": f"a{i}", "answer": TRUTH}) for i in range(n, n + n_gold)]
        gold.import_answers(s, stage_id, "\n".join(lines).encode(), actor_id=None)
    return stage_id, drafts, {ids[f"a{i}"] for i in range(n, n + n_gold)}


def test_the_plant_inserts_the_struck_phrase_into_the_real_draft():
    item = record(0)
    planted = artwork.plant(TRUTH, item)
    assert planted == {"phrase": PHRASE}
    real = {"explanation": DRAFT, "metrics": {}, "note": "kept"}
    shown = artwork.into_draft(planted, real, item)
    assert shown["explanation"] == f"A red circle on a white ground, painted by Anna Berg in 1921 {PHRASE}. It hangs in the National Museum."
    assert shown["metrics"] == artwork_drafts.metrics(item, shown["explanation"]) and shown["note"] == "kept"
    assert artwork.inserted("An oil painting", "of a dog") == "An oil painting of a dog"  # no full stop: at the end
    assert artwork.caught(TRUTH, TRUTH, item)
    assert artwork.caught(TRUTH, {"score": 2, "struck": [[13, 14]]}, item)  # "rich" alone: the phrase is not kept
    assert not artwork.caught(TRUTH, {"score": 4, "struck": []}, item)
    assert not artwork.caught(TRUTH, {"score": 4, "struck": [[12, 13]]}, item)  # "a": no content word of it
    assert artwork.plant({"score": 5, "struck": []}, item) is None
    assert artwork.plant({"score": 4, "struck": [[11, 13]]}, item) is None  # "for a": nothing but function words


def test_a_probe_repeats_the_struck_phrase_and_a_correction_is_caught(app, client, settings, storage, tmp_path):
    with transaction(app.state.sessions) as s:
        stage_id, drafts, gold_ids = explanation_stage(s, settings, storage, tmp_path, n=3, n_gold=4, gold_share=0.5, probe_share=1.0)
        headers = [factories.bearer(s, f"art-{k}") for k in range(2)]

    def check(body, is_gold):
        (draft,) = body["suggestions"]
        if is_gold:
            assert draft["payload"]["explanation"] == artwork.inserted(DRAFT, PHRASE)
            assert draft["payload"].keys() == drafts[body["item_id"]].keys()
        else:
            assert draft["payload"] == drafts[body["item_id"]]

    # The first annotator keeps the phrase the draft repeats; the second strikes it as the gold answer does.
    caught = probe_round(app, client, stage_id, headers, gold_ids, check, lambda k, body: {"score": 4, "struck": []} if k == 0 else TRUTH)
    assert caught == {(0, False), (1, True)}
    with transaction(app.state.sessions) as s:
        outcomes = s.execute(sa.select(SuggestionOutcome.outcome, SuggestionOutcome.shown, SuggestionOutcome.edit_distance)
                             .where(SuggestionOutcome.stage_id == stage_id)).all()
    # The ordinary items' drafts repeat "Red", "Circle", "painted", "Anna", "Berg", "1921" of the explanation:
    # struck none of them (the first annotator), or none of them either (the gold answer strikes the phrase).
    assert len(outcomes) == 3 and set(outcomes) == {("accepted", True, 0.0)}


def test_the_control_arm_claims_no_draft_and_records_the_outcome_as_hidden(app, client, settings, storage, tmp_path):
    config = {"draft_control_share": 0.5, "draft_control_seed": 3}
    with transaction(app.state.sessions) as s:
        stage_id, _, _ = explanation_stage(s, settings, storage, tmp_path, n=12, n_gold=0, **config)
        h = factories.bearer(s, "art-control")
    seen = {}
    while (r := client.post(f"/api/v1/stages/{stage_id}/claim", headers=h)).status_code == 200:
        body = r.json()
        seen[body["assignment_id"]] = arms.arm(config, body["assignment_id"])
        assert (body["suggestions"] == []) == (seen[body["assignment_id"]] == arms.CONTROL)
        # Strikes "Anna Berg" (the draft repeats both) and "Oslo" (the draft does not say it).
        assert client.post(f"/api/v1/assignments/{body['assignment_id']}/submit", headers=h,
                           json={"payload": {"score": 3, "struck": [[7, 9], [10, 11]]}, "idempotency_key": uuid.uuid4().hex}).status_code == 200
    assert len(seen) == 12 and {arms.CONTROL, arms.SHOWN} <= set(seen.values())
    with transaction(app.state.sessions) as s:
        rows = s.execute(sa.select(Annotation.assignment_id, Annotation.arm, SuggestionOutcome.outcome, SuggestionOutcome.shown,
                                   SuggestionOutcome.edit_distance)
                         .join(SuggestionOutcome, SuggestionOutcome.annotation_id == Annotation.id)
                         .where(Annotation.stage_id == stage_id)).all()
    assert len(rows) == 12
    for assignment_id, arm, outcome, shown, distance in rows:
        assert arm == seen[assignment_id] and shown == (arm != arms.CONTROL)
        assert (outcome, distance) == ("edited", 2 / 6)  # two of the six repeated words struck


def test_the_screen_of_a_probe_shows_the_planted_draft(app, client, settings, storage, tmp_path):
    with transaction(app.state.sessions) as s:
        stage_id, _, gold_ids = explanation_stage(s, settings, storage, tmp_path, n=0, n_gold=2, gold_share=0.5, probe_share=1.0)
        h = factories.bearer(s, "art-screen")
    assert login(client, "art-screen").status_code == 303
    r = client.post(f"/api/v1/stages/{stage_id}/claim", headers=h)
    assert r.status_code == 200 and r.json()["item_id"] in gold_ids
    page = client.get(f"/assignments/{r.json()['assignment_id']}")
    assert page.status_code == 200
    drafted = page.text.split("data-drafted-explanation", 1)[1].split("</section>", 1)[0]
    assert artwork.inserted(DRAFT, PHRASE) in drafted and DRAFT not in drafted
