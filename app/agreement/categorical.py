"""Agreement on categorical labels: percent agreement, Cohen's and Fleiss' kappa, Krippendorff's alpha.

Pure numpy; no database or web imports. Ratings are an items x raters array of label codes
(non-negative ints) with -1 for a missing rating; `codes()` turns any labels into that form.

Every metric is written as sums of per-item statistics (`*_stats`) and a finishing function of
those sums (`*_from`), so that a bootstrap can resample items by weighting the per-item rows
(`bootstrap.py`) instead of recomputing from scratch a thousand times.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

MISSING = -1


def codes(ratings: Sequence[Sequence[Hashable | None]]) -> tuple[np.ndarray, list]:
    """Map labels to 0..k-1 (sorted by their text, so label names do not matter) and None to -1."""
    labels = sorted({v for row in ratings for v in row if v is not None}, key=lambda v: (str(type(v)), str(v)))
    index = {v: i for i, v in enumerate(labels)}
    arr = np.array([[MISSING if v is None else index[v] for v in row] for row in ratings], dtype=np.int64)
    return arr.reshape(len(ratings), -1), labels


def category_counts(ratings: np.ndarray, k: int | None = None) -> np.ndarray:
    """items x categories: how many raters gave each item each label."""
    k = int(ratings.max()) + 1 if k is None else k
    k = max(k, 1)
    n_items = ratings.shape[0]
    counts = np.zeros((n_items, k), dtype=np.float64)
    rows, cols = np.nonzero(ratings >= 0)
    np.add.at(counts, (rows, ratings[rows, cols]), 1)
    return counts


# -- percent agreement ---------------------------------------------------------------------------


def percent_agreement_stats(ratings: np.ndarray) -> np.ndarray:
    """Per item: (agreeing rater pairs, rater pairs). Items with fewer than two ratings add nothing."""
    counts = category_counts(ratings)
    n = counts.sum(axis=1)
    return np.stack([(counts * (counts - 1)).sum(axis=1), n * (n - 1)], axis=1)


def percent_agreement_from(sums: np.ndarray) -> np.ndarray:
    return np.divide(sums[..., 0], sums[..., 1], out=np.full(sums[..., 0].shape, np.nan), where=sums[..., 1] > 0)


def percent_agreement(ratings: np.ndarray) -> float:
    """Share of agreeing pairs among all pairs of ratings of the same item."""
    return float(percent_agreement_from(percent_agreement_stats(ratings).sum(axis=0)))


# -- Cohen's kappa (two raters) -------------------------------------------------------------------


def cohen_stats(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """Per item, the flattened k x k confusion cell it falls in (items missing either rating: zeros)."""
    both = (a >= 0) & (b >= 0)
    stats = np.zeros((len(a), k * k))
    stats[np.nonzero(both)[0], (a * k + b)[both]] = 1
    return stats


def cohen_from(confusion_flat: np.ndarray, k: int) -> np.ndarray:
    m = confusion_flat.reshape(*confusion_flat.shape[:-1], k, k)
    n = m.sum(axis=(-1, -2))
    observed = np.trace(m, axis1=-2, axis2=-1)
    expected = (m.sum(axis=-1) * m.sum(axis=-2)).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        po, pe = observed / n, expected / n**2
        return np.where(pe < 1, (po - pe) / (1 - pe), np.where(po == 1, 1.0, np.nan))


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float:
    """Cohen's kappa of two raters over the items both rated."""
    a, b = np.asarray(a), np.asarray(b)
    k = int(max(a.max(initial=0), b.max(initial=0))) + 1
    return float(cohen_from(cohen_stats(a, b, k).sum(axis=0), k))


# -- Fleiss' kappa ---------------------------------------------------------------------------------


def fleiss_stats(ratings: np.ndarray, k: int | None = None) -> np.ndarray:
    """Per item: [sum_j n_ij(n_ij - 1), n_i(n_i - 1), n_i, n_i1 .. n_ik] over items with 2+ ratings."""
    counts = category_counts(ratings, k)
    n = counts.sum(axis=1)
    keep = (n >= 2)[:, None]
    return np.where(keep, np.column_stack([(counts * (counts - 1)).sum(axis=1), n * (n - 1), n, counts]), 0.0)


def fleiss_from(sums: np.ndarray, n_items: np.ndarray | None = None) -> np.ndarray:
    """Fleiss' kappa from summed item statistics (raters per item may vary: the mean P_i is
    weighted by pairs, which equals Fleiss' formula when every item has the same number of raters)."""
    agree, pairs, total, per_cat = sums[..., 0], sums[..., 1], sums[..., 2], sums[..., 3:]
    with np.errstate(invalid="ignore", divide="ignore"):
        p_bar = agree / pairs
        p_j = per_cat / total[..., None]
        p_e = (p_j**2).sum(axis=-1)
        return np.where(p_e < 1, (p_bar - p_e) / (1 - p_e), np.where(p_bar == 1, 1.0, np.nan))


def fleiss_kappa(ratings: np.ndarray) -> float:
    return float(fleiss_from(fleiss_stats(ratings).sum(axis=0)))


# -- Krippendorff's alpha (nominal, missing allowed) ---------------------------------------------------


def alpha_stats(ratings: np.ndarray, k: int | None = None) -> np.ndarray:
    """Per item, its flattened k x k coincidence matrix: o_cc' = sum n_c n_c' (minus n_c on the diagonal) / (m_u - 1)."""
    counts = category_counts(ratings, k)
    m = counts.sum(axis=1)
    pairable = m >= 2
    outer = counts[:, :, None] * counts[:, None, :]
    idx = np.arange(counts.shape[1])
    outer[:, idx, idx] -= counts
    denom = np.where(pairable, m - 1, 1)[:, None, None]
    coinc = np.where(pairable[:, None, None], outer / denom, 0.0)
    return coinc.reshape(len(counts), -1)


def alpha_from(coincidence_flat: np.ndarray) -> np.ndarray:
    k = int(round(np.sqrt(coincidence_flat.shape[-1])))
    o = coincidence_flat.reshape(*coincidence_flat.shape[:-1], k, k)
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    observed_disagreement = n - np.trace(o, axis1=-2, axis2=-1)
    expected_disagreement = (n**2 - (n_c**2).sum(axis=-1)) / np.where(n > 1, n - 1, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected_disagreement > 0, 1 - observed_disagreement / expected_disagreement,
                        np.where(observed_disagreement == 0, 1.0, np.nan))


def krippendorff_alpha(ratings: np.ndarray) -> float:
    """Krippendorff's alpha for nominal data; missing ratings (-1) are allowed."""
    return float(alpha_from(alpha_stats(ratings).sum(axis=0)))
