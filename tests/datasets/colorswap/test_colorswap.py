"""ColorSwap workflows as plain functions: item schema, payload checks, consolidation, routing, export."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from app.datasets import get_dataset, get_workflow
from app.datasets.colorswap.filter import preselect
from app.datasets.workflow import ItemContext
from app.errors import Invalid

FILTER = get_workflow("colorswap.filter")
RECAPTION = get_workflow("colorswap.recaption")
COLORSWAP = get_dataset("colorswap")


def pair(n_candidates: int = 4, **extra) -> dict:
    return {
        "id": "7",
        "caption_1": "a red cat in a grey jacket",
        "caption_2": "a grey cat in a red jacket",
        "caption_source": "rule-based",
        "image_source": "stable-diffusion",
        "candidates": [
            {"image": f"c{i}.png", "from_caption": 1 + i % 2, "generator": "sd-1.5"} for i in range(n_candidates)
        ],
        **extra,
    }


def item(**extra) -> dict:
    return COLORSWAP.parse_item(pair(**extra), {}).model_dump(mode="json")


# -- items ------------------------------------------------------------------------


def test_the_published_layout_becomes_a_pair_of_two_candidates():
    published = {
        "id": 12,
        "caption_1": "a blue ball on a yellow box",
        "caption_2": "a yellow ball on a blue box",
        "image_1": "images/img_12_1.png",
        "image_2": "images/img_12_2.png",
        "image_source": "midjourney",
        "caption_source": "handmade",
    }
    parsed = COLORSWAP.parse_item(published, {})
    assert parsed.id == "12"
    data = parsed.model_dump(mode="json")
    assert "image_1" not in data and "image_2" not in data
    assert data["candidates"] == [
        {"image": "images/img_12_1.png", "from_caption": 1, "generator": "midjourney"},
        {"image": "images/img_12_2.png", "from_caption": 2, "generator": "midjourney"},
    ]
    assert COLORSWAP.image_refs(parsed) == {
        "/candidates/0/image": "images/img_12_1.png",
        "/candidates/1/image": "images/img_12_2.png",
    }


@pytest.mark.parametrize(
    "change, message",
    [
        ({"candidates": [{"image": "a.png", "from_caption": 1}]}, "at least 2 items"),
        ({"candidates": [{"image": "a.png", "from_caption": 3}, {"image": "b.png", "from_caption": 1}]}, "1 or 2"),
        ({"candidates": [{"image": "a.png", "from_caption": 1}, {"image": "a.png", "from_caption": 2}]}, "repeats the image"),
        ({"caption_2": ""}, "at least 1 character"),
        ({"image_source": ""}, "at least 1 character"),
    ],
)
def test_bad_items_are_refused_with_the_field(change, message):
    with pytest.raises(ValidationError, match=message):
        COLORSWAP.parse_item(pair(**change), {})


def test_sources_may_be_absent_and_routing_then_uses_the_stage_default():
    bare = {k: v for k, v in pair().items() if k not in ("caption_source", "image_source")}
    data = COLORSWAP.parse_item(bare, {}).model_dump(mode="json")
    assert data["caption_source"] is None and data["image_source"] is None
    assert not RECAPTION.applies(ItemContext(data))
    assert RECAPTION.applies(ItemContext(data, {"missing_source": "rule-based"}))
    assert RECAPTION.applies(ItemContext({**data, "caption_source": "rule-based"}))


def test_the_published_layout_needs_both_images():
    with pytest.raises(ValidationError, match="both image_1 and image_2"):
        COLORSWAP.parse_item({**{k: v for k, v in pair().items() if k != "candidates"}, "image_1": "x.png"}, {})


# -- filter payloads --------------------------------------------------------------------


def test_a_filter_payload_names_two_distinct_images_or_discards():
    data = item()
    assert FILTER.validate_annotation(ItemContext(data), {"choice_1": 2, "choice_2": 1}) == {"choice_1": 2, "choice_2": 1}
    assert not FILTER.is_discard({"choice_1": 2, "choice_2": 1})
    assert FILTER.is_discard(FILTER.validate_annotation(ItemContext(data), {"choice_1": None, "choice_2": 1}))
    with pytest.raises(Invalid) as err:
        FILTER.validate_annotation(ItemContext(data), {"choice_1": 1, "choice_2": 1})
    assert "cannot fit both captions" in err.value.errors[0]
    with pytest.raises(Invalid) as err:
        FILTER.validate_annotation(ItemContext(data), {"choice_1": 4, "choice_2": 1})
    assert err.value.errors == ["Caption 1: there is no image 5; this pair has 4 images."]
    with pytest.raises(Invalid) as err:
        FILTER.validate_annotation(ItemContext(data), {"choice_1": 0})
    assert err.value.errors == ["Choose an image for caption 2, or mark “none fits” (N)."]


def test_form_values_become_indices_or_none():
    assert FILTER.form_to_payload({"choice_1": "3", "choice_2": "none", "other": "x"}) == {"choice_1": 3, "choice_2": None}


@pytest.mark.parametrize(
    "payloads, final, review",
    [
        ([{"choice_1": 0, "choice_2": 1}] * 2 + [{"choice_1": 2, "choice_2": 1}], {"choice_1": 0, "choice_2": 1}, False),
        # Majority per caption, from different annotators.
        (
            [{"choice_1": 0, "choice_2": 1}, {"choice_1": 0, "choice_2": 3}, {"choice_1": 2, "choice_2": 3}],
            {"choice_1": 0, "choice_2": 3},
            False,
        ),
        ([{"choice_1": 0, "choice_2": 1}, {"choice_1": 2, "choice_2": 1}], None, True),  # tie on caption 1
        # Each caption's majority chose image 1: a person must settle it.
        ([{"choice_1": 1, "choice_2": 2}, {"choice_1": 1, "choice_2": 1 - 0}, {"choice_1": 0, "choice_2": 1}], None, True),
        ([{"choice_1": None, "choice_2": 1}] * 2 + [{"choice_1": 0, "choice_2": 1}], {"choice_1": None, "choice_2": 1}, False),
    ],
)
def test_filter_consolidation(payloads, final, review):
    outcome = FILTER.consolidate(ItemContext({}), payloads)
    assert outcome.final == final and outcome.needs_review == review
    assert outcome.discard == (final is not None and None in final.values())


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=7))
def test_consolidation_never_invents_an_answer(choices):
    payloads = [{"choice_1": a, "choice_2": b} for a, b in choices]
    outcome = FILTER.consolidate(ItemContext({}), payloads)
    if outcome.final is not None:
        assert outcome.final["choice_1"] in [a for a, _ in choices]
        assert outcome.final["choice_2"] in [b for _, b in choices]
        assert outcome.final["choice_1"] != outcome.final["choice_2"]
    if len(set(choices)) == 1 and choices[0][0] != choices[0][1]:
        assert outcome.final == payloads[0]


# -- suggestions ------------------------------------------------------------------------


def test_preselection_takes_the_best_distinct_images_and_flags_doubt():
    pre = preselect([[0.30, 0.20], [0.10, 0.25], [0.305, 0.28]])
    # Image 3 scores highest for both captions; the best distinct images are 1 and 3 (0.30 + 0.28).
    assert (pre.choice_1, pre.choice_2) == (0, 2)
    assert "both captions score image 3 highest" in pre.flags
    assert "caption 1: the two best images score within 0.01" in pre.flags
    clear = preselect([[0.9, 0.1], [0.1, 0.8], [0.2, 0.2]])
    assert (clear.choice_1, clear.choice_2, clear.flags) == (0, 1, [])
    assert preselect([[0.5, 0.5]]) is None


# -- recaption --------------------------------------------------------------------------


def test_recaption_applies_to_configured_sources():
    assert RECAPTION.applies(ItemContext({"caption_source": "rule-based"}))
    assert not RECAPTION.applies(ItemContext({"caption_source": "handmade"}))
    assert RECAPTION.applies(ItemContext({"caption_source": "generated"}, {"sources": ["rule-based", "generated"]}))


def test_a_rewrite_must_stay_a_swap_pair_and_rule_based_pairs_must_change():
    data = item()
    good = {"caption_1": "A fluffy red cat wearing a  grey jacket.", "caption_2": "A fluffy grey cat wearing a red jacket"}
    assert RECAPTION.validate_annotation(ItemContext(data), good)["caption_1"] == "A fluffy red cat wearing a grey jacket."
    with pytest.raises(Invalid) as err:
        RECAPTION.validate_annotation(ItemContext(data), {"caption_1": "A fluffy red cat in a grey jacket", "caption_2": "a grey cat in a red coat"})
    assert any("more than colour words" in e for e in err.value.errors)
    with pytest.raises(Invalid) as err:
        RECAPTION.validate_annotation(ItemContext(data), {"caption_1": data["caption_1"], "caption_2": data["caption_2"]})
    # One sentence per caption, the source named inside it (it read "…unchanged. rule-based captions…").
    assert "Caption 1 is unchanged: captions from the source “rule-based” must be rewritten into natural, more specific ones." in err.value.errors
    handmade = {**data, "caption_source": "handmade"}
    same = {"caption_1": data["caption_1"], "caption_2": data["caption_2"]}
    assert RECAPTION.validate_annotation(ItemContext(handmade), same) == same


def test_recaption_consolidation_checks_the_combined_pair():
    a = {"caption_1": "a red cat in a grey coat", "caption_2": "a grey cat in a red coat"}
    b = {"caption_1": "a red kitten in a grey coat", "caption_2": "a grey kitten in a red coat"}
    assert RECAPTION.consolidate(ItemContext({}), [a, dict(a), b]).final == a
    assert RECAPTION.consolidate(ItemContext({}), [a, b]).needs_review
    mixed = [a, {"caption_1": a["caption_1"], "caption_2": b["caption_2"]}, {"caption_1": b["caption_1"], "caption_2": b["caption_2"]}]
    # Majorities: caption 1 from a, caption 2 from b -> not a pair together -> review.
    assert RECAPTION.consolidate(ItemContext({}), mixed).needs_review


def test_live_check_reports_moves_and_unchanged_captions():
    data = item()
    live = RECAPTION.live_check(ItemContext(data), {"caption_1": data["caption_1"], "caption_2": "a grey dog in a red jacket"})
    assert not live["check"].ok and live["unchanged"] == [1]
    live = RECAPTION.live_check(ItemContext(data), {"caption_1": "my red cat, grey jacket", "caption_2": "my grey cat, red jacket"})
    assert live["check"].ok and live["unchanged"] == []
    assert [(m.before, m.after) for m in live["check"].moves] == [("red", "grey"), ("grey", "red")]


# -- export -----------------------------------------------------------------------------


def test_published_record_and_files():
    data = item()
    assets = {f"/candidates/{i}/image": f"sha{i}" for i in range(4)}
    results = {"colorswap.filter": {"choice_1": 3, "choice_2": 0}}
    record = COLORSWAP.export_record(data, results)
    assert record == {
        "id": 7,
        "caption_1": "a red cat in a grey jacket",
        "caption_2": "a grey cat in a red jacket",
        "image_1": "images/img_7_1.png",
        "image_2": "images/img_7_2.png",
        "image_source": "stable-diffusion",
        "caption_source": "rule-based",
    }
    rewritten = {**results, "colorswap.recaption": {"caption_1": "a red kitten, grey coat", "caption_2": "a grey kitten, red coat"}}
    assert COLORSWAP.export_record(data, rewritten)["caption_2"] == "a grey kitten, red coat"
    assert COLORSWAP.export_files(data, assets, results) == {"images/img_7_1.png": "sha3", "images/img_7_2.png": "sha0"}
    assert COLORSWAP.export_record({**data, "id": "cs-7"}, results)["id"] == "cs-7"
