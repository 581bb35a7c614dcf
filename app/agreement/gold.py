"""Scoring an answer against a gold item's truth, with the workflow's own comparison, and accuracy intervals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from app.agreement import boxes
from app.agreement.bootstrap import Interval, bootstrap, mean_from, mean_stats
from app.agreement.pairs import facet_score


def answer_score(facets: Mapping[str, str], truth: Mapping[str, Any], answer: Mapping[str, Any]) -> float:
    """How right an answer is, in [0, 1]: the lowest, over the facets the truth or the answer speaks to,
    of equality (nominal), Jaccard (set, token set), or for boxes the share matched at IoU >= 0.5 by the
    optimal one-to-one matching. The lowest, not the mean (as agreement takes): an answer is only as
    right as its weakest part, and a facet both agree on trivially (VisArgs' `discard`) must not make a
    wrong premise set half right. Both silent on every facet counts as right."""
    scores = []
    for name, kind in facets.items():
        t, a = truth.get(name), answer.get(name)
        if t is None and a is None:
            continue
        if kind == "boxes" and t is not None and a is not None:
            scores.append(boxes.accuracy_at(t, a))
        else:
            scores.append(facet_score(kind, t, a))
    return float(min(scores)) if scores else 1.0


def accuracy(scores: Sequence[float], *, samples: int = 1000, seed: int = 0) -> Interval:
    """The mean score over gold answers with its seeded percentile bootstrap interval (over answers)."""
    return bootstrap(mean_stats(np.asarray(scores, dtype=float)), mean_from, samples=samples, seed=seed)
