"""The report's statistics over plain numbers: means and proportions with seeded bootstrap intervals,
the difference of two groups' means with its interval, a chi-square test of a label distribution
against the arm, and a permutation test of two groups' means. numpy and scipy only."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from app.agreement.bootstrap import bootstrap, mean_from, mean_stats, resample_weights

LEVEL = 0.95


@dataclass(frozen=True)
class Figure:
    """An estimate with its bootstrap interval (None where there is nothing to estimate from) and its count."""

    estimate: float | None
    low: float | None
    high: float | None
    n: int

    def as_dict(self) -> dict:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n}


def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def mean(values: Sequence[float], *, samples: int = 1000, seed: int = 0) -> Figure:
    """The mean (a proportion, for 0/1 values) with its percentile bootstrap interval over the values."""
    if not len(values):
        return Figure(None, None, None, 0)
    ci = bootstrap(mean_stats(np.asarray(values, dtype=float)), mean_from, samples=samples, seed=seed, level=LEVEL)
    return Figure(_finite(ci.estimate), _finite(ci.low), _finite(ci.high), len(values))


def difference(a: Sequence[float], b: Sequence[float], *, samples: int = 1000, seed: int = 0) -> Figure:
    """mean(a) - mean(b) with a percentile bootstrap interval, each group resampled on its own."""
    if not len(a) or not len(b):
        return Figure(None, None, None, len(a) + len(b))
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if samples <= 0:
        return Figure(float(x.mean() - y.mean()), None, None, len(x) + len(y))
    wa, wb = resample_weights(len(x), samples, seed), resample_weights(len(y), samples, seed + 1)
    replicates = wa @ x / len(x) - wb @ y / len(y)
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return Figure(float(x.mean() - y.mean()), float(low), float(high), len(x) + len(y))


def chi_square(counts: Mapping[str, Mapping[str, int]]) -> dict:
    """Independence of a label's distribution from the arm: `counts[arm][label]`. Labels no arm gave are
    left out; with fewer than two arms or two labels there is nothing to test (p = 1)."""
    rows = [r for r in counts.values() if sum(r.values())]
    labels = sorted({k for r in rows for k, v in r.items() if v})
    if len(rows) < 2 or len(labels) < 2:
        return {"statistic": 0.0, "dof": 0, "p": 1.0}
    table = np.array([[r.get(k, 0) for k in labels] for r in rows], dtype=float)
    from scipy import stats as scipy_stats  # here: scipy.stats takes about a second to import, and only the report needs it

    statistic, p, dof, _ = scipy_stats.chi2_contingency(table, correction=False)
    return {"statistic": float(statistic), "dof": int(dof), "p": float(p)}


def permutation_p(a: Sequence[float], b: Sequence[float], *, samples: int = 2000, seed: int = 0) -> float | None:
    """Two-sided p-value of mean(a) - mean(b) under random relabelling of the pooled values (seeded),
    with the observed split counted among the permutations; None when a group is empty."""
    if not len(a) or not len(b):
        return None
    pooled = np.concatenate([np.asarray(a, dtype=float), np.asarray(b, dtype=float)])
    observed = abs(float(np.mean(a)) - float(np.mean(b)))
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((samples, len(pooled))), axis=1)
    shuffled = pooled[order]
    diffs = np.abs(shuffled[:, : len(a)].mean(axis=1) - shuffled[:, len(a):].mean(axis=1))
    return float((1 + np.sum(diffs >= observed - 1e-12)) / (samples + 1))
