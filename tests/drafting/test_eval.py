"""Evaluating prompt versions against people: agreement of drafts with finals equal to the agreement
module computed directly (kappa for a label workflow, the workflow's mean agreement for a set workflow), with
the acceptance, schema-valid share, latency and tokens beside it, and the per-item rows as Parquet."""

from __future__ import annotations

import io
import json
import random
from dataclasses import dataclass

import numpy as np
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from sklearn.metrics import cohen_kappa_score

from app.agreement import categorical, sets
from app.agreement.bootstrap import bootstrap, mean_from, mean_stats
from app.errors import Invalid
from app.lifecycle import ItemStatus
from app.models import GoldItem, Item, SuggestionOutcome
from app.services.drafting import draft_eval, eval_report, prompts
from tests import factories

CHOICES = "abc"


@dataclass
class Scenario:
    project_id: int
    stage_id: int
    prompts: list  # v1, v2
    pairs: dict  # prompt id -> [(draft choice, final choice)] over the items compared


def two_versions(session, settings, storage, folder, monkeypatch, n: int = 50) -> Scenario:
    """A generic.choice stage with `n` finished items (and one discarded, one unfinished), and two
    prompt versions: v1 drafts most items and agrees with 60 % of finals (4 drafts failed), v2
    drafts every item and agrees with 90 %."""
    factories.install_draft_kind(monkeypatch, factories.choice_draft_kind(), "generic")
    pid, (stage_id,) = factories.project(session)
    factories.choice_items(session, settings, storage, pid, n + 2, folder)
    ids = factories.item_ids(session, pid)
    rng = random.Random(7)
    finals = {i: rng.choice(CHOICES) for i in ids}
    for i in ids[:n]:
        factories.finished(session, stage_id, i, {"choice": finals[i]})
    factories.finished(session, stage_id, ids[n], {"choice": finals[ids[n]]}, discard=True)
    v1 = factories.prompt(session, stage_id, "generic.test-choice", note="the paper's prompt")
    v2 = factories.prompt(session, stage_id, "generic.test-choice", template="{question} One of: {choices}.", note="shorter")
    pairs: dict[int, list] = {v1.id: [], v2.id: []}
    for n_item, i in enumerate(ids):
        for prompt, right, cut in ((v1, 0.6, n - 4), (v2, 0.9, len(ids))):
            if n_item >= cut and n_item < n:
                factories.failed_draft(session, prompt, i, "not valid JSON: Expecting value", raw="<b>I think</b> it is a", latency_ms=900)
                continue
            choice = finals[i] if rng.random() < right else rng.choice([c for c in CHOICES if c != finals[i]])
            factories.drafted(session, prompt, i, {"choice": choice}, latency_ms=100 + 10 * n_item, prompt_tokens=40 + n_item % 3,
                              completion_tokens=5)
            if n_item < n:
                pairs[prompt.id].append((choice, finals[i]))
    return Scenario(pid, stage_id, [v1, v2], pairs)


def expected_kappa(pairs, samples=1000, seed=0):
    """Cohen's kappa of drafts against finals and its bootstrap interval, by the agreement module alone."""
    ratings, labels = categorical.codes([list(p) for p in pairs])
    k = len(labels)
    estimate = categorical.cohen_kappa(ratings[:, 0], ratings[:, 1])
    ci = bootstrap(categorical.cohen_stats(ratings[:, 0], ratings[:, 1], k), lambda s: categorical.cohen_from(s, k), samples=samples, seed=seed)
    return estimate, ci


def test_two_versions_agree_with_the_finals_as_the_agreement_module_computes(session, settings, storage, tmp_path, monkeypatch):
    sc = two_versions(session, settings, storage, tmp_path, monkeypatch)
    result = draft_eval.evaluate(session, sc.stage_id, [p.id for p in sc.prompts], samples=500, seed=3)
    assert result.measure == "Cohen's kappa" and [v.version for v in result.versions] == [1, 2]
    for report, prompt in zip(result.versions, sc.prompts, strict=True):
        pairs = sc.pairs[prompt.id]
        estimate, ci = expected_kappa(pairs, samples=500, seed=3)
        kappa = report.headline
        assert kappa.name == "Cohen's kappa" and report.items == kappa.items == len(pairs)
        assert kappa.estimate == pytest.approx(estimate, abs=1e-12)
        assert kappa.estimate == pytest.approx(cohen_kappa_score([d for d, _ in pairs], [f for _, f in pairs]), abs=1e-12)
        assert (kappa.low, kappa.high) == pytest.approx((ci.low, ci.high), abs=1e-12)
        assert kappa.low < kappa.estimate < kappa.high
        share = report.figures[-1]
        assert share.name == "share agreeing" and share.estimate == pytest.approx(np.mean([d == f for d, f in pairs]))
    v1, v2 = result.versions
    assert (v1.items, v2.items) == (46, 50)  # the discarded final and the unfinished item are left out
    assert v2.headline.estimate > v1.headline.estimate
    assert (v1.valid, v1.failed, v1.valid_share) == (48, 4, 48 / 52)
    assert (v2.valid, v2.failed, v2.valid_share) == (52, 0, 1.0)
    # Every model call counts: v1's 48 drafts took 100..570 ms, its 4 failures 900 ms.
    calls = sorted([100 + 10 * n for n in range(46)] + [100 + 10 * n for n in (50, 51)] + [900] * 4)
    assert v1.latency_p50_ms == pytest.approx(np.percentile(calls, 50))
    assert v1.latency_p95_ms == pytest.approx(np.percentile(calls, 95))
    assert v2.prompt_tokens == pytest.approx(np.mean([40 + n % 3 for n in range(52)])) and v2.completion_tokens == 5


def test_acceptance_counts_the_outcomes_of_the_versions_drafts(session, settings, storage, tmp_path, monkeypatch):
    sc = two_versions(session, settings, storage, tmp_path, monkeypatch, n=6)
    annotator = factories.user(session)
    from app.models import Suggestion

    drafts = session.scalars(sa.select(Suggestion.id).where(Suggestion.prompt_id == sc.prompts[1].id).order_by(Suggestion.id)).all()
    for n, outcome in enumerate(("accepted", "accepted", "edited", "rejected")):
        done = factories.annotation(session, sc.stage_id, annotator, {"choice": "a"})
        session.add(SuggestionOutcome(annotation_id=done.annotation_id, suggestion_id=drafts[n], stage_id=sc.stage_id,
                                      kind="generic.choice-draft", model="tiny-vlm", model_version="generic.test-choice v2", outcome=outcome))
    session.flush()
    v1, v2 = draft_eval.evaluate(session, sc.stage_id, [p.id for p in sc.prompts], samples=50).versions
    assert (v2.accepted, v2.shown, v2.accepted_share) == (2, 4, 0.5)
    assert (v1.shown, v1.accepted_share) == (0, None)


def _items(session, project_id: int, stage_id: int, n: int) -> list[int]:
    """`n` items standing in a stage, made directly (what the evaluation reads of them is their id)."""
    ids = []
    for k in range(n):
        item = Item(project_id=project_id, external_id=f"x-{k}", data={"image": "x.png"}, stage_id=stage_id, status=ItemStatus.done)
        session.add(item)
        session.flush()
        ids.append(item.id)
    return ids


def test_a_set_task_is_scored_by_its_mean_agreement(session):
    """visargs.premises with its own draft kind: a discard label and a premise set; a draft's score is
    the workflow's mean over both facets (the label agrees, the set by Jaccard), averaged over items with a
    bootstrap interval."""
    pid, (stage_id, *_) = factories.project(session, ["visargs.premises"])
    prompt = factories.prompt(session, stage_id, "visargs.visual_premises")
    rng = random.Random(11)
    vocabulary = [f"premise {k}" for k in range(8)]
    scores = []
    for item_id in _items(session, pid, stage_id, 30):
        final, draft = rng.sample(vocabulary, 3), rng.sample(vocabulary, rng.randint(1, 4))
        factories.finished(session, stage_id, item_id, {"visual_premises": final, "discard": False})
        factories.drafted(session, prompt, item_id, {"visual_premises": draft})
        scores.append((1.0 + sets.jaccard(draft, final)) / 2)
    (report,) = draft_eval.evaluate(session, stage_id, [prompt.id], samples=400, seed=1).versions
    ci = bootstrap(mean_stats(np.array(scores)), mean_from, samples=400, seed=1)
    figure = report.headline
    assert figure.name == "mean agreement" and report.figures == [figure] and figure.items == 30
    assert (figure.estimate, figure.low, figure.high) == pytest.approx((np.mean(scores), ci.low, ci.high), abs=1e-12)


def test_a_task_with_several_labels_gets_a_kappa_per_label(session):
    """colorswap.recaption's two captions are labels (compared after case and spacing): a kappa each."""
    pid, stage_ids = factories.project(session, ["colorswap.filter", "colorswap.recaption"])
    stage_id = stage_ids[1]
    prompt = factories.prompt(session, stage_id, "colorswap.caption_pair")
    rng = random.Random(5)
    pairs = [("a red cat in a grey hat", "a grey cat in a red hat"), ("a blue cup on a green mat", "a green cup on a blue mat"),
             ("a pink bag by a black door", "a black bag by a pink door")]
    drafts, finals = [], []
    for item_id in _items(session, pid, stage_id, 24):
        final, draft = rng.choice(pairs), rng.choice(pairs)
        draft = (draft[0].upper(), draft[1]) if rng.random() < 0.3 else draft  # case does not count
        factories.finished(session, stage_id, item_id, {"caption_1": final[0], "caption_2": final[1]})
        factories.drafted(session, prompt, item_id, {"caption_1": draft[0], "caption_2": draft[1]})
        drafts.append([d.lower() for d in draft])
        finals.append(list(final))
    report = draft_eval.evaluate(session, stage_id, [prompt.id], samples=100).versions[0]
    assert [f.name for f in report.figures] == ["Cohen's kappa · caption 1", "Cohen's kappa · caption 2", "share agreeing"]
    for n, figure in enumerate(report.figures[:2]):
        assert figure.estimate == pytest.approx(cohen_kappa_score([d[n] for d in drafts], [f[n] for f in finals]), abs=1e-12)


def test_gold_items_measure_drafts_against_the_truth(session, settings, storage, tmp_path, monkeypatch):
    sc = two_versions(session, settings, storage, tmp_path, monkeypatch, n=10)
    v2 = sc.prompts[1]
    ids = factories.item_ids(session, sc.project_id)
    gold_item = ids[-1]  # unfinished: the run drafts it as a gold item of the stage
    session.get(Item, gold_item).status = ItemStatus.gold
    session.add(GoldItem(stage_id=sc.stage_id, item_id=gold_item, answer={"choice": "z"}, source="import"))
    session.flush()
    assert gold_item in prompts.chosen_items(session, v2, "all")
    report = draft_eval.evaluate(session, sc.stage_id, [v2.id], gold=True, samples=50)
    assert report.gold and report.versions[0].items == 1 and report.rows[0].final == {"choice": "z"}
    assert report.versions[0].figures[-1].estimate == 0.0  # "z" is no draft's answer


def test_per_item_rows_round_trip_through_parquet(session, settings, storage, tmp_path, monkeypatch):
    sc = two_versions(session, settings, storage, tmp_path, monkeypatch, n=12)
    result = draft_eval.evaluate(session, sc.stage_id, [p.id for p in sc.prompts], samples=20)
    table = pq.read_table(io.BytesIO(eval_report.to_parquet(result)))
    assert table.column_names == ["item_id", "external_id", "prompt_id", "version", "draft", "final", "score"]
    read = table.to_pylist()
    assert len(read) == len(result.rows) == sum(v.items for v in result.versions)
    for row, kept in zip(read, result.rows, strict=True):
        assert (row["item_id"], row["external_id"], row["prompt_id"], row["version"], row["score"]) == (
            kept.item_id, kept.external_id, kept.prompt_id, kept.version, kept.score)
        assert json.loads(row["draft"]) == kept.draft and json.loads(row["final"]) == kept.final
    eval_report.to_parquet(result, tmp_path / "rows.parquet")
    assert pq.read_table(tmp_path / "rows.parquet").num_rows == len(read)


def test_versions_of_another_stage_or_bad_ids_are_refused(session, settings, storage, tmp_path, monkeypatch):
    sc = two_versions(session, settings, storage, tmp_path, monkeypatch, n=3)
    _, (other_stage,) = factories.project(session)
    with pytest.raises(Invalid, match="not a prompt version of stage") as refused:
        draft_eval.evaluate(session, other_stage, [sc.prompts[0].id])
    assert refused.value.field == "prompts"
    with pytest.raises(Invalid, match="Choose the prompt versions"):
        draft_eval.evaluate(session, sc.stage_id, [])
    assert draft_eval.parse_ids("2, 1,2") == [2, 1]
    with pytest.raises(Invalid, match="not '1x'"):
        draft_eval.parse_ids("1x,2")


def test_the_chart_draws_one_bar_per_version_and_figure(session, settings, storage, tmp_path, monkeypatch):
    sc = two_versions(session, settings, storage, tmp_path, monkeypatch, n=20)
    result = draft_eval.evaluate(session, sc.stage_id, [p.id for p in sc.prompts], samples=50)
    drawn = eval_report.chart(result)
    assert [g["name"] for g in drawn["groups"]] == ["Cohen's kappa", "share agreeing"]
    for group in drawn["groups"]:
        assert [b["label"] for b in group["bars"]] == ["generic.test-choice v1", "generic.test-choice v2"]
        for b in group["bars"]:
            assert b["low"] <= b["x"] + b["width"] <= b["high"] or b["estimate"] < 0


def test_an_explanation_is_scored_by_entity_f1_against_its_section(session):
    """artwork.explanation with its own draft kind: a drafted explanation is no judgement, so each is
    scored by its entity F1 against the record's section (app.agreement.entities), averaged over items
    with a bootstrap interval; an item without linked entities is not comparable."""
    from app.agreement.entities import scores as entity_scores
    from tests.datasets.artwork.test_artwork import EXPLAINED

    pid, (stage_id, *_) = factories.project(session, ["artwork.explanation"])
    prompt = factories.prompt(session, stage_id, "artwork.drafted_explanation")
    rng = random.Random(5)
    words = ["It hung in the Louvre.", "Vincenzo Peruggia took it.", "It came back to Paris.", "It is small.", "Rome saw it."]
    expected = []
    for k in range(24):
        data = {**EXPLAINED, "id": f"a-{k}", "entities": [] if k == 0 else EXPLAINED["entities"]}
        item = Item(project_id=pid, external_id=data["id"], data=data, stage_id=stage_id, status=ItemStatus.done)
        session.add(item)
        session.flush()
        text = " ".join(rng.sample(words, rng.randint(1, 4)))
        factories.finished(session, stage_id, item.id, {"verdict": "kept"})
        factories.drafted(session, prompt, item.id, {"explanation": text})
        if k:
            expected.append(entity_scores(data["entities"], data["text"], text)["entity_f1"])
    (report,) = draft_eval.evaluate(session, stage_id, [prompt.id], samples=300, seed=2).versions
    ci = bootstrap(mean_stats(np.array(expected)), mean_from, samples=300, seed=2)
    figure = report.headline
    assert figure.name == "entity F1 against the section" and report.figures == [figure]
    assert figure.items == 23 and report.uncomparable == 1
    assert (figure.estimate, figure.low, figure.high) == pytest.approx((np.mean(expected), ci.low, ci.high), abs=1e-12)
    assert 0 < figure.estimate < 1
