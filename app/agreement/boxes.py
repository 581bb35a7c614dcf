"""Agreement between box sets: IoU, optimal one-to-one matching (Hungarian), accuracy at IoU >= 0.5."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

Box = Mapping[str, float]  # {"startX", "startY", "w", "h"}


def iou(a: Box, b: Box) -> float:
    ax2, ay2 = a["startX"] + a["w"], a["startY"] + a["h"]
    bx2, by2 = b["startX"] + b["w"], b["startY"] + b["h"]
    iw = max(0.0, min(ax2, bx2) - max(a["startX"], b["startX"]))
    ih = max(0.0, min(ay2, by2) - max(a["startY"], b["startY"]))
    inter = iw * ih
    union = a["w"] * a["h"] + b["w"] * b["h"] - inter
    return inter / union if union > 0 else 0.0


def iou_matrix(a: Sequence[Box], b: Sequence[Box]) -> np.ndarray:
    return np.array([[iou(x, y) for y in b] for x in a], dtype=float).reshape(len(a), len(b))


def matched_ious(a: Sequence[Box], b: Sequence[Box]) -> list[float]:
    """IoUs of the one-to-one matching that maximises total IoU; unmatched boxes count as 0."""
    # Imported here: scipy.optimize is slow to import (docs/cli-startup.md), and every dataset's workflow
    # imports this module (app.datasets.workflow), also for commands that never match boxes.
    from scipy.optimize import linear_sum_assignment

    if not a or not b:
        return [0.0] * max(len(a), len(b))
    m = iou_matrix(a, b)
    rows, cols = linear_sum_assignment(-m)
    return list(m[rows, cols]) + [0.0] * (max(len(a), len(b)) - len(rows))


def mean_iou(a: Sequence[Box], b: Sequence[Box]) -> float:
    values = matched_ious(a, b)
    return float(np.mean(values)) if values else 1.0


def accuracy_at(a: Sequence[Box], b: Sequence[Box], threshold: float = 0.5) -> float:
    """Share of matched pairs with IoU >= threshold (over the larger set)."""
    values = matched_ious(a, b)
    return float(np.mean([v >= threshold for v in values])) if values else 1.0
