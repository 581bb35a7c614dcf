"""The ExpArt project page's figures: per model, the experts' mean score, the share of struck words
and each entity metric; and how each metric ranks explanations as the experts do (Spearman)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from statistics import fmean
from typing import Any

from app.agreement.entities import spearman_interval
from app.datasets.artwork.explanation import indices_of, metrics_of
from app.datasets.artwork.schema import EXPLANATION
from app.datasets.dataset import Chart
from app.datasets.wikido.tokenedits import tokenize

METRICS = (("EC", "entity_coverage"), ("EF1", "entity_f1"), ("ECooc", "entity_cooccurrence"))


def judged(finished: Iterable[Any]) -> list[dict[str, Any]]:
    """Per judged explanation: model, score, share of struck words, metrics."""
    rows = []
    for row in finished:
        final = (row.results or {}).get(EXPLANATION)
        if not final or row.data.get("model") is None:
            continue
        n = len(tokenize(row.data.get("explanation") or ""))
        rows.append({
            "model": row.data["model"], "score": final["score"],
            "struck": len(indices_of(final.get("struck"))) / n if n else 0.0,
            **metrics_of(row.data),
        })
    return rows


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return fmean(present) if present else None


def charts(finished: Iterable[Any]) -> list[Chart]:
    rows = judged(finished)
    if not rows:
        return []
    by_model: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_model[r["model"]].append(r)
    per_model = Chart(
        "Explanations by model",
        ("n", "mean score", "struck words", *(label for label, _ in METRICS)),
        [
            (model, (len(rs), _mean([r["score"] for r in rs]), _mean([r["struck"] for r in rs]),
                     *(_mean([r[key] for r in rs]) for _, key in METRICS)))
            for model, rs in sorted(by_model.items())
        ],
        kind="table",
        note="Mean expert score (1–5), mean share of struck words, and mean entity metrics of each model's explanations.",
    )
    # The same means drawn side by side, all on a 0–1 scale (the expert score divided by 5).
    bars = Chart(
        "Expert score and entity metrics by model (0–1)",
        ("expert score / 5", "struck words", *(label for label, _ in METRICS)),
        [
            (model, tuple(None if v is None else v / 5 if i == 0 else v for i, v in enumerate(values[1:])))
            for model, values in per_model.rows
        ],
        kind="bars",
    )
    correlations = []
    for label, key in METRICS:
        pairs = [(r["score"], r[key]) for r in rows if r[key] is not None]
        rc = spearman_interval([p[0] for p in pairs], [p[1] for p in pairs], samples=1000, seed=0)
        correlations.append((label, (rc.rho, rc.low, rc.high, float(rc.n))))
    rank = Chart(
        "Expert score vs. entity metrics (Spearman)",
        ("rho", "95% low", "95% high", "n"),
        correlations,
        kind="table",
        note="Spearman's rank correlation of the expert scores with each metric over judged explanations, "
             "with a seeded percentile bootstrap interval (1,000 resamples); a dash where it is undefined.",
    )
    return [bars, per_model, rank]
