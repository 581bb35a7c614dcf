"""ExpArt as plain functions: records, the omitted-section rule, payloads, agreement facets, consolidation, export, charts."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from app.agreement.pairs import facet_score
from app.datasets import get_dataset, get_workflow
from app.datasets.workflow import ItemContext
from app.errors import Invalid

DATASET = get_dataset("artwork")
SECTIONS = get_workflow("artwork.sections")
EXPLAIN = get_workflow("artwork.explanation")
RECORD = {
    "id": "0001_03",
    "title": "Mona Lisa",
    "image": "images/0001.jpg",
    "section": "History",
    "subsection": "Theft",
    "text": "The painting was stolen from the Louvre in 1911 by Vincenzo Peruggia. It returned to Paris in 1913.",
    "entities": ["Louvre", "Vincenzo Peruggia", "Paris"],
    "wiki_id": 70889,  # an extra key, kept
}
EXPLAINED = {**RECORD, "id": "0001_03:llava", "model": "llava", "explanation": "It was stolen from the Louvre by Peruggia in Rome."}


def item(record=RECORD) -> dict:
    return DATASET.parse_item(record, {}).model_dump(mode="json")


def test_records_import_and_bad_ones_are_refused_by_field():
    data = item()
    assert data["subsection"] == "Theft" and data["wiki_id"] == 70889 and data["subsubsection"] is None
    for bad, field in [
        ({k: v for k, v in RECORD.items() if k != "text"}, "text"),
        ({**RECORD, "entities": ["Louvre", 3]}, "entities"),
        ({**RECORD, "model": "llava"}, "explanation"),
        ({**RECORD, "subsection": None, "subsubsection": "x"}, "sub-subsection"),
    ]:
        with pytest.raises(ValidationError, match=field):
            DATASET.parse_item(bad, {})


def test_the_rule_drops_omitted_sections_on_screen():
    refs = item({**RECORD, "section": "See Also", "subsection": None})
    assert SECTIONS.initial_values(ItemContext(refs)) == {"decision": "drop", "reason": "not_about_artwork"}
    ctx = SECTIONS.screen_context(ItemContext(refs), {})
    assert ctx["rule"] == "See Also"
    assert SECTIONS.initial_values(ItemContext(item())) == {}
    ctx = SECTIONS.screen_context(ItemContext(item()), {})
    assert ctx["rule"] is None and ctx["path"] == ["History", "Theft"]
    assert [s["text"] for s in ctx["segments"] if s["kind"]] == ["Louvre", "Vincenzo Peruggia", "Paris"]
    for name in ("Bibliografía", "notes and references", "List by location", "External  links"):
        assert SECTIONS.initial_values(ItemContext(item({**RECORD, "section": name})))


def test_section_payloads():
    data = item()
    assert SECTIONS.validate_annotation(ItemContext(data), {"decision": "keep", "reason": "other"}) == {"decision": "keep", "reason": None}
    assert SECTIONS.is_discard(SECTIONS.validate_annotation(ItemContext(data), {"decision": "drop", "reason": "too_short"}))
    with pytest.raises(Invalid) as err:
        SECTIONS.validate_annotation(ItemContext(data), {"decision": "drop"})
    assert "choose a reason" in err.value.errors[0]
    assert SECTIONS.form_to_payload({"decision": "Keep", "reason": "other"}) == {"decision": "keep"}


def test_explanation_payloads_merge_struck_words_into_spans():
    data = item(EXPLAINED)
    out = EXPLAIN.validate_annotation(ItemContext(data), EXPLAIN.form_to_payload({"score": "2", "struck": ["8", "9", "5"]}))
    assert out == {"score": 2, "struck": [[5, 6], [8, 10]]}
    assert EXPLAIN.form_to_payload({"score": "3", "struck": "4"}) == {"score": "3", "struck": [[4, 5]]}
    with pytest.raises(Invalid, match="not valid") as err:
        EXPLAIN.validate_annotation(ItemContext(data), {"score": 3, "struck": [[10, 40]]})
    assert "words of the explanation" in err.value.errors[0]
    with pytest.raises(Invalid):
        EXPLAIN.validate_annotation(ItemContext(data), {"score": 6, "struck": []})


def test_explanation_screen_marks_shared_missing_and_extra_entities():
    data = item({**EXPLAINED, "explanation_entities": ["Louvre", "Rome"]})
    ctx = EXPLAIN.screen_context(ItemContext(data), {"struck": ["1"]})
    assert ctx["missing"] == ["Vincenzo Peruggia", "Paris"] and ctx["extra"] == ["Rome"]
    kinds = {t["text"]: t["kind"] for t in ctx["tokens"]}
    assert kinds["Louvre"] == "shared" and kinds["Rome"] == "extra" and kinds["stolen"] is None
    assert [t["struck"] for t in ctx["tokens"][:3]] == [False, True, False]
    assert ctx["metrics"]["entity_coverage"] == pytest.approx((1 + 1 / 2 + 0) / 3)


def test_routing_takes_kept_sections_with_an_explanation():
    data = item(EXPLAINED)
    assert EXPLAIN.applies(ItemContext(data, results={"artwork.sections": {"decision": "keep", "reason": None}}))
    assert not EXPLAIN.applies(ItemContext(data, results={"artwork.sections": {"decision": "drop", "reason": "other"}}))
    assert not EXPLAIN.applies(ItemContext(item(), results={"artwork.sections": {"decision": "keep", "reason": None}}))


def test_agreement_facets_on_planted_disagreements():
    keep, drop_a, drop_b = {"decision": "keep", "reason": None}, {"decision": "drop", "reason": "too_short"}, {"decision": "drop", "reason": "other"}
    assert SECTIONS.compare(keep, keep) == 1.0
    assert SECTIONS.compare(drop_a, drop_b) == 0.5  # same decision, other reason
    assert SECTIONS.compare(keep, drop_a) == 0.0
    a, b = {"score": 4, "struck": [[0, 2]]}, {"score": 4, "struck": [[1, 3]]}
    fa, fb = EXPLAIN.facet_values(a), EXPLAIN.facet_values(b)
    assert facet_score("token_set", fa["struck tokens"], fb["struck tokens"]) == pytest.approx(1 / 3)
    assert EXPLAIN.compare(a, b) == pytest.approx((1 + 1 / 3) / 2)
    assert EXPLAIN.compare({"score": 2, "struck": []}, {"score": 5, "struck": []}) == 0.5


def test_consolidation_by_majority_and_ties_to_review():
    keep, drop_a, drop_b = {"decision": "keep", "reason": None}, {"decision": "drop", "reason": "too_short"}, {"decision": "drop", "reason": "other"}
    assert SECTIONS.consolidate(ItemContext({}), [keep, keep, drop_a]).final == keep
    out = SECTIONS.consolidate(ItemContext({}), [drop_a, drop_a, keep])
    assert out.final == drop_a and out.discard
    assert SECTIONS.consolidate(ItemContext({}), [keep, drop_a]).needs_review
    assert SECTIONS.consolidate(ItemContext({}), [drop_a, drop_b, keep]).needs_review  # reason tied
    p = [{"score": 4, "struck": [[0, 2]]}, {"score": 4, "struck": [[1, 2]]}, {"score": 3, "struck": [[1, 3]]}]
    assert EXPLAIN.consolidate(ItemContext({}), p).final == {"score": 4, "struck": [[1, 2]]}
    assert EXPLAIN.consolidate(ItemContext({}), p[:1] + [{"score": 3, "struck": [[0, 2]]}]).needs_review
    assert EXPLAIN.consolidate(ItemContext({}), [{"score": 4, "struck": [[0, 1]]}, {"score": 4, "struck": []}]).needs_review


def test_export_adds_the_paper_s_instructions_and_logs_judgements():
    source = json.loads(json.dumps(EXPLAINED))
    data = item(EXPLAINED)
    results = {"artwork.sections": {"decision": "keep", "reason": None}, "artwork.explanation": {"score": 2, "struck": [[8, 10]]}}
    record = DATASET.export_record(data, results, source)
    assert list(record)[: len(source)] == list(source)
    assert record["instruction"] == "Explain the Theft regarding the History of this artwork, Mona Lisa."
    assert record["instruction_without_title"] == "Explain the Theft regarding the History of this artwork."
    assert DATASET.export_record(item({**RECORD, "subsection": None}), {}, None)["instruction"] == "Explain the History of this artwork, Mona Lisa."
    deep = item({**RECORD, "subsubsection": "Recovery"})
    assert DATASET.export_record(deep, {}, None)["instruction"] == (
        "Explain the Recovery regarding the Theft in the History of this artwork, Mona Lisa.")
    line = DATASET.export_log(data, results, source)
    assert line["id"] == "0001_03:llava" and line["decision"] == "keep" and line["score"] == 2
    assert line["struck_words"] == ["in", "Rome"] and line["model"] == "llava"
    assert set(line["metrics"]) >= {"entity_coverage", "entity_f1", "entity_cooccurrence"}
    assert "model" not in DATASET.export_log(item(), {"artwork.sections": {"decision": "drop", "reason": "other"}}, None)


def test_charts_per_model_and_rank_correlation():
    rows = []
    for i, (model, score, explanation) in enumerate([
        ("a", 5, "It was stolen from the Louvre in 1911 by Vincenzo Peruggia. It returned to Paris."),
        ("a", 4, "Stolen from the Louvre by Vincenzo Peruggia."),
        ("b", 2, "Stolen from the Louvre."),
        ("b", 1, "A painting of a woman."),
    ]):
        data = item({**RECORD, "id": f"x{i}", "model": model, "explanation": explanation})
        rows.append(SimpleNamespace(data=data, results={"artwork.explanation": {"score": score, "struck": [[0, 1]]}}, source=None))
    rows.append(SimpleNamespace(data=item(), results={"artwork.sections": {"decision": "keep", "reason": None}}, source=None))
    bars, per_model, rank = DATASET.charts(rows)
    table = dict(per_model.rows)
    assert bars.kind == "bars" and dict(bars.rows)["a"][0] == pytest.approx(4.5 / 5)  # drawn on one 0–1 scale
    assert table["a"][:2] == (2, 4.5) and table["b"][:2] == (2, 1.5)
    assert table["b"][2] == pytest.approx((1 / 5 + 1 / 6) / 2)  # one struck token of 5 and of 6 (full stops count)
    rho = dict(rank.rows)["EC"]
    assert rho[0] == pytest.approx(1.0) and rho[3] == 4.0
    assert DATASET.charts([rows[-1]]) == []
