"""A stage's inter-annotator agreement: each workflow facet's figures with bootstrap intervals, and per annotator pair.

Reads every annotator's latest submitted annotation of each item (items with two or more),
turns payloads into facet values through the workflow, and computes with `app.agreement`:
nominal facets get percent agreement, Fleiss' kappa and Krippendorff's alpha (missing allowed)
plus Cohen's kappa per annotator pair; set, token-set and box facets get the mean pairwise
Jaccard or Hungarian-matched IoU (and accuracy at IoU >= 0.5 for boxes).
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from typing import Any, Callable

import numpy as np
import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.agreement import boxes, categorical, sets
from app.agreement.bootstrap import bootstrap, mean_from, mean_stats, resample_weights
from app.agreement.pairs import facet_score
from app.datasets import get_workflow
from app.models import AgreementReport, Stage
from app.services.annotation.pipeline import submitted_annotations
from app.services.projects.projects import get_stage
from app.services.quality import gold
from app.services.review import equivalence


def stage_annotations(session: Session, stage_id: int, seconds: dict | None = None) -> dict[int, dict[str, dict[str, Any]]]:
    """item id -> annotator name -> latest submitted payload (and, into `seconds`, each
    annotator's time per annotation)."""
    out: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    gold_items = gold.gold_item_ids(session, stage_id)  # answers to gold items are scored, never agreement
    for a in submitted_annotations(session, None, stage_id):
        if a.item_id in gold_items:
            continue
        out[a.item_id][a.annotator] = a.payload
        if seconds is not None and a.seconds_spent is not None:
            seconds.setdefault(a.annotator, []).append(a.seconds_spent)
    return out


def _interval(ci) -> dict[str, float]:
    return {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in ci.as_dict().items()}


SOFT_THRESHOLD = 0.8  # cosine similarity at which two texts count as the same (stage config: soft_match_threshold)


def stage_report(
    session: Session,
    stage_id: int,
    *,
    samples: int = 1000,
    seed: int = 0,
    embed: Callable[[list[str]], np.ndarray] | None = None,
) -> dict[str, Any]:
    """The stage's agreement figures. With `embed` (texts -> unit vectors, the worker's MiniLM),
    set facets also get Jaccard soft-matched by text similarity."""
    stage: Stage = get_stage(session, stage_id)
    workflow = get_workflow(stage.workflow)
    seconds: dict[str, list[float]] = {}
    everything = stage_annotations(session, stage_id, seconds)
    by_item = {i: a for i, a in everything.items() if len(a) >= 2}
    annotators = sorted({u for a in by_item.values() for u in a})
    items = sorted(by_item)
    report: dict[str, Any] = {
        "stage": {"id": stage.id, "name": stage.name, "workflow": stage.workflow},
        "items": len(items),
        "annotators": annotators,
        "samples": samples,
        "seed": seed,
        "facets": {},
    }
    done = defaultdict(int)
    for by_annotator in everything.values():
        for u in by_annotator:
            done[u] += 1
    report["per_annotator"] = {
        u: {"items": done[u], "median seconds": float(np.median(seconds[u])) if seconds.get(u) else None}
        for u in sorted(done)
    }
    if not items:
        return report
    weights = resample_weights(len(items), samples, seed)
    values = {i: {u: workflow.facet_values(p) for u, p in by_item[i].items()} for i in items}
    for facet, kind in workflow.facets.items():
        if kind == "nominal":
            report["facets"][facet] = _nominal(values, items, annotators, facet, weights, samples, seed)
            for u, share in _with_consensus(values, items, facet).items():
                report["per_annotator"][u].setdefault("agreement with consensus", {})[facet] = share
        else:
            report["facets"][facet] = _pairwise(values, items, annotators, facet, kind, weights, samples, seed)
            if kind == "set":
                threshold = float(stage.config.get("soft_match_threshold", SOFT_THRESHOLD))
                _soft(report["facets"][facet], values, items, annotators, facet, embed, threshold, weights, samples, seed)
    if workflow.equivalence:
        report["facets"][f"{workflow.equivalence.field} equivalence"] = _equivalence(session, stage, samples, seed)
    return report


def _equivalence(session: Session, stage: Stage, samples: int, seed: int) -> dict[str, Any]:
    """The share of answer pairs that say the same: same wording, or judged equivalent by a reviewer."""
    pairs = equivalence.answer_pairs(session, stage)
    verdicts = equivalence.judged(session, stage)
    per_item, per_pair = defaultdict(list), defaultdict(list)
    pending = 0
    for p in pairs:
        same = True if p.same_wording else verdicts.get(p.key)
        if same is None:
            pending += 1
            continue
        per_item[p.item_id].append(float(same))
        per_pair[" / ".join(p.annotators)].append(float(same))
    out: dict[str, Any] = {
        "kind": "judged",
        "metrics": {},
        "pairs": len(pairs),
        "same wording": sum(p.same_wording for p in pairs),
        "judged": len(pairs) - pending - sum(p.same_wording for p in pairs),
        "pending": pending,
        "items": len(per_item),
    }
    if per_item:
        means = np.array([np.mean(v) for v in per_item.values()])
        out["metrics"]["equivalence rate"] = _interval(bootstrap(mean_stats(means), mean_from, samples=samples, seed=seed))
    out["pairwise"] = {p: {"items": len(v), "equivalence rate": float(np.mean(v))} for p, v in per_pair.items()}
    return out


def _nominal(values, items, annotators, facet, weights, samples, seed) -> dict[str, Any]:
    raw = [[None if values[i].get(u) is None else nominal_label(values[i][u].get(facet)) for u in annotators] for i in items]
    ratings, labels = categorical.codes(raw)
    k = max(len(labels), 1)
    out: dict[str, Any] = {"kind": "nominal", "labels": [str(x) for x in labels], "metrics": {}}
    out["metrics"]["percent agreement"] = _interval(bootstrap(categorical.percent_agreement_stats(ratings), categorical.percent_agreement_from, weights=weights, samples=samples, seed=seed))
    out["metrics"]["Fleiss' kappa"] = _interval(bootstrap(categorical.fleiss_stats(ratings, k), categorical.fleiss_from, weights=weights, samples=samples, seed=seed))
    out["metrics"]["Krippendorff's alpha"] = _interval(bootstrap(categorical.alpha_stats(ratings, k), categorical.alpha_from, weights=weights, samples=samples, seed=seed))
    pairs = {}
    for (x, a), (y, b) in itertools.combinations(enumerate(annotators), 2):
        both = (ratings[:, x] >= 0) & (ratings[:, y] >= 0)
        if both.sum() >= 2:
            pairs[f"{a} / {b}"] = {"items": int(both.sum()), "Cohen's kappa": _nan_none(categorical.cohen_from(categorical.cohen_stats(ratings[:, x], ratings[:, y], k).sum(axis=0), k))}
    out["pairwise"] = pairs
    confusion = np.zeros((k, k), dtype=int)
    for row in ratings:
        given = [v for v in row if v >= 0]
        for p, q in itertools.permutations(given, 2):
            confusion[p, q] += 1
    out["confusion"] = confusion.tolist()  # symmetric counts of label pairs given to one item
    return out


def _given(values, i, annotators, facet) -> list[tuple[str, Any]]:
    return [(u, values[i][u].get(facet)) for u in annotators if u in values[i] and values[i][u].get(facet) is not None]


def _pair_scores(values, items, annotators, facet, score) -> tuple[list[float], dict[str, list[float]]]:
    """score(a, b) for every pair of annotators on every item: the per-item means and the scores by pair."""
    per_item, per_pair = [], defaultdict(list)
    for i in items:
        scores = []
        for (a, va), (b, vb) in itertools.combinations(_given(values, i, annotators, facet), 2):
            scores.append(score(va, vb))
            per_pair[f"{a} / {b}"].append(scores[-1])
        if scores:
            per_item.append(float(np.mean(scores)))
    return per_item, per_pair


def _add_mean(out, name, per_item, per_pair, weights, samples, seed) -> None:
    """The metric's bootstrapped mean over items, and its mean per annotator pair."""
    if not per_item:
        return
    w = weights if len(per_item) == weights.shape[1] else None
    out["metrics"][name] = _interval(bootstrap(mean_stats(np.array(per_item)), mean_from, weights=w, samples=samples, seed=seed))
    for pair, scores in per_pair.items():
        out["pairwise"].setdefault(pair, {"items": len(scores)})[name] = float(np.mean(scores))


def _pairwise(values, items, annotators, facet, kind, weights, samples, seed) -> dict[str, Any]:
    per_item, per_pair = _pair_scores(values, items, annotators, facet, lambda a, b: facet_score(kind, a, b))
    name = {"set": "Jaccard", "token_set": "Jaccard", "boxes": "IoU (Hungarian)"}[kind]
    out: dict[str, Any] = {"kind": kind, "metrics": {}, "items": len(per_item), "pairwise": {}}
    _add_mean(out, f"mean {name}", per_item, per_pair, weights, samples, seed)
    if kind == "boxes" and per_item:
        _, hits = _pair_scores(values, items, annotators, facet, boxes.accuracy_at)
        out["metrics"]["accuracy at IoU >= 0.5"] = {"estimate": float(np.mean([h for v in hits.values() for h in v]))}
    return out


def _soft(out, values, items, annotators, facet, embed, threshold, weights, samples, seed) -> None:
    """Add the soft-matched Jaccard of a set facet: texts pair up (optimal one-to-one matching)
    when their embeddings' cosine similarity reaches `threshold`."""
    name = f"mean soft Jaccard (similarity >= {threshold:g})"
    if embed is None:
        out["notes"] = [f"{name}: computed by the worker job (it needs the worker extra's MiniLM model)."]
        return
    texts = sorted({t for i in items for _, v in _given(values, i, annotators, facet) for t in v})
    if not texts:
        return
    index = {t: n for n, t in enumerate(texts)}
    vectors = np.asarray(embed(texts), dtype=float)  # each text embedded once for the whole report

    def similarity(a, b):
        return vectors[[index[t] for t in a]] @ vectors[[index[t] for t in b]].T

    per_item, per_pair = _pair_scores(values, items, annotators, facet, lambda a, b: sets.soft_jaccard(list(a), list(b), similarity, threshold))
    _add_mean(out, name, per_item, per_pair, weights, samples, seed)


def _with_consensus(values, items, facet) -> dict[str, float]:
    """Per annotator, the share of their labels equal to the item's strict-majority label."""
    hits: dict[str, list[bool]] = defaultdict(list)
    for i in items:
        given = {u: nominal_label(v.get(facet)) for u, v in values[i].items() if v.get(facet) is not None}
        if not given:
            continue
        label, count = Counter(given.values()).most_common(1)[0]
        if count * 2 <= len(given):
            continue  # no consensus on this item
        for u, value in given.items():
            hits[u].append(value == label)
    return {u: float(np.mean(h)) for u, h in hits.items()}


def store(session: Session, stage_id: int, report: dict[str, Any]) -> AgreementReport:
    row = AgreementReport(stage_id=stage_id, report=report)
    session.add(row)
    session.flush()
    return row


def latest(session: Session, stage_id: int) -> AgreementReport | None:
    return session.scalar(
        sa.select(AgreementReport).where(AgreementReport.stage_id == stage_id).order_by(AgreementReport.id.desc()).limit(1)
    )


def nominal_label(value: Any) -> Any:
    """A nominal facet's value as a label to count: scalars as they are, anything else by its repr."""
    return value if isinstance(value, (str, int, bool)) or value is None else repr(value)


def _nan_none(value) -> float | None:
    value = float(value)
    return None if np.isnan(value) else value


def pair_matrix(report: dict[str, Any], facet: str) -> tuple[list[str], list[list[float | None]], str]:
    """The facet's annotator x annotator agreement (Cohen's kappa, or mean Jaccard / IoU) for a heatmap."""
    names = report["annotators"]
    figures = report["facets"][facet]
    metric = "Cohen's kappa" if figures["kind"] == "nominal" else next(iter(figures["metrics"]), "")
    matrix: list[list[float | None]] = [[1.0 if a == b else None for b in names] for a in names]
    for key, cell in figures.get("pairwise", {}).items():
        a, b = key.split(" / ")
        value = cell.get(metric)
        if a in names and b in names:
            matrix[names.index(a)][names.index(b)] = matrix[names.index(b)][names.index(a)] = value
    return names, matrix, metric
