"""VisArgs workflows as plain functions: records, form rows, tree checks, boxes, consolidation, export."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from app.agreement.boxes import iou
from app.datasets import get_dataset, get_workflow
from app.datasets.workflow import ItemContext
from app.errors import Invalid

PREMISES = get_workflow("visargs.premises")
STRUCTURE = get_workflow("visargs.structure")
GROUNDING = get_workflow("visargs.grounding")
EQUIVALENCE = get_workflow("visargs.equivalence")
VISARGS = get_dataset("visargs")
CONCLUSIONS = get_dataset("visargs_equivalence")

PUBLISHED = {
    "url": "https://example.org/ads/ad_0042.jpg?w=800",
    "visual_premises": ["A melting ice cream cone", "The sun in the corner"],
    "commonsense_premises": ["Heat melts ice cream"],
    "conclusion": "Buy our freezer.",
    "reasoning_steps": ["(VP1, VP2, CP1 -> IC1): The heat melts the ice cream", "(IC1 -> C): Buy our freezer."],
    "b_box": [{"startX": 10, "startY": 12, "w": 100, "h": 80}, {"startX": 300, "startY": 0, "w": 50, "h": 50}],
}


def published_item() -> dict:
    return VISARGS.parse_item(PUBLISHED, {}).model_dump(mode="json")


def test_a_published_record_becomes_drafts_to_reannotate():
    item = published_item()
    assert item["id"] == "ad_0042" and item["image"] == PUBLISHED["url"]
    assert item["candidate_premises"] == PUBLISHED["visual_premises"]
    assert item["candidate_steps"] == PUBLISHED["reasoning_steps"]
    assert item["candidate_boxes"][1] == {"startX": 300, "startY": 0, "w": 50, "h": 50}
    with pytest.raises(ValidationError, match="Step 2: .*does not read as"):
        VISARGS.parse_item({**PUBLISHED, "reasoning_steps": ["(VP1 -> C): ok", "IC1 => C"]}, {})


def test_published_record_round_trip():
    item = published_item()
    results = {
        "visargs.premises": {"visual_premises": PUBLISHED["visual_premises"], "discard": False},
        "visargs.structure": {k: PUBLISHED[k] for k in ("commonsense_premises", "conclusion", "reasoning_steps")} | {"discard": False},
        # Stored JSON comes back with its keys in another order.
        "visargs.grounding": {"b_box": [{"h": b["h"], "w": b["w"], "startY": b["startY"], "startX": b["startX"]} for b in PUBLISHED["b_box"]]},
    }
    # The record as it came comes back as it was: its key order, its boxes' key order.
    record = VISARGS.export_record(item, results, PUBLISHED)
    assert json.dumps(record) == json.dumps(PUBLISHED)
    # Without it (an item stored before records were kept), the release's orders.
    drafted = VISARGS.export_record(item, results)
    assert list(drafted) == ["url", "visual_premises", "conclusion", "b_box", "commonsense_premises", "reasoning_steps"]
    assert [list(b) for b in drafted["b_box"]] == [["h", "startX", "startY", "w"]] * 2
    assert drafted == PUBLISHED
    # A released record without boxes gets the grounding's boxes; one with a new conclusion keeps its place.
    bare = {k: v for k, v in PUBLISHED.items() if k != "b_box"}
    changed = {**results, "visargs.structure": {**results["visargs.structure"], "conclusion": "Buy it."}}
    record = VISARGS.export_record(item, changed, bare)
    assert list(record) == [*bare, "b_box"] and record["conclusion"] == "Buy it."


def test_premise_rows_follow_their_shown_order():
    form = {
        "text_0": "A tap", "keep_0": "on", "pos_0": "2",
        "text_1": "  The words   SAVE WATER ", "keep_1": "on", "pos_1": "0",
        "text_2": "A child", "pos_2": "1",  # not kept
        "text_5": "", "keep_5": "on", "pos_5": "3",  # an unused spare row
        "discard": "",
    }
    assert PREMISES.form_to_payload(form) == {"visual_premises": ["The words SAVE WATER", "A tap"], "discard": False}
    assert PREMISES.form_to_payload({"discard": "on"}) == {"visual_premises": [], "discard": True}


def test_premise_drafts_start_kept_and_spare_rows_do_not():
    item = published_item()
    values = PREMISES.initial_values(ItemContext(item))
    assert [values.get(f"keep_{i}") for i in range(2)] == ["on", "on"]
    assert "keep_0" not in PREMISES.initial_values(ItemContext(item, {"accept_candidates": False}))
    rows = PREMISES.screen_context(ItemContext(item), values)["rows"]
    assert [(r["text"], r["keep"]) for r in rows] == [
        ("A melting ice cream cone", True), ("The sun in the corner", True), ("", False), ("", False),
    ]


def test_premise_checks():
    item = published_item()
    with pytest.raises(Invalid) as err:
        PREMISES.validate_annotation(ItemContext(item), {"visual_premises": []})
    assert err.value.errors == ["Keep or add at least one visual premise, or discard the image."]
    with pytest.raises(Invalid) as err:
        PREMISES.validate_annotation(ItemContext(item), {"visual_premises": ["A tap", "a  TAP"]})
    assert err.value.errors == ["Visual premises 1 and 2 are the same."]
    assert PREMISES.is_discard(PREMISES.validate_annotation(ItemContext(item), {"visual_premises": [], "discard": True}))


def test_premise_agreement_and_consolidation_use_sets():
    a = {"visual_premises": ["A tap", "The sun"], "discard": False}
    b = {"visual_premises": ["the sun", "a tap"], "discard": False}
    c = {"visual_premises": ["A tap", "A child"], "discard": False}
    # The mean over the facets: discard agrees, the premise sets overlap in 1 of 3.
    assert PREMISES.compare(a, b) == 1.0 and PREMISES.compare(a, c) == pytest.approx((1 + 1 / 3) / 2)
    assert PREMISES.compare(a, {"visual_premises": [], "discard": True}) == 0.0
    assert PREMISES.consolidate(ItemContext({}), [a, b, c]).final == a
    assert PREMISES.consolidate(ItemContext({}), [a, c]).needs_review


RESULTS = {"visargs.premises": {"visual_premises": ["A tap", "The words SAVE WATER"], "discard": False}}


def structure_form(**extra) -> dict:
    form = {
        "cp_0": "Dripping taps waste water", "cp_1": "", "cp_2": "",
        "conclusion": "Fix your taps.",
        "step_in_0": ["VP1", "CP1"], "step_out_0": "IC1", "step_text_0": "The tap wastes water",
        "step_in_1": ["IC1", "VP2"], "step_out_1": "C", "step_text_1": "Fix your taps.",
        "step_text_2": "", "step_out_2": "",
    }
    return {**form, **extra}


def test_structure_rows_print_the_published_syntax():
    payload = STRUCTURE.form_to_payload(structure_form())
    assert payload == {
        "commonsense_premises": ["Dripping taps waste water"],
        "conclusion": "Fix your taps.",
        "reasoning_steps": ["(VP1, CP1 -> IC1): The tap wastes water", "(IC1, VP2 -> C): Fix your taps."],
        "discard": False,
    }
    clean = STRUCTURE.validate_annotation(ItemContext(published_item(), results=RESULTS), payload)
    assert clean["reasoning_steps"] == payload["reasoning_steps"]


def test_structure_refuses_broken_trees_in_the_annotators_words():
    broken = STRUCTURE.form_to_payload(structure_form(step_in_1=["IC1"]))
    with pytest.raises(Invalid) as err:
        STRUCTURE.validate_annotation(ItemContext(published_item(), results=RESULTS), broken)
    assert err.value.errors == ["VP2 is not used by any step."]
    assert STRUCTURE.validate_annotation(ItemContext(published_item(), {"unused_premises": "warning"}, results=RESULTS), broken)
    gap = STRUCTURE.form_to_payload(structure_form(cp_0="", cp_1="Water is scarce", step_in_0=["VP1", "CP2"]))
    with pytest.raises(Invalid) as err:
        STRUCTURE.validate_annotation(ItemContext(published_item(), results=RESULTS), gap)
    assert "Commonsense premise 1 is empty: write it, or delete it." in err.value.errors
    no_output = STRUCTURE.form_to_payload(structure_form(step_out_1=""))
    with pytest.raises(Invalid) as err:
        STRUCTURE.validate_annotation(ItemContext(published_item(), results=RESULTS), no_output)
    assert "is not a node name" in err.value.errors[0]
    discarded = {"commonsense_premises": [], "conclusion": "", "reasoning_steps": [], "discard": True}
    assert STRUCTURE.is_discard(STRUCTURE.validate_annotation(ItemContext(published_item(), results=RESULTS), discarded))


def test_structure_live_check_renders_the_tree():
    live = STRUCTURE.live_check(ItemContext(published_item(), results=RESULTS), structure_form())
    assert live["ok"] and live["tree"].node == "C"
    assert [c.node for c in live["tree"].children] == ["IC1", "VP2"]
    live = STRUCTURE.live_check(ItemContext(published_item(), results=RESULTS), structure_form(step_out_1="IC2"))
    assert not live["ok"] and any("No step concludes C" in m for m in live["messages"])


def test_structure_drafts_fill_the_rows():
    values = STRUCTURE.initial_values(ItemContext(published_item(), results=RESULTS))
    assert values["step_in_0"] == ["VP1", "VP2", "CP1"] and values["step_out_1"] == "C"
    assert values["cp_0"] == "Heat melts ice cream" and values["conclusion"] == "Buy our freezer."


def test_grounding_needs_one_box_per_premise():
    form = {"x_0": "10", "y_0": "12", "w_0": "100", "h_0": "80", "x_1": "300.4", "y_1": "0", "w_1": "50", "h_1": "50", "current_vp": "1"}
    payload = GROUNDING.form_to_payload(form)
    assert payload["b_box"][1] == {"startX": 300, "startY": 0, "w": 50, "h": 50}
    # Numbers no box has (a forged form): no box there, as for an empty field, not a server error.
    odd = GROUNDING.form_to_payload({**form, "x_1": "inf", "y_1": "nan", "w_1": "1e400", "h_1": "-Infinity"})
    assert odd["b_box"][1] == {"startX": None, "startY": None, "w": None, "h": None}
    assert GROUNDING.validate_annotation(ItemContext(published_item(), results=RESULTS), payload)["b_box"][0]["w"] == 100
    with pytest.raises(Invalid) as err:
        GROUNDING.validate_annotation(ItemContext(published_item(), results=RESULTS), GROUNDING.form_to_payload({**form, "w_1": ""}))
    assert err.value.errors == ["Visual premise 2 has no box yet: pick it (2) and press B, or drag on the image."]
    with pytest.raises(Invalid) as err:
        GROUNDING.validate_annotation(ItemContext(published_item(), results=RESULTS), {"b_box": payload["b_box"][:1]})
    assert "exactly one box per visual premise: 2 premises, 1 boxes" in err.value.errors[0]
    with pytest.raises(Invalid):
        GROUNDING.validate_annotation(ItemContext(published_item(), results=RESULTS), {"b_box": [{"startX": -1, "startY": 0, "w": 5, "h": 5}] * 2})


def test_grounding_starts_on_the_first_premise_without_a_box():
    values = {"x_0": 10, "y_0": 12, "w_0": 100, "h_0": 80}
    screen = GROUNDING.screen_context(ItemContext(published_item(), results=RESULTS), values)
    assert [p["has_box"] for p in screen["premises"]] == [True, False] and screen["current"] == 1
    screen = GROUNDING.screen_context(ItemContext(published_item(), results=RESULTS), {})
    assert screen["current"] == 0


def test_structure_starts_where_the_work_is():
    def focus(**values):
        return STRUCTURE.screen_context(ItemContext(published_item(), results=RESULTS), values)["focus"]

    assert focus() == "conclusion"
    assert focus(conclusion="Fix taps.") == 0
    # A drafted step concluding C: A there adds the premises it leaves out (a second step concluding C was refused).
    assert focus(conclusion="Fix taps.", step_in_0=["VP1"], step_out_0="C", step_text_0="Fix taps.") == 0
    assert focus(conclusion="Fix taps.", step_in_0=["VP1"], step_out_0="IC1", step_text_0="Taps drip.") == 1  # the spare row


def test_box_agreement():
    a = {"startX": 0, "startY": 0, "w": 10, "h": 10}
    assert iou(a, a) == 1.0 and iou(a, {"startX": 5, "startY": 0, "w": 10, "h": 10}) == pytest.approx(50 / 150)
    assert GROUNDING.compare({"b_box": [a, a]}, {"b_box": [a, {"startX": 50, "startY": 50, "w": 5, "h": 5}]}) == 0.5


def test_equivalence_payload():
    item = CONCLUSIONS.parse_item({"id": "e1", "conclusion_a": "Buy it.", "conclusion_b": "Purchase it."}, {}).model_dump()
    assert EQUIVALENCE.validate_annotation(ItemContext(item), EQUIVALENCE.form_to_payload({"equivalent": "yes"})) == {"equivalent": True}
    assert EQUIVALENCE.form_to_payload({"equivalent": "no"}) == {"equivalent": False}
    with pytest.raises(Invalid):
        EQUIVALENCE.validate_annotation(ItemContext(item), EQUIVALENCE.form_to_payload({}))


def test_what_was_done_with_suggested_boxes():
    box = {"startX": 10, "startY": 10, "w": 20, "h": 20}
    near = {"startX": 12, "startY": 10, "w": 20, "h": 20}
    far = {"startX": 100, "startY": 100, "w": 5, "h": 5}
    hint = {"boxes": [{"vp": 0, **box}, {"vp": 1, **box}]}
    assert GROUNDING.suggestion_outcome(ItemContext({}), "visargs.boxes", hint, {"b_box": [box, box]}) == "accepted"
    assert GROUNDING.suggestion_outcome(ItemContext({}), "visargs.boxes", hint, {"b_box": [box, near]}) == "edited"
    assert GROUNDING.suggestion_outcome(ItemContext({}), "visargs.boxes", hint, {"b_box": [far, far]}) == "rejected"
    assert GROUNDING.suggestion_outcome(ItemContext({}), "visargs.boxes", {"boxes": []}, {"b_box": [box]}) is None
