"""Seeded bootstrap confidence intervals over items, computed from per-item statistics.

A metric is sum-decomposable when it is a function `finish(S)` of S = sum of per-item rows
(every metric in `categorical`, and means of per-item scores). Resampling items with
replacement is then a weighted sum: W @ stats, where W[b, i] counts how often item i was drawn
in replicate b. One matrix product replaces a thousand recomputations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float
    samples: int
    seed: int

    def as_dict(self) -> dict:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "samples": self.samples, "seed": self.seed}


def resample_weights(n_items: int, samples: int, seed: int) -> np.ndarray:
    """samples x n_items: how many times each item is drawn in each bootstrap replicate."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_items, size=(samples, n_items))
    # One bincount over every replicate's draws, each offset into its own row: the counts np.add.at
    # gave, about 4x faster at 10,000 items x 1,000 samples (bench/agreement_bench.py times it).
    draws += (np.arange(samples, dtype=draws.dtype) * n_items)[:, None]
    return np.bincount(draws.ravel(), minlength=samples * n_items).reshape(samples, n_items).astype(np.float64)


def bootstrap(
    stats: np.ndarray,
    finish: Callable[[np.ndarray], np.ndarray],
    *,
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    weights: np.ndarray | None = None,
) -> Interval:
    """Percentile interval of finish(sum of resampled item rows); `weights` may be shared by metrics."""
    estimate = float(finish(stats.sum(axis=0)))
    if len(stats) == 0:
        return Interval(estimate, float("nan"), float("nan"), samples, seed)
    w = resample_weights(len(stats), samples, seed) if weights is None else weights
    values = np.asarray(finish(w @ stats), dtype=float)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return Interval(estimate, float("nan"), float("nan"), samples, seed)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return Interval(estimate, float(low), float(high), samples, seed)


def mean_stats(values: np.ndarray) -> np.ndarray:
    """Per-item rows [value, 1] whose sums give a mean: for per-item scores (Jaccard, IoU)."""
    values = np.asarray(values, dtype=float)
    return np.column_stack([values, np.ones_like(values)])


def mean_from(sums: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums[..., 0] / sums[..., 1]
