"""The probes of the screens beyond the first four (ColorSwap filtering, VisArgs structure and grounding, ExpArt explanations):
what each plants from a gold answer, that the screen shows the plant as a draft, and that the task's own
comparison tells a caught plant from an accepted one. And every screen that records what an answer did
with a suggestion also records how far it went from it."""

from __future__ import annotations

import pytest

from app.agreement.boxes import iou
from app.bias import arms
from app.bias.probes import exposure, shown
from app.datasets import all_workflows, probe_for
from app.datasets.artwork.explanation import ArtworkExplanation
from app.datasets.artwork.schema import DRAFTED_KIND
from app.datasets.colorswap import probes as colorswap
from app.datasets.colorswap.filter import ColorSwapFilter, preselect
from app.datasets.colorswap.recaption import ColorSwapRecaption
from app.datasets.colorswap.schema import ITM_KIND, PAIR_KIND
from app.datasets.visargs import probes as visargs
from app.datasets.visargs.argtree import parse_steps, validate_tree
from app.datasets.visargs.grounding import VisArgsGrounding
from app.datasets.visargs.schema import ARGUMENT_KIND, BOX_KIND, DRAFTED_BOX_KIND, REGION_KIND, ArgumentSuggestion, BoxesSuggestion
from app.datasets.visargs.structure import VisArgsStructure
from app.datasets.workflow import ItemContext, Workflow

PAIR = {"candidates": [{"image": f"c{i}.jpg", "from_caption": 1 + i % 2} for i in range(4)]}
ARGUMENT = {"commonsense_premises": ["Water is scarce"], "conclusion": "Save water",
            "reasoning_steps": ["(VP1, CP1 -> IC1): Drops are precious", "(IC1 -> C): Save water"], "discard": False}
BOXES = {"b_box": [{"startX": 40, "startY": 60, "w": 100, "h": 80}, {"startX": 5, "startY": 5, "w": 20, "h": 20}]}


def test_colorswap_filter_plants_scores_that_preselect_the_images_the_wrong_way_round():
    truth = {"choice_1": 0, "choice_2": 3}
    planted = colorswap.plant_filter(truth, PAIR)
    pre = preselect(planted["scores"])
    assert (pre.choice_1, pre.choice_2) == (3, 0) and not pre.flags  # a clean preselection, nothing to look twice at
    assert colorswap.caught_filter(truth, truth, PAIR)
    assert colorswap.caught_filter(truth, {"choice_1": None, "choice_2": None}, PAIR)  # none fits: the swap not repeated
    assert not colorswap.caught_filter(truth, {"choice_1": 3, "choice_2": 0}, PAIR)
    assert not colorswap.caught_filter(truth, {"choice_1": 3, "choice_2": 1}, PAIR)  # caption 1 kept the planted image
    for discard in ({"choice_1": None, "choice_2": 1}, {"choice_1": 7, "choice_2": 1}):
        assert colorswap.plant_filter(discard, PAIR) is None
    ctx = ItemContext(PAIR, {})
    workflow = ColorSwapFilter()
    assert workflow.suggestion_outcome(ctx, ITM_KIND, planted, truth) == "rejected"
    assert workflow.suggestion_distance(ctx, ITM_KIND, planted, truth) == 1.0
    assert workflow.suggestion_distance(ctx, ITM_KIND, planted, {"choice_1": 3, "choice_2": 1}) == 0.5
    assert workflow.suggestion_distance(ctx, ITM_KIND, planted, {"choice_1": 3, "choice_2": 0}) == 0.0


def test_visargs_structure_adds_a_commonsense_premise_wired_into_the_conclusion():
    draft = {"commonsense_premises": ["Water is scarce"], "conclusion": "Save water",
             "reasoning_steps": ["(VP1, CP1 -> IC1): Drops are precious", "(IC1 -> C): Save water"]}
    phrase = visargs.planted_commonsense(ARGUMENT, {})
    planted = visargs.into_draft_structure(visargs.plant_structure(ARGUMENT, {}), draft, {})
    ArgumentSuggestion.model_validate(planted)  # a payload the screen reads, as a model's draft would be
    assert planted["commonsense_premises"] == ["Water is scarce", phrase]
    assert planted["reasoning_steps"] == ["(VP1, CP1 -> IC1): Drops are precious", "(IC1, CP2 -> C): Save water"]
    steps, errors = parse_steps(planted["reasoning_steps"])
    assert not errors and validate_tree(steps, 1, 2).ok  # a valid tree: nothing but reading tells it is wrong
    assert visargs.caught_structure(ARGUMENT, ARGUMENT, {})
    assert visargs.caught_structure(ARGUMENT, {**planted, "discard": True}, {})
    assert not visargs.caught_structure(ARGUMENT, {**planted, "discard": False}, {})
    assert visargs.plant_structure({**ARGUMENT, "discard": True}, {}) is None
    # A draft where nothing concludes C gets a step that does, from the planted premise.
    loose = visargs.into_draft_structure(planted, {**draft, "reasoning_steps": ["(VP1 -> IC1): x"]}, {})
    assert loose["reasoning_steps"] == ["(VP1 -> IC1): x", "(CP2 -> C): Save water"]
    workflow, ctx = VisArgsStructure(), ItemContext({}, {})
    assert workflow.suggestion_distance(ctx, ARGUMENT_KIND, planted, ARGUMENT) == 1 - 3 / 6
    assert workflow.suggestion_distance(ctx, ARGUMENT_KIND, planted, {**planted, "conclusion": "  save   WATER "}) == 0.0
    assert workflow.suggestion_distance(ctx, ARGUMENT_KIND, planted, {**planted, "discard": True}) == 1.0


B_ARGUMENT = {"commonsense_premises": ["Bikes are cheap"], "conclusion": "Ride more",
              "reasoning_steps": ["(VP1, CP1 -> C): Ride more"], "discard": False}


def test_the_structure_probe_neither_repeats_one_sentence_nor_shows_the_gold_argument():
    """Every structure probe added the same sentence: an annotator who had seen it once knew the item was a
    gold item; and the 'draft' shown was the gold argument itself, so deleting that sentence scored 1."""
    pa, pb = visargs.plant_structure(ARGUMENT, {}), visargs.plant_structure(B_ARGUMENT, {})
    added_a = set(pa["commonsense_premises"]) - set(ARGUMENT["commonsense_premises"])
    added_b = set(pb["commonsense_premises"]) - set(B_ARGUMENT["commonsense_premises"])
    assert added_a != added_b, added_a
    assert pa["conclusion"] != ARGUMENT["conclusion"] or pa["commonsense_premises"][:-1] != ARGUMENT["commonsense_premises"]
    items = [{"image": f"poster-{k}.jpg", "candidate_conclusion": f"Conclusion {k}"} for k in range(30)]
    assert len({visargs.planted_commonsense(ARGUMENT, item) for item in items}) >= 12
    # Through the screen's path: the model's own draft, with the plant wired in; never the gold argument.
    real = {"payload": {"commonsense_premises": ["Rain is rare"], "conclusion": "Use less water",
                        "reasoning_steps": ["(VP1, CP1 -> C): Use less water"]}}
    seen = exposure({"probe_share": 1.0}, 1, probe=probe_for("visargs.structure"), truth=ARGUMENT, data=items[0], kinds={ARGUMENT_KIND})
    shown_payload = shown(seen, {ARGUMENT_KIND: real}, lambda s, p: {"payload": p}, lambda s: s["payload"])[ARGUMENT_KIND]["payload"]
    phrase = visargs.planted_commonsense(ARGUMENT, items[0])
    assert shown_payload == {"commonsense_premises": ["Rain is rare", phrase], "conclusion": "Use less water",
                             "reasoning_steps": ["(VP1, CP1, CP2 -> C): Use less water"]}
    assert not visargs.caught_structure(ARGUMENT, {**shown_payload, "discard": False}, items[0])
    assert visargs.caught_structure(ARGUMENT, ARGUMENT, items[0])


def test_visargs_grounding_shifts_a_box_far_past_the_iou_that_counts_as_kept():
    planted = visargs.plant_grounding(BOXES, {})
    BoxesSuggestion.model_validate(planted)
    first, second = ({k: b[k] for k in ("startX", "startY", "w", "h")} for b in planted["boxes"])
    assert second == BOXES["b_box"][1]  # only the first premise's box moves
    assert first == {"startX": 90, "startY": 20, "w": 100, "h": 80}  # right by half (no room left), up by half
    assert iou(first, BOXES["b_box"][0]) == pytest.approx(1 / 7)
    assert visargs.caught_grounding(BOXES, BOXES, {})
    assert not visargs.caught_grounding(BOXES, {"b_box": [first, second]}, {})
    nudged = {**first, "startX": first["startX"] - 10}  # taken and barely moved: still the planted box
    assert not visargs.caught_grounding(BOXES, {"b_box": [nudged, second]}, {})
    assert visargs.plant_grounding({"b_box": []}, {}) is None
    workflow, ctx = VisArgsGrounding(), ItemContext({}, {})
    assert workflow.suggestion_outcome(ctx, BOX_KIND, planted, BOXES) == "edited"
    assert workflow.suggestion_distance(ctx, BOX_KIND, planted, BOXES) == pytest.approx(1 - (1 / 7 + 1) / 2)
    assert workflow.suggestion_distance(ctx, BOX_KIND, planted, {"b_box": [first, second]}) == 0.0


def test_the_grounding_plant_replaces_the_first_box_kind_the_item_has():
    probe = probe_for("visargs.grounding")
    config = {"probe_share": 1.0}
    for kinds, expected in (({REGION_KIND}, REGION_KIND), ({REGION_KIND, DRAFTED_BOX_KIND}, DRAFTED_BOX_KIND),
                            ({BOX_KIND, REGION_KIND}, BOX_KIND)):
        seen = exposure(config, 1, probe=probe, truth=BOXES, data={}, kinds=kinds)
        assert seen.arm == arms.PROBE and seen.kind == expected
        drafts = {k: {"payload": {"boxes": []}} for k in kinds}
        assert shown(seen, drafts, lambda s, p: {"payload": p})[expected]["payload"] == seen.planted
    assert exposure(config, 1, probe=probe, truth=BOXES, data={}, kinds={"visargs.other"}).arm == arms.SHOWN


def test_the_artwork_plant_is_written_into_the_real_draft_and_judged_by_the_words_it_repeats():
    item = {"explanation": "Painted by Anna Berg in Oslo for a rich banker.", "text": "Painted by Anna Berg.", "entities": ["Anna Berg"]}
    truth = {"score": 2, "struck": [[6, 10]]}  # "for a rich banker"
    seen = exposure({"probe_share": 1.0}, 1, probe=probe_for("artwork.explanation"), truth=truth, data=item, kinds={DRAFTED_KIND})
    assert seen.arm == arms.PROBE and seen.planted == {"phrase": "for a rich banker"}
    real = {"payload": {"explanation": "A circle by Anna Berg. It hangs in Oslo.", "metrics": {}}, "id": 7}
    drafted = shown(seen, {DRAFTED_KIND: real}, lambda s, p: {**s, "payload": p}, lambda s: s["payload"])[DRAFTED_KIND]
    assert drafted["id"] == 7 and drafted["payload"]["explanation"] == "A circle by Anna Berg for a rich banker. It hangs in Oslo."
    workflow, ctx = ArtworkExplanation(), ItemContext(item, {})
    # The planted draft repeats Anna, Berg, Oslo, rich, banker (function words aside).
    assert workflow.suggestion_outcome(ctx, DRAFTED_KIND, drafted["payload"], {"score": 4, "struck": []}) == "accepted"
    assert workflow.suggestion_distance(ctx, DRAFTED_KIND, drafted["payload"], truth) == 2 / 5
    assert workflow.suggestion_outcome(ctx, DRAFTED_KIND, drafted["payload"], truth) == "edited"
    assert workflow.suggestion_outcome(ctx, DRAFTED_KIND, drafted["payload"], {"score": 1, "struck": [[0, 10]]}) == "rejected"
    assert workflow.suggestion_outcome(ctx, DRAFTED_KIND, {"explanation": "Blue sky."}, truth) is None  # repeats nothing
    assert workflow.suggestion_distance(ctx, "artwork.other", drafted["payload"], truth) is None
    assert probe_for("artwork.explanation").caught(truth, truth, item)
    assert not probe_for("artwork.explanation").caught(truth, {"score": 4, "struck": []}, item)


def test_colorswap_recaption_distance_counts_token_edits_of_both_captions():
    drafted = {"caption_1": "A red cup on a blue table.", "caption_2": "A blue cup on a red table."}
    workflow, ctx = ColorSwapRecaption(), ItemContext({}, {})
    assert workflow.suggestion_distance(ctx, PAIR_KIND, drafted, {k: v.upper() for k, v in drafted.items()}) == 0.0
    planted = colorswap.into_draft(colorswap.plant(drafted, {}), drafted, {})
    words = len(colorswap.planted_phrase(drafted, {}).split())
    assert workflow.suggestion_distance(ctx, PAIR_KIND, planted, drafted) == 2.0 * words  # the phrase, in both captions
    assert workflow.suggestion_distance(ctx, ITM_KIND, planted, drafted) is None


def test_every_screen_that_judges_a_suggestion_measures_its_distance():
    """A workflow that says what an answer did with a suggestion also says how far it went (the report's edit size)."""
    judged = [w for w in all_workflows() if type(w).suggestion_outcome is not Workflow.suggestion_outcome]
    assert {w.name for w in judged} >= {"artwork.explanation", "colorswap.filter", "colorswap.recaption", "visargs.premises", "visargs.structure",
                                        "visargs.grounding", "wikido.verify", "voldoger.verify"}
    assert [w.name for w in judged if type(w).suggestion_distance is Workflow.suggestion_distance] == []
    probed = {w.name for w in judged if probe_for(w.name) is not None}
    assert probed == {w.name for w in judged}
