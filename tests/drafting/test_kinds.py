"""The datasets' draft kinds, over records shaped like the releases': each prompt renders with the kind's
fields; a schema-valid model answer becomes the payload the stage's screen reads (its own code takes it, and
taking it with the screen's one key gives a valid answer); a bad answer is refused with its reason; and a
draft equal to the human final scores 1.0 with the workflow's own compare, a different one less."""

from __future__ import annotations

import jsonschema
import pytest
import sqlalchemy as sa

from app.agreement.entities import scores
from app.datasets import dataset_of, draft_kinds, get_dataset, get_workflow
from app.datasets.artwork.drafts import reference_score
from app.datasets.draft import DraftInvalid, DraftKind
from app.datasets.suggest import ItemInput
from app.datasets.voldoger.release import join
from app.datasets.workflow import ItemContext
from app.db import transaction
from app.models import Asset, Item, ItemResult, Stage
from app.services.annotation import suggestions
from app.services.annotation.suggestions import SuggestionView
from app.services.drafting import prompts
from app.services.drafting.prompts import check_settings, placeholders
from tests.conftest import login, make_user, png_bytes, start_annotating
from tests.datasets.artwork.test_artwork import EXPLAINED as ARTWORK
from tests.datasets.colorswap.test_colorswap import pair
from tests.datasets.visargs.test_visargs import PUBLISHED as VISARGS
from tests.datasets.voldoger.release_rows import CAP_ORIGINAL, CAP_STYLISED, VE_ORIGINAL, VE_STYLISED, VQA_ORIGINAL, VQA_STYLISED
from tests.datasets.wikido.test_wikido import PUBLISHED as WIKIDO
from tests.staged import item_at
from tests.web.test_review_views import _no_json

KINDS = draft_kinds()


def answer(kind: DraftKind, value: dict) -> dict:
    """A hand-written model answer, checked against the kind's schema as the drafting job checks it."""
    jsonschema.validate(value, kind.schema)
    return value


def render(kind: DraftKind, item: ItemInput) -> str:
    values = kind.fields(item)
    assert set(values) == set(kind.placeholders) and all(isinstance(v, str) for v in values.values())
    assert set(placeholders(kind.template)) <= set(kind.placeholders)
    return kind.template.format_map(values)


def shown(kind: str, payload: dict) -> dict[str, SuggestionView]:
    """The suggestions a screen is given: the newest row of each kind."""
    return {kind: SuggestionView(1, kind, "qwen2.5-vl", f"{kind} v1", payload, None)}


def parsed(dataset: str, record: dict, results: dict | None = None, images: dict | None = None) -> ItemInput:
    data = get_dataset(dataset).parse_item(record, {}).model_dump(mode="json")
    return ItemInput(1, data, images or {}, results or {})


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_is_declared_whole(name):
    kind = KINDS[name]
    jsonschema.Draft202012Validator.check_schema(kind.schema)
    assert kind.schema["type"] == "object" and kind.schema["additionalProperties"] is False
    assert set(kind.schema["required"]) == set(kind.schema["properties"])
    for key in kind.schema["properties"]:
        assert f'"{key}"' in kind.system  # a server without structured output is told every key
    assert "{" not in kind.system and kind.source and kind.title
    assert check_settings(dict(kind.settings)) == dict(kind.settings)
    for workflow in kind.workflows:
        assert kind.suggestion_kind in get_workflow(workflow).suggestion_kinds  # the screen reads what it stores
        assert kind in dataset_of(workflow).drafts


# -- WikiDO -----------------------------------------------------------------------------------
VERIFY = get_workflow("wikido.verify")


def test_wikido_caption_rewritten_with_the_llava_prompt_fills_the_corrected_caption():
    kind, item = KINDS["wikido.caption"], parsed("wikido", WIKIDO)
    assert render(kind, item) == (
        "wikipedia caption: The nave of Saint Paul's church in Paris.\n Given the image and the wikipedia caption above, "
        "give an exact and concise caption. Do not miss any information from the wikipedia caption."
    )
    payload = kind.to_payload(answer(kind, {"caption": "The  nave of Saint Paul's church\nin Paris."}), item)
    assert payload == {"caption": "The nave of Saint Paul's church in Paris."}

    values = VERIFY.initial_values(ItemContext(item.data, suggestions=shown(kind.suggestion_kind, payload)))
    assert values == {"caption": payload["caption"]}
    # H, then Enter: the form as the screen filled it.
    stored = VERIFY.validate_annotation(ItemContext(item.data), VERIFY.form_to_payload({"verdict": "hallucinated", **values}))
    assert stored == kind.as_answer(payload, item)
    assert stored["caption"] == payload["caption"] and stored["edits"]["deleted"] == 5  # "Gothic", ", built in 1850"
    assert VERIFY.suggestion_outcome(ItemContext(item.data), kind.suggestion_kind, payload, stored) == "accepted"
    assert VERIFY.compare(kind.as_answer(payload, item), stored) == 1.0
    assert VERIFY.compare(kind.as_answer(payload, item), {"verdict": "correct", "caption": None}) < 1.0
    # The model's caption again: Correct.
    same = kind.to_payload(answer(kind, {"caption": WIKIDO["caption"]}), item)
    assert kind.as_answer(same, item) == {"verdict": "correct", "caption": None}

    with pytest.raises(DraftInvalid, match="no words"):
        kind.to_payload(answer(kind, {"caption": " — "}), item)


def test_wikido_unsupported_phrases_become_the_underline_the_screen_takes_with_one_key():
    kind, item = KINDS["wikido.unsupported"], parsed("wikido", WIKIDO)
    prompt = render(kind, item)
    assert WIKIDO["orig_cap"] in prompt and WIKIDO["caption"] in prompt
    # Tokens: The(0) Gothic(1) nave(2) of(3) Saint(4) Paul's(5) church(6) in(7) Paris(8) ,(9) built(10) in(11) 1850(12) .(13)
    payload = kind.to_payload(answer(kind, {"phrases": ["built in 1850.", "gothic"], "unrelated": False}), item)
    assert payload == {"spans": [[1, 2], [10, 13]]}

    context = VERIFY.screen_context(ItemContext(item.data, suggestions=shown(kind.suggestion_kind, payload)), {})
    assert [t["text"] for t in context["tokens"] if t["unsupported"]] == ["Gothic", "built", "in", "1850"]
    assert context["unsupported_model"] == "qwen2.5-vl wikido.unsupported v1"
    # A: the underlined words struck (wikido.js joins what is left), Hallucinated; then Enter.
    taken = kind.as_answer(payload, item)
    assert taken["verdict"] == "hallucinated" and taken["caption"] == "The nave of Saint Paul's church in Paris,."
    assert VERIFY.validate_annotation(ItemContext(item.data), {"verdict": "hallucinated", "caption": taken["caption"]}) == taken
    assert VERIFY.suggestion_outcome(ItemContext(item.data), kind.suggestion_kind, payload, taken) == "accepted"
    assert VERIFY.compare(taken, taken) == 1.0
    partly = VERIFY.validate_annotation(ItemContext(item.data), {"verdict": "hallucinated", "caption": "The nave of Saint Paul's church in Paris, built in 1850."})
    assert VERIFY.compare(taken, partly) < 1.0

    assert kind.to_payload(answer(kind, {"phrases": [], "unrelated": False}), item) == {"spans": []}
    assert kind.as_answer({"spans": []}, item) == {"verdict": "correct", "caption": None}
    unrelated = kind.to_payload(answer(kind, {"phrases": ["nave"], "unrelated": True}), item)
    assert unrelated == {"spans": [], "unrelated": True}
    assert kind.as_answer(unrelated, item) == {"verdict": "wrong", "caption": None}
    everything = ["The Gothic nave of Saint Paul's church in Paris", "built in 1850"]
    assert kind.to_payload(answer(kind, {"phrases": everything, "unrelated": False}), item) == {"spans": [], "unrelated": True}

    for phrases, reason in [(["a marble statue"], "“a marble statue” is not in the caption"), ([", ."], "has no words")]:
        with pytest.raises(DraftInvalid, match=reason):
            kind.to_payload(answer(kind, {"phrases": phrases, "unrelated": False}), item)


def test_wikido_a_phrase_twice_in_the_caption_underlines_each_place_in_turn():
    kind = KINDS["wikido.unsupported"]
    item = parsed("wikido", {**WIKIDO, "caption": "A red door and a red window."})
    assert kind.to_payload({"phrases": ["red", "red"], "unrelated": False}, item) == {"spans": [[1, 2], [5, 6]]}


# -- VisArgs ----------------------------------------------------------------------------------------
RESULTS = {"visargs.premises": {"visual_premises": ["A melting ice cream cone", "The sun in the corner"], "discard": False}}


def test_visargs_visual_premises_fill_the_rows_and_enter_keeps_them():
    kind, workflow, item = KINDS["visargs.visual_premises"], get_workflow("visargs.premises"), parsed("visargs", VISARGS)
    assert "Visual Premises (VP)" in render(kind, item)
    drafted = ["A dripping  ice cream cone", "The sun, low in the corner", "Text: ONLY $2"]
    payload = kind.to_payload(answer(kind, {"visual_premises": drafted}), item)
    assert payload == {"visual_premises": ["A dripping ice cream cone", "The sun, low in the corner", "Text: ONLY $2"]}

    values = workflow.initial_values(ItemContext(item.data, suggestions=shown(kind.suggestion_kind, payload)))
    context = workflow.screen_context(ItemContext(item.data, suggestions=shown(kind.suggestion_kind, payload)), values)
    assert [r["text"] for r in context["rows"] if r["keep"]] == payload["visual_premises"]  # the draft, not the record's
    assert context["drafted_by"] == "qwen2.5-vl visargs.visual_premises v1"
    stored = workflow.validate_annotation(ItemContext(item.data), workflow.form_to_payload(values))  # Enter
    assert stored == kind.as_answer(payload, item)
    assert workflow.suggestion_outcome(ItemContext(item.data), kind.suggestion_kind, payload, stored) == "accepted"
    assert workflow.compare(kind.as_answer(payload, item), stored) == 1.0
    assert workflow.compare(kind.as_answer(payload, item), {"visual_premises": drafted[1:], "discard": False}) < 1.0

    for premises, reason in [(["A cone", "a  CONE"], "Visual premises 1 and 2 are the same"), (["A cone", "  "], "Visual premise 2 is empty")]:
        with pytest.raises(DraftInvalid, match=reason):
            kind.to_payload(answer(kind, {"visual_premises": premises}), item)


def test_visargs_argument_in_the_release_step_syntax_checked_by_the_tree_parser():
    kind, workflow = KINDS["visargs.argument"], get_workflow("visargs.structure")
    item = parsed("visargs", VISARGS, RESULTS)
    prompt = render(kind, item)
    assert "VP1: A melting ice cream cone\nVP2: The sun in the corner" in prompt and "(VP1, CP2 -> IC1)" in prompt
    model = {
        "commonsense_premises": ["Heat melts ice cream", "A freezer keeps things cold"],
        "conclusion": "Buy our freezer.",
        "reasoning_steps": ["(vp1, VP2 , CP1 -> ic1): The heat melts the ice cream", "(IC1, CP2 -> C) Buy our freezer."],
    }
    payload = kind.to_payload(answer(kind, model), item)
    assert payload["reasoning_steps"] == ["(VP1, VP2, CP1 -> IC1): The heat melts the ice cream", "(IC1, CP2 -> C): Buy our freezer."]

    values = workflow.initial_values(ItemContext(item.data, results=RESULTS, suggestions=shown(kind.suggestion_kind, payload)))
    posted = {k: v if isinstance(v, list) else str(v) for k, v in values.items()}
    stored = workflow.validate_annotation(ItemContext(item.data, results=RESULTS), workflow.form_to_payload(posted))  # Enter
    assert stored == kind.as_answer(payload, item) == {**payload, "discard": False}
    assert workflow.suggestion_outcome(ItemContext(item.data), kind.suggestion_kind, payload, stored) == "accepted"
    assert workflow.compare(kind.as_answer(payload, item), stored) == 1.0
    assert workflow.compare(kind.as_answer(payload, item), {**stored, "conclusion": "Keep ice cream cold."}) < 1.0

    # A premise the tree leaves out is a warning (A adds it on the screen); broken trees are refused.
    unused = kind.to_payload(answer(kind, {**model, "reasoning_steps": ["(VP1, CP1, CP2 -> C): Buy it."]}), item)
    assert unused["reasoning_steps"] == ["(VP1, CP1, CP2 -> C): Buy it."]
    for steps, reason in [
        (["(VP1, VP2, CP1, CP2 -> IC1): Hot", "IC1 => C"], "do not parse: Step 2"),
        (["(VP1, CP1 -> C): a", "(VP2, CP2 -> C): b"], "Steps 1 and 2 all conclude C"),
        (["(VP1, VP3, CP1, CP2 -> C): a"], "there are only 2 visual premises"),
    ]:
        with pytest.raises(DraftInvalid, match=reason):
            kind.to_payload(answer(kind, {**model, "reasoning_steps": steps}), item)
    with pytest.raises(DraftInvalid, match="no final visual premises"):
        kind.to_payload(answer(kind, model), parsed("visargs", VISARGS))


def test_visargs_boxes_in_normalised_coordinates_become_pixel_boxes_the_grounding_screen_suggests():
    kind, workflow = KINDS["visargs.premise_boxes"], get_workflow("visargs.grounding")
    item = parsed("visargs", VISARGS, RESULTS, images={"/image": png_bytes(size=(200, 100))})
    assert "VP2: The sun in the corner" in render(kind, item) and "normalised" in kind.schema["properties"]["boxes"]["description"]
    model = {"boxes": [
        {"premise": 2, "x_min": 0.5, "y_min": 0.0, "x_max": 1.0, "y_max": 0.5},
        {"premise": 1, "x_min": 0.1, "y_min": 0.2, "x_max": 0.5, "y_max": 0.6},
    ]}
    payload = kind.to_payload(answer(kind, model), item)
    assert payload == {"boxes": [{"vp": 0, "startX": 20, "startY": 20, "w": 80, "h": 40}, {"vp": 1, "startX": 100, "startY": 0, "w": 100, "h": 50}]}

    context = workflow.screen_context(ItemContext(item.data, results=RESULTS, suggestions=shown(kind.suggestion_kind, payload)), {})
    assert [p["suggested"] for p in context["premises"]] == [{k: b[k] for k in ("startX", "startY", "w", "h")} for b in payload["boxes"]]
    # Shift+A takes every suggested box; Enter.
    taken = {"b_box": [p["suggested"] for p in context["premises"]]}
    stored = workflow.validate_annotation(ItemContext(item.data, results=RESULTS), taken)
    assert stored == kind.as_answer(payload, item)
    assert workflow.suggestion_outcome(ItemContext(item.data), kind.suggestion_kind, payload, stored) == "accepted"
    assert workflow.compare(kind.as_answer(payload, item), stored) == 1.0
    moved = {"b_box": [{**stored["b_box"][0], "startX": 60}, stored["b_box"][1]]}
    assert workflow.compare(kind.as_answer(payload, item), moved) < 1.0
    # A box for one premise only: a suggestion, not an answer.
    one = kind.to_payload(answer(kind, {"boxes": model["boxes"][1:]}), item)
    assert one == {"boxes": payload["boxes"][:1]} and kind.as_answer(one, item) is None

    corner = {"x_min": 0.1, "y_min": 0.1, "x_max": 0.2, "y_max": 0.2}
    for boxes, reason in [
        ([{"premise": 3, **corner}], "the item has 2 visual premises"),
        ([{"premise": 1, **corner}, {"premise": 1, **corner}], "Premise 1 has two boxes"),
        ([{"premise": 1, **corner, "x_max": 0.1}], "ends before it starts"),
        ([], "no box"),
    ]:
        with pytest.raises(DraftInvalid, match=reason):
            kind.to_payload(answer(kind, {"boxes": boxes}), item)
    with pytest.raises(DraftInvalid, match="not stored"):
        kind.to_payload(model, parsed("visargs", VISARGS, RESULTS))


# -- VOLDOGER ---------------------------------------------------------------------------------
CHECK = get_workflow("voldoger.verify")


def voldoger_item(original, stylised, task, k=0) -> ItemInput:
    return parsed("voldoger", join(original, stylised, task, "oil")[k])


def test_voldoger_check_preselects_the_decisions_and_keeps_the_reason_for_the_check_log():
    kind, item = KINDS["voldoger.check"], voldoger_item(VQA_ORIGINAL, VQA_STYLISED, "vqa")
    prompt = render(kind, item)
    assert "oil painting" in prompt and "Question: Is the ball red?\nAnswer on the photo: yes" in prompt and '"yes" or "no"' in prompt
    model = {"keeps_content": "yes", "label": "No", "paraphrase": "Is the ball  painted red?", "reason": "The ball is blue in the painting."}
    payload = kind.to_payload(answer(kind, {**model, "label": "no"}), item)
    assert payload == {"image": "keep", "label": "no", "paraphrase": "Is the ball painted red?", "reason": "The ball is blue in the painting."}

    values = CHECK.initial_values(ItemContext(item.data, suggestions=shown(kind.suggestion_kind, payload)))
    assert values == {"image": "keep", "label": "no", "paraphrase": "edit", "text": "Is the ball painted red?", "note": payload["reason"]}
    context = CHECK.screen_context(ItemContext(item.data, suggestions=shown(kind.suggestion_kind, payload)), values)
    assert context["check"]["reason"] == payload["reason"] and context["check"]["label_name"] == "no"
    stored = CHECK.validate_annotation(ItemContext(item.data), CHECK.form_to_payload(values))  # Enter
    assert stored == kind.as_answer(payload, item)
    assert stored["note"] == payload["reason"]  # the check log's comment
    assert CHECK.suggestion_outcome(ItemContext(item.data), kind.suggestion_kind, payload, stored) == "accepted"
    assert CHECK.compare(kind.as_answer(payload, item), stored) == 1.0
    assert CHECK.compare(kind.as_answer(payload, item), {**stored, "label": "yes"}) < 1.0

    # The LLM's own paraphrase again: kept. A discarded image: no label or paraphrase in the answer.
    again = kind.to_payload(answer(kind, {**model, "label": "yes", "paraphrase": "Is the ball coloured red?"}), item)
    assert kind.as_answer(again, item)["paraphrase"] == "keep"
    gone = kind.to_payload(answer(kind, {**model, "keeps_content": "no", "label": "no"}), item)
    assert kind.as_answer(gone, item) == {"image": "discard", "label": None, "paraphrase": None, "text": None, "note": payload["reason"]}

    for label, reason in [("entailment", "“entailment” is not one of a VQA row's: yes, no"), ("none", "“none” is not one")]:
        with pytest.raises(DraftInvalid, match=reason):
            kind.to_payload(answer(kind, {**model, "label": label}), item)
    with pytest.raises(DraftInvalid, match="paraphrase is empty"):
        kind.to_payload(answer(kind, {**model, "label": "no", "paraphrase": "  "}), item)


def test_voldoger_entailment_labels_by_name_and_captions_have_none():
    kind = KINDS["voldoger.check"]
    ve = voldoger_item(VE_ORIGINAL, VE_STYLISED, "ve", 1)
    prompt = render(kind, ve)
    assert "Premise: A man with a long-sleeve" in prompt and "Label on the photo: neutral" in prompt and '"contradiction"' in prompt
    payload = kind.to_payload(answer(kind, {"keeps_content": "yes", "label": "contradiction", "paraphrase": "A man in red stands smiling on the beach.", "reason": "r"}), ve)
    assert payload["label"] == "2"
    assert CHECK.validate_annotation(ItemContext(ve.data), CHECK.form_to_payload(CHECK.initial_values(ItemContext(ve.data, suggestions=shown(kind.suggestion_kind, payload)))))["label"] == "2"
    cap = voldoger_item(CAP_ORIGINAL, CAP_STYLISED, "cap")
    assert "Caption: A tennis player taking a swing at a ball" in render(kind, cap) and '"none"' in render(kind, cap)
    drafted = kind.to_payload(answer(kind, {"keeps_content": "yes", "label": "yes", "paraphrase": "A tennis player swings at a ball.", "reason": ""}), cap)
    assert drafted["label"] is None and kind.as_answer(drafted, cap)["label"] is None


# -- ColorSwap -----------------------------------------------------------------------------------
COLORSWAP = pair()

def test_colorswap_pair_from_one_caption_checked_by_the_swap_check():
    kind, workflow, item = KINDS["colorswap.caption_pair"], get_workflow("colorswap.recaption"), parsed("colorswap", COLORSWAP)
    assert render(kind, item).startswith("Caption: a red cat in a grey jacket\n") and kind.images == ()
    model = {"caption_1": "A fluffy red cat wearing a grey wool jacket", "caption_2": "A fluffy grey cat wearing a red  wool jacket"}
    payload = kind.to_payload(answer(kind, model), item)
    assert payload == {"caption_1": model["caption_1"], "caption_2": "A fluffy grey cat wearing a red wool jacket"}

    results = {"colorswap.filter": {"choice_1": 0, "choice_2": 1}}
    values = workflow.initial_values(ItemContext(item.data, results=results, suggestions=shown(kind.suggestion_kind, payload)))
    assert values == payload
    context = workflow.screen_context(ItemContext(item.data, results=results, suggestions=shown(kind.suggestion_kind, payload)), values)
    assert context["drafted_by"] == "qwen2.5-vl colorswap.caption_pair v1"
    stored = workflow.validate_annotation(ItemContext(item.data, results=results), workflow.form_to_payload(values))  # Enter (rule-based: must change, and does)
    assert stored == kind.as_answer(payload, item)
    assert workflow.live_check(ItemContext(item.data, results=results), values)["check"].ok
    assert workflow.suggestion_outcome(ItemContext(item.data), kind.suggestion_kind, payload, stored) == "accepted"
    assert workflow.compare(kind.as_answer(payload, item), stored) == 1.0
    assert workflow.compare(kind.as_answer(payload, item), {"caption_1": COLORSWAP["caption_1"], "caption_2": COLORSWAP["caption_2"]}) < 1.0

    for pair, reason in [
        ({"caption_1": "a red cat in a grey jacket", "caption_2": "a red dog in a grey jacket"}, "differ in more than colour words"),
        ({"caption_1": "a red cat in a grey jacket", "caption_2": "a red cat in a grey jacket"}, "The captions are the same"),
        ({"caption_1": "a cat in a jacket", "caption_2": "a jacket in a cat"}, "Caption 1 has no colour word"),
    ]:
        with pytest.raises(DraftInvalid, match=f"Not a colour-swap pair: .*{reason}"):
            kind.to_payload(answer(kind, pair), item)


# -- ExpArt -----------------------------------------------------------------------------------


def test_artwork_explanation_with_the_papers_instruction_scored_by_entities_against_the_section():
    kind, workflow, item = KINDS["artwork.drafted_explanation"], get_workflow("artwork.explanation"), parsed("artwork", ARTWORK)
    assert render(kind, item) == "Explain the Theft regarding the History of this artwork, Mona Lisa."
    text = "Vincenzo Peruggia stole the painting from the Louvre in 1911; it came back to Paris in 1913."
    payload = kind.to_payload(answer(kind, {"explanation": f"  {text}\n"}), item)
    assert payload == {"explanation": text, "metrics": scores(ARTWORK["entities"], ARTWORK["text"], text)}

    context = workflow.screen_context(ItemContext(item.data, suggestions=shown(kind.suggestion_kind, payload)), {})
    assert context["drafted"]["explanation"] == text and context["drafted"]["metrics"]["entity_f1"] == 1.0
    assert kind.as_answer(payload, item) is None  # an explanation is not an expert's score
    assert reference_score(payload, item.data) == scores(ARTWORK["entities"], ARTWORK["text"], text)["entity_f1"] == 1.0
    partial = kind.to_payload(answer(kind, {"explanation": "It was taken from the Louvre."}), item)
    assert reference_score(partial, item.data) < 1.0
    with pytest.raises(DraftInvalid, match="explanation is empty"):
        kind.to_payload(answer(kind, {"explanation": " \n "}), item)


# -- every screen shows its drafted suggestion ------------------------------------------------------------
# A model answer of each kind for the first demo record of its dataset (tests.staged.item_at), earlier stages done.
DEMO_ANSWERS = {
    "wikido.caption": {"caption": "A drawn shape."},
    "wikido.unsupported": {"phrases": ["pale background"], "unrelated": False},
    "visargs.visual_premises": {"visual_premises": ["A blue drop", "The words SAVE WATER"]},
    "visargs.argument": {"commonsense_premises": ["Water is scarce"], "conclusion": "Save water.", "reasoning_steps": ["(VP1, CP1 -> C): Save water."]},
    "visargs.premise_boxes": {"boxes": [{"premise": 1, "x_min": 0.25, "y_min": 0.25, "x_max": 0.75, "y_max": 0.5}]},
    "voldoger.check": {"keeps_content": "no", "label": "no", "paraphrase": "Is the ball painted red?", "reason": "The ball turned blue."},
    "colorswap.caption_pair": {"caption_1": "a tiny green circle inside a blue square", "caption_2": "a tiny blue circle inside a green square"},
    "artwork.drafted_explanation": {"explanation": "Anna Berg painted it in oil on canvas."},
}


def test_every_screen_and_history_show_a_drafted_suggestion(client, app, settings, tmp_path, subtests):
    """One app for every workflow (its setup is what costs): an item in the stage, each kind's draft of it
    stored under a new prompt version as the drafting job stores one (with the item's images and earlier finals)."""
    make_user(app.state.sessions, "ann")
    make_user(app.state.sessions, "rita", "reviewer")
    workflows = sorted({k.workflows[0] for k in KINDS.values()})
    for workflow in workflows:
        with subtests.test(workflow=workflow):
            kinds = [k for k in KINDS.values() if k.workflows[0] == workflow]
            stage_id, item_id = _drafted_item(app, settings, tmp_path / workflow, kinds)
            login(client, "ann")
            screen = start_annotating(client, stage_id, follow_redirects=True)
            login(client, "rita")
            history = client.get(f"/items/{item_id}/history").text
            _no_json(history)
            for kind in kinds:
                assert screen.status_code == 200 and f"qwen2.5-vl {kind.name} v1" in screen.text, kind.name
                assert f"suggestion {kind.suggestion_kind}" in history, kind.name


def _drafted_item(app, settings, folder, kinds: list[DraftKind]) -> tuple[int, int]:
    folder.mkdir()
    stage_id, item_id, assets = item_at(app.state.sessions, settings, app.state.storage, folder, kinds[0].workflows[0], review=False)
    with transaction(app.state.sessions) as s:
        item = s.get(Item, item_id)
        keys = dict(s.execute(sa.select(Asset.sha256, Asset.storage_key).where(Asset.sha256.in_(assets.values()))).all())
        results = dict(s.execute(
            sa.select(Stage.workflow, ItemResult.payload).join(Stage, Stage.id == ItemResult.stage_id).where(ItemResult.item_id == item_id)
        ).all())
        for kind in kinds:
            images = {p: app.state.storage.get(keys[sha]) for p, sha in assets.items() if p in kind.images}
            payload = kind.to_payload(answer(kind, DEMO_ANSWERS[kind.name]), ItemInput(item_id, item.data, images, results))
            prompt = prompts.new_version(s, stage_id, kind.name, drafter="vllm")
            suggestions.store(s, item_id, stage_id, kind.suggestion_kind, "qwen2.5-vl", payload,
                              model_version=f"{kind.name} v{prompt.version}", prompt_id=prompt.id)
    return stage_id, item_id


# -- lengths ---------------------------------------------------------------------------------------
# Strict structured output takes no string lengths, so each kind bounds its texts itself, as the stage's answer does.
LONG = "word " * 2001


@pytest.mark.parametrize(("name", "item", "change", "reason"), [
    ("wikido.caption", parsed("wikido", WIKIDO), {"caption": LONG * 3}, "The caption is longer than 5,000 characters."),
    ("colorswap.caption_pair", parsed("colorswap", COLORSWAP), {"caption_2": "a red cat " * 101}, "Caption 2 is longer than 1,000 characters."),
    ("visargs.visual_premises", parsed("visargs", VISARGS), {"visual_premises": ["A cone", LONG]}, "Visual premise 2 is longer than 1,000"),
    ("visargs.argument", parsed("visargs", VISARGS, RESULTS), {"conclusion": LONG}, "The conclusion is longer than 2,000"),
    ("visargs.argument", parsed("visargs", VISARGS, RESULTS), {"reasoning_steps": ["(VP1, VP2 -> C): " + LONG]}, "Reasoning step 1 is longer"),
    ("voldoger.check", voldoger_item(VQA_ORIGINAL, VQA_STYLISED, "vqa"), {"paraphrase": LONG * 3}, "The paraphrase is longer than 5,000"),
    ("voldoger.check", voldoger_item(VQA_ORIGINAL, VQA_STYLISED, "vqa"), {"reason": LONG}, "The reason is longer than 2,000"),
    ("artwork.drafted_explanation", parsed("artwork", ARTWORK), {"explanation": LONG * 5}, "The explanation is longer than 10,000"),
])
def test_a_text_longer_than_the_stage_takes_is_refused(name, item, change, reason):
    kind = KINDS[name]
    valid = {
        "wikido.caption": {"caption": "The nave."},
        "colorswap.caption_pair": {"caption_1": "a red cat in a grey jacket", "caption_2": "a grey cat in a red jacket"},
        "visargs.visual_premises": {"visual_premises": ["A cone"]},
        "visargs.argument": {"commonsense_premises": [], "conclusion": "Buy it.", "reasoning_steps": ["(VP1, VP2 -> C): Buy it."]},
        "voldoger.check": {"keeps_content": "yes", "label": "no", "paraphrase": "Is the ball red?", "reason": "r"},
        "artwork.drafted_explanation": {"explanation": "It was stolen."},
    }[name]
    kind.to_payload(answer(kind, valid), item)
    with pytest.raises(DraftInvalid, match=reason):
        kind.to_payload(answer(kind, {**valid, **change}), item)
