"""Agreement of two annotations, facet by facet: the one pairwise score reports and review order share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.agreement import boxes, sets


def facet_score(kind: str, a: Any, b: Any) -> float:
    """How far two values of one facet agree, in [0, 1]: equality for "nominal", Jaccard for
    "set" (texts) and "token_set" (token spans), mean matched IoU for "boxes"."""
    if kind == "nominal":
        return 1.0 if a == b else 0.0
    if a is None or b is None:
        return 1.0 if a is b else 0.0
    if kind == "set":
        return sets.jaccard(a, b)
    if kind == "token_set":
        return sets.token_set_jaccard([tuple(x) for x in a], [tuple(x) for x in b])
    if kind == "boxes":
        return boxes.mean_iou(a, b)
    raise ValueError(f"unknown facet kind {kind!r}")


def mean_agreement(facets: Mapping[str, str], a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """The mean facet score over the facets at least one of the two annotations speaks to
    (a facet both leave empty, None, says nothing); 1.0 when neither speaks to any."""
    scores = [facet_score(kind, a.get(name), b.get(name)) for name, kind in facets.items()
              if a.get(name) is not None or b.get(name) is not None]
    return sum(scores) / len(scores) if scores else 1.0
