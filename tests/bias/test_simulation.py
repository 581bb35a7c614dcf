"""Scripted annotators on a real database through the real services: an "anchored" one who takes the
draft on screen 90 % of the time whatever it says, and an "independent" one who answers the truth. The
report tells them apart: probe catch rates with intervals that do not overlap, and a label shift
between the arms that is significant for the anchored annotator only."""

from __future__ import annotations

import datetime as dt
import random
import uuid

import sqlalchemy as sa

from app.datasets.voldoger.verify import CHECK_KIND, check_values
from app.models import Assignment
from app.services.annotation import annotation
from app.services.quality import bias
from tests import factories
from tests.bias.world import stage, truth_answer

N_ITEMS, N_GOLD = 320, 40


def answer(style: str, rng: random.Random, screen, truth: str) -> dict:
    """What a scripted annotator submits for the screen: the anchored one takes the check on screen 90 %
    of the time (whatever it says), else answers the truth, as the independent one always does."""
    check = screen.suggestions.get(CHECK_KIND)
    if style == "anchored" and check is not None and rng.random() < 0.9:
        values = check_values(check.payload, screen.item.data)
        return {"image": values["image"], "label": values.get("label"), "paraphrase": values["paraphrase"], "note": ""}
    return truth_answer(truth)


def work(session, stage_id: int, user_id: int, style: str, truths: dict[int, str], seed: int) -> int:
    rng = random.Random(seed)
    done = 0
    while (claimed := annotation.claim(session, stage_id, user_id)) is not None:
        screen = annotation.open_assignment(session, claimed.assignment_id, user_id)
        payload = answer(style, rng, screen, truths[claimed.item_id])
        # Ten seconds on the screen (the lease began that long ago), so the active time sent is within its wall time.
        session.execute(sa.update(Assignment).where(Assignment.id == claimed.assignment_id)
                        .values(lease_until=Assignment.lease_until - dt.timedelta(seconds=10)))
        annotation.submit(session, claimed.assignment_id, user_id, payload, uuid.uuid4().hex, seconds_spent=5.0, active_seconds=4.0)
        done += 1
    return done


def test_the_report_tells_an_anchored_annotator_from_an_independent_one(session, settings, storage, tmp_path):
    random.seed(5)  # the honeypot's draw of gold claims
    stage_id, truths, _ = stage(session, settings, storage, tmp_path, n=N_ITEMS, n_gold=N_GOLD, overlap=2, gold_share=0.3,
                                draft_control_share=0.5, draft_control_seed=11, probe_share=1.0)
    anchored, independent = factories.user(session, "anchored"), factories.user(session, "independent")
    for user_id, style, seed in ((anchored, "anchored", 1), (independent, "independent", 2)):
        assert work(session, stage_id, user_id, style, truths, seed) == N_ITEMS + N_GOLD

    built = bias.stage_report(session, stage_id, samples=500, seed=3)
    people = {a["annotator"]: a for a in built["annotators"]}
    a, i = people["anchored"], people["independent"]
    # Probes: about half the gold answers (the rest are in the control arm).
    assert 12 <= a["probe_catch"]["n"] <= 28 and 12 <= i["probe_catch"]["n"] <= 28
    assert a["probe_catch"]["high"] < i["probe_catch"]["low"]
    assert a["probe_catch"]["estimate"] < 0.3 and i["probe_catch"]["estimate"] == 1.0
    # The label moves towards the drafts' "yes" when they are shown, for the anchored annotator only.
    shift_a, shift_i = a["shift"]["labels"]["label"], i["shift"]["labels"]["label"]
    assert shift_a["chi_square"]["p"] < 0.001 and shift_i["chi_square"]["p"] > 0.05
    assert shift_a["difference"]["yes"]["low"] > 0.1
    assert shift_i["difference"]["yes"]["low"] < 0 < shift_i["difference"]["yes"]["high"]
    # Acceptance of the drafts: far above the control arm's baseline for the anchored annotator only.
    assert a["acceptance"]["shown"]["low"] > a["acceptance"]["control"]["high"]
    assert i["acceptance"]["shown"]["low"] < i["acceptance"]["control"]["estimate"] < i["acceptance"]["shown"]["high"]
    # Gold agreement per arm, and active time as sent.
    assert a["arms"]["probe"]["gold_agreement"]["estimate"] < 0.3 and i["arms"]["probe"]["gold_agreement"]["estimate"] == 1.0
    assert i["arms"]["control"]["time"]["estimate"] == 4.0
    # The whole stage's figures and the model's, and the flat rows the Parquet file holds.
    assert built["overall"]["arms"]["control"]["answers"] + built["overall"]["arms"]["shown"]["answers"] + \
        built["overall"]["arms"]["probe"]["answers"] == 2 * (N_ITEMS + N_GOLD)
    assert [m["model"] for m in built["models"]] == ["voldoger.check · tiny-vlm voldoger.check v1"]
    rows = list(bias.figure_rows(built))
    assert {"scope": "annotator", "group": "anchored", "figure": "probe_catch", **a["probe_catch"]} in rows
