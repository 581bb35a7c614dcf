"""VOLDOGER without the database: joining the release's rows, item checks, annotations,
agreement facets, consolidation, routing, the published mapping and the charts."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from app.datasets import get_dataset, get_workflow
from app.datasets.voldoger.release import join, join_files
from app.datasets.workflow import ItemContext
from app.errors import Invalid
from tests.datasets.voldoger.release_rows import (
    CAP_ORIGINAL,
    CAP_STYLISED,
    VE_ORIGINAL,
    VE_STYLISED,
    VQA_ORIGINAL,
    VQA_STYLISED,
)

WORKFLOW = get_workflow("voldoger.verify")
DATASET = get_dataset("voldoger")


def items(records):
    return [DATASET.parse_item(r, {}).model_dump(mode="json") for r in records]


def test_join_pairs_each_stylised_row_with_its_original():
    vqa = join(VQA_ORIGINAL, VQA_STYLISED, "vqa", "oil")
    assert [r["original"]["question"] for r in vqa] == ["Is the ball red?", "Is it sunny?", "Are there people?"]
    assert vqa[0]["stylised_image"] == "oil/100034.jpg" and vqa[0]["original_image"] == "original/100034.jpg"
    assert len({r["id"] for r in vqa}) == 3
    # VE: three originals share a photo; the k-th stylised row of a photo joins the k-th original.
    ve = join(VE_ORIGINAL, VE_STYLISED, "ve", "cartoon")
    assert [r["original"]["label"] for r in ve] == [2, 1, 0]
    assert ve[1]["original"]["hypothesis"] == " A man with ared uniform and hat stands on the beach smiling."
    cap = join(CAP_ORIGINAL, CAP_STYLISED, "cap", "pencil", original_folder="photos")
    assert cap[0]["original"] is not CAP_ORIGINAL[1] and cap[0]["original"] == CAP_ORIGINAL[1]
    assert cap[1]["original_image"] == "photos/COCO_train2014_000000000368.jpg"
    # The stylised row is kept as it came: key order and every space.
    assert list(cap[1]["stylised"]) == list(CAP_STYLISED[1]) and cap[0]["stylised"]["caption"].endswith("  a ball ")
    for record in vqa + ve + cap:
        DATASET.parse_item(record, {})


def test_join_refuses_rows_it_cannot_pair_naming_row_and_field(tmp_path):
    lost = {**VQA_STYLISED[2], "question_id": 99}
    with pytest.raises(Invalid) as exc:
        join(VQA_ORIGINAL, [VQA_STYLISED[0], lost, {"question": "?"}], "vqa", "oil")
    assert exc.value.errors == [
        "stylised row 2: field 'question_id': no original row has 200012.jpg, 99",
        "stylised row 3: field 'image_id': a file name is required",
    ]
    with pytest.raises(Invalid) as exc:
        join(VE_ORIGINAL, VE_STYLISED + VE_STYLISED[:1], "ve", "cartoon")
    assert exc.value.errors == ["stylised row 4: field 'image_id': more stylised rows than original rows for 3215589470.jpg"]
    with pytest.raises(Invalid, match="Unknown style"):
        join(VE_ORIGINAL, VE_STYLISED, "ve", "watercolour")
    (tmp_path / "o.json").write_text(json.dumps(VE_ORIGINAL, indent=4))
    (tmp_path / "s.json").write_text(json.dumps(VE_STYLISED, indent=4))
    assert join_files(tmp_path / "o.json", tmp_path / "s.json", "ve", "cartoon") == join(VE_ORIGINAL, VE_STYLISED, "ve", "cartoon")


def test_a_bad_row_is_refused_with_its_field():
    (record,) = join(VQA_ORIGINAL[:1], VQA_STYLISED[:1], "vqa", "oil")
    with pytest.raises(Invalid, match=r"field 'stylised.answer': 'maybe' is not one of yes, no"):
        DATASET.parse_item({**record, "stylised": {**record["stylised"], "answer": "maybe"}}, {})
    with pytest.raises(Invalid, match=r"field 'original.label': required in a visual entailment row"):
        (ve,) = join(VE_ORIGINAL[:1], VE_STYLISED[:1], "ve", "cartoon")
        DATASET.parse_item({**ve, "original": {k: v for k, v in ve["original"].items() if k != "label"}}, {})
    with pytest.raises(Exception, match="style"):
        DATASET.parse_item({**record, "style": "watercolour"}, {})


def test_annotations_are_checked_in_the_annotators_terms():
    vqa, ve, cap = items([join(VQA_ORIGINAL, VQA_STYLISED, "vqa", "oil")[0], join(VE_ORIGINAL, VE_STYLISED, "ve", "cartoon")[1],
                          join(CAP_ORIGINAL, CAP_STYLISED, "cap", "pencil")[0]])
    ok = WORKFLOW.validate_annotation(ItemContext(vqa), {"image": "keep", "label": "No", "paraphrase": "keep", "text": "ignored"})
    assert ok == {"image": "keep", "label": "no", "paraphrase": "keep", "text": None, "note": ""}
    assert WORKFLOW.validate_annotation(ItemContext(ve), {"image": "keep", "label": "contradiction", "paraphrase": "keep"})["label"] == "2"
    assert WORKFLOW.validate_annotation(ItemContext(cap), {"image": "keep", "label": "yes", "paraphrase": "keep"})["label"] is None
    gone = WORKFLOW.validate_annotation(ItemContext(vqa), {"image": "discard", "label": "no", "note": "the ball is gone"})
    assert gone == {"image": "discard", "label": None, "paraphrase": None, "text": None, "note": "the ball is gone"}
    for payload, message in [
        ({"image": "keep", "paraphrase": "keep"}, "Choose the label"),
        ({"image": "keep", "label": "maybe", "paraphrase": "keep"}, "one of: yes, no"),
        ({"image": "keep", "label": "yes"}, "keeps the meaning"),
        ({"image": "keep", "label": "yes", "paraphrase": "edit", "text": "Is the ball  coloured red?"}, "same as the LLM's"),
        ({"image": "keep", "label": "yes", "paraphrase": "edit", "text": " "}, "needs its text"),
    ]:
        with pytest.raises(Invalid) as exc:
            WORKFLOW.validate_annotation(ItemContext(vqa), payload)
        assert any(message in e for e in exc.value.errors), exc.value.errors


def test_facets_and_consolidation_on_planted_disagreements():
    llm = {"image": "keep", "label": "no", "paraphrase": "keep", "text": None, "note": ""}
    orig = {**llm, "label": "yes", "note": "still red"}
    edited = {**llm, "paraphrase": "edit", "text": "Is the ball red?"}
    drop = {"image": "discard", "label": None, "paraphrase": None, "text": None, "note": "blurred"}
    assert WORKFLOW.facet_values(llm) == {"image kept": "keep", "label": "no", "paraphrase kept": "keep"}
    assert WORKFLOW.facet_values(drop) == {"image kept": "discard", "label": None, "paraphrase kept": None}
    assert WORKFLOW.compare(llm, dict(llm)) == 1.0
    assert WORKFLOW.compare(llm, orig) == pytest.approx(2 / 3)  # the label differs, image and paraphrase agree
    assert WORKFLOW.compare(llm, edited) == pytest.approx(2 / 3)
    assert WORKFLOW.compare(llm, drop) == 0.0  # image differs; the label and paraphrase only one speaks to
    # Majority per field.
    two_one = WORKFLOW.consolidate(ItemContext({}), [llm, orig, {**orig, "note": ""}])
    assert two_one.final == {"image": "keep", "label": "yes", "paraphrase": "keep", "text": None, "note": "still red"}
    assert not two_one.discard
    assert WORKFLOW.consolidate(ItemContext({}), [drop, drop, llm]).discard
    # Ties go to review: image, label, paraphrase decision, edited texts.
    assert WORKFLOW.consolidate(ItemContext({}), [llm, drop]).needs_review
    assert WORKFLOW.consolidate(ItemContext({}), [llm, orig]).needs_review
    assert WORKFLOW.consolidate(ItemContext({}), [llm, edited]).needs_review
    assert WORKFLOW.consolidate(ItemContext({}), [edited, {**edited, "text": "Is the ball  red?"}, llm]).final["text"] == "Is the ball red?"
    assert WORKFLOW.consolidate(ItemContext({}), [edited, {**edited, "text": "Is that ball red?"}]).needs_review
    assert WORKFLOW.consolidate(ItemContext({}), [llm]).final == llm


def test_route_flipped_applies_only_to_labels_the_llm_changed():
    vqa = items(join(VQA_ORIGINAL, VQA_STYLISED, "vqa", "oil"))
    cap = items(join(CAP_ORIGINAL, CAP_STYLISED, "cap", "pencil"))
    assert [WORKFLOW.applies(ItemContext(i, {"route": "flipped"})) for i in vqa] == [True, False, True]
    assert not any(WORKFLOW.applies(ItemContext(i, {"route": "flipped"})) for i in cap)
    assert all(WORKFLOW.applies(ItemContext(i)) for i in vqa + cap)


def test_the_screen_starts_from_the_llms_work():
    vqa = items(join(VQA_ORIGINAL, VQA_STYLISED, "vqa", "oil"))[0]
    values = WORKFLOW.initial_values(ItemContext(vqa))
    assert values == {"paraphrase": "keep", "text": "Is the ball coloured red? ", "label": "no"}
    ctx = WORKFLOW.screen_context(ItemContext(vqa, assets={"/original_image": "a" * 64}), values)
    assert ctx["flipped"] and ctx["original_label"] == "yes" and ctx["llm_label"] == "no"
    assert [(l["key"], l["value"]) for l in ctx["labels"]] == [("1", "yes"), ("2", "no")]
    assert ctx["original_image"]["full"] == "/assets/" + "a" * 64 and ctx["stylised_image"] is None


def test_published_mapping_replaces_only_what_people_changed():
    ve_records = join(VE_ORIGINAL, VE_STYLISED, "ve", "cartoon")
    record = ve_records[1]
    item = items([record])[0]
    accept = {"voldoger.verify": {"image": "keep", "label": "2", "paraphrase": "keep", "text": None, "note": ""}}
    assert json.dumps(DATASET.export_record(item, accept, record)) == json.dumps(VE_STYLISED[1])
    fixed = {"voldoger.verify": {"image": "keep", "label": "1", "paraphrase": "edit", "text": "A man in a red uniform smiles.", "note": "x"}}
    out = DATASET.export_record(item, fixed, record)
    assert list(out) == list(VE_STYLISED[1]) and out["label"] == 1 and out["hypothesis"] == "A man in a red uniform smiles."
    # The check log: the authors' fields, for labels the LLM changed.
    assert DATASET.export_log(item, fixed, record) == {
        "image_id": "3215589470.jpg", "question": " A man in a red uniform and hat stands smiling on the beach.",
        "ori_answer": 1, "style_answer": 2, "flag": False, "comment": "x"}
    assert DATASET.export_log(items([ve_records[0]])[0], accept, ve_records[0]) is None  # not changed


def _row(record, final):
    item = items([record])[0]
    return SimpleNamespace(data=item, source=record, results={"voldoger.verify": final} if final else {})


def test_charts_count_accepted_changes_and_label_shift():
    vqa = join(VQA_ORIGINAL, VQA_STYLISED, "vqa", "oil")
    ve = join(VE_ORIGINAL, VE_STYLISED, "ve", "cartoon")
    keep = {"image": "keep", "paraphrase": "keep", "text": None, "note": ""}
    finished = [
        _row(vqa[0], {**keep, "label": "no"}),  # LLM's change accepted
        _row(vqa[1], None),  # routed past: nobody checked it
        _row(vqa[2], {**keep, "label": "no"}),  # LLM's change rejected
        _row(ve[0], {**keep, "label": "2"}),
        _row(ve[1], {"image": "discard", "label": None, "paraphrase": None, "text": None, "note": ""}),
        _row(ve[2], {**keep, "label": "0"}),
    ]
    changes, vqa_shift, ve_shift, images = DATASET.charts(finished)
    assert changes.kind == "stacked" and changes.series == ("accepted", "rejected")
    assert changes.rows == [("VQA · oil", (1, 1))]
    assert vqa_shift.series == ("yes", "no")
    assert vqa_shift.rows == [("oil · original", (1, 1)), ("oil · LLM", (1, 1)), ("oil · verified", (0, 2))]
    assert ve_shift.rows == [("cartoon · original", (1, 0, 1)), ("cartoon · LLM", (1, 0, 1)), ("cartoon · verified", (1, 0, 1))]
    assert images.rows == [("VQA · oil", (2, 0)), ("visual entailment · cartoon", (2, 1))]
