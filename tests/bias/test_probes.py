"""Probe definitions: what each plants from a gold answer, and what counts as caught; and the exposure
that decides, per assignment, whether a probe can be shown at all."""

from __future__ import annotations

from app.bias import arms
from app.bias.probes import exposure, shown
from app.datasets import probe_for
from app.datasets.colorswap import probes as colorswap
from app.datasets.visargs import probes as visargs
from app.datasets.visargs.premises import VisArgsPremises
from app.datasets.voldoger import probes as voldoger
from app.datasets.wikido import probes as wikido
from app.datasets.wikido.verify import WikiDOVerify
from app.datasets.workflow import ItemContext

VQA = {"task": "vqa", "stylised": {"question": "Is the ball red?"}}
CAP = {"task": "cap", "stylised": {"caption": "A ball."}}
CAPTION = {"caption": "A red tram in Lisbon, built in 1901.", "orig_cap": "A tram."}


def test_voldoger_plants_a_flipped_label_or_decision():
    keep_yes = {"image": "keep", "label": "yes", "paraphrase": "keep", "note": ""}
    assert voldoger.plant(keep_yes, VQA) == {"image": "keep", "label": "no", "paraphrase": "Is the ball red?", "reason": ""}
    assert voldoger.caught(keep_yes, {**keep_yes}, VQA)
    assert not voldoger.caught(keep_yes, {**keep_yes, "label": "no"}, VQA)
    assert voldoger.caught(keep_yes, {"image": "discard", "label": None}, VQA)
    discard = {"image": "discard", "label": None, "paraphrase": None, "note": ""}
    assert voldoger.plant(discard, VQA)["image"] == "keep"
    assert voldoger.caught(discard, discard, VQA) and not voldoger.caught(discard, keep_yes, VQA)
    keep_cap = {"image": "keep", "label": None, "paraphrase": "keep", "note": ""}
    assert voldoger.plant(keep_cap, CAP)["image"] == "discard"  # captioning has no label to flip
    assert voldoger.caught(keep_cap, keep_cap, CAP)


def test_wikido_underlines_words_the_gold_answer_keeps():
    workflow = WikiDOVerify()
    correct = workflow.validate_annotation(ItemContext(CAPTION, {}), {"verdict": "correct"})
    trimmed = workflow.validate_annotation(ItemContext(CAPTION, {}), {"verdict": "hallucinated", "caption": "red tram in Lisbon."})
    assert wikido.plant(correct, CAPTION) == {"spans": [[0, 2]]}  # "A red"
    assert wikido.plant(trimmed, CAPTION) == {"spans": [[1, 3]]}  # "red tram": the gold answer struck "A"
    assert wikido.plant({"verdict": "wrong"}, CAPTION) is None
    struck_red = workflow.validate_annotation(ItemContext(CAPTION, {}), {"verdict": "hallucinated", "caption": "A tram in Lisbon, built in 1901."})
    assert wikido.caught(correct, correct, CAPTION) and not wikido.caught(correct, struck_red, CAPTION)
    assert wikido.caught(trimmed, trimmed, CAPTION)


def test_visargs_adds_a_premise_and_colorswap_inserts_a_phrase_into_the_real_draft():
    truth = {"visual_premises": ["The words SAVE WATER", "A blue drop"], "discard": False}
    draft = {"visual_premises": ["Words on a poster", "A drop"]}
    phrase = visargs.planted_premise(truth, {})
    planted = visargs.into_draft(visargs.plant(truth, {}), draft, {})
    assert planted == {"visual_premises": ["Words on a poster", "A drop", phrase]}
    assert visargs.plant({"visual_premises": [], "discard": True}, {}) is None
    assert visargs.caught(truth, truth, {}) and not visargs.caught(truth, {**planted, "discard": False}, {})
    assert visargs.caught(truth, {"visual_premises": planted["visual_premises"], "discard": True}, {})
    assert VisArgsPremises().suggestion_distance(ItemContext({}, {}), "visargs.visual_premises", planted, draft) == 1 - 2 / 3
    pair = {"caption_1": "A red cup on a blue table.", "caption_2": "A blue cup on a red table."}
    real = {"caption_1": "A red mug on a blue desk.", "caption_2": "A blue mug on a red desk.", "note": "kept"}
    phrase = colorswap.planted_phrase(pair, {})
    drafted = colorswap.into_draft(colorswap.plant(pair, {}), real, {})
    assert drafted == {"caption_1": f"A red mug on a blue desk {phrase}.", "caption_2": f"A blue mug on a red desk {phrase}.", "note": "kept"}
    assert colorswap.caught(pair, pair, {}) and not colorswap.caught(pair, {**pair, "caption_2": drafted["caption_2"]}, {})
    assert colorswap.plant({"caption_1": "", "caption_2": "x"}, {}) is None


def _gold_items(n: int) -> list[dict]:
    return [{"image": f"poster-{k}.jpg", "candidate_premises": [f"Candidate {k}"]} for k in range(n)]


def test_the_premises_probe_neither_repeats_one_premise_nor_shows_the_gold_premises():
    """One fixed planted premise would mark every probe once an annotator had seen it; and a draft made of
    the gold premises plus the plant would score 1 for deleting the one line that is new."""
    truth = {"visual_premises": ["The words SAVE WATER", "A blue drop"], "discard": False}
    phrases = [visargs.planted_premise(truth, item) for item in _gold_items(30)]
    assert len(set(phrases)) >= 12, phrases
    item, real = _gold_items(1)[0], {"payload": {"visual_premises": ["A poster with words", "A drop of water"]}}
    seen = exposure({"probe_share": 1.0}, 1, probe=probe_for("visargs.premises"), truth=truth, data=item, kinds={"visargs.visual_premises"})
    drafted = shown(seen, {"visargs.visual_premises": real}, lambda s, p: {"payload": p}, lambda s: s["payload"])["visargs.visual_premises"]
    assert drafted["payload"]["visual_premises"] == ["A poster with words", "A drop of water", phrases[0]]
    assert visargs.caught(truth, truth, item) and not visargs.caught(truth, drafted["payload"], item)
    # A phrase the gold answer states is never planted: keeping it would be right.
    assert visargs.planted_premise({**truth, "visual_premises": [phrases[0].upper()]}, item) != phrases[0]


def test_the_recaption_probe_neither_repeats_one_phrase_nor_shows_the_gold_captions():
    pair = {"caption_1": "A red cup on a blue table.", "caption_2": "A blue cup on a red table."}
    items = [{"caption_1": f"A red cup {k}.", "caption_2": f"A blue cup {k}."} for k in range(30)]
    phrases = [colorswap.planted_phrase(pair, item) for item in items]
    assert len(set(phrases)) >= 12, phrases
    real = {"payload": {"caption_1": "A red mug on a blue desk.", "caption_2": "A blue mug on a red desk."}}
    seen = exposure({"probe_share": 1.0}, 1, probe=probe_for("colorswap.recaption"), truth=pair, data=items[0], kinds={"colorswap.caption_pair"})
    drafted = shown(seen, {"colorswap.caption_pair": real}, lambda s, p: {"payload": p}, lambda s: s["payload"])["colorswap.caption_pair"]
    assert drafted["payload"]["caption_1"] == f"A red mug on a blue desk {phrases[0]}."
    assert not colorswap.caught(pair, drafted["payload"], items[0]) and colorswap.caught(pair, pair, items[0])
    assert colorswap.planted_phrase({**pair, "caption_1": f"A red cup {phrases[0]}."}, items[0]) != phrases[0]


def test_a_probe_needs_gold_a_definition_and_a_draft_of_its_kind():
    probe = probe_for("voldoger.verify")
    truth = {"image": "keep", "label": "yes", "paraphrase": "keep", "note": ""}
    config = {"probe_share": 1.0}
    seen = exposure(config, 1, probe=probe, truth=truth, data=VQA, kinds={probe.kind})
    assert seen.arm == arms.PROBE and seen.planted["label"] == "no"
    assert exposure(config, 1, probe=probe, truth=truth, data=VQA, kinds=set()).arm == arms.SHOWN  # nothing to replace
    assert exposure(config, 1, probe=None, truth=truth, data=VQA, kinds={probe.kind}).arm == arms.SHOWN
    assert exposure(config, 1, probe=probe, truth=None, data=VQA, kinds={probe.kind}).arm == arms.SHOWN
    drafts = {probe.kind: {"id": 3, "payload": {"label": "yes"}}, "other": {"id": 4, "payload": {}}}
    replaced = shown(seen, drafts, lambda s, p: {**s, "payload": p})
    assert replaced[probe.kind] == {"id": 3, "payload": seen.planted} and replaced["other"] == drafts["other"]
    assert shown(exposure({"draft_control_share": 0.9, "draft_control_seed": 1}, 2, probe=None, truth=None, data=VQA, kinds=set()),
                 drafts, lambda s, p: s) == ({} if arms.arm({"draft_control_share": 0.9, "draft_control_seed": 1}, 2) == arms.CONTROL
                                              else drafts)
