"""Accuracy on gold items per annotator: the estimate with its bootstrap interval, the flag, the
accuracy by day, and the dashboard's trend chart of it."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy.orm import Session

from app.agreement import gold as scoring
from app.services.projects.projects import get_stage
from app.services.quality.gold import GoldAnswer, flagged, gold_item_ids, scored_answers, setting


def accuracy_report(session: Session, stage_id: int, *, samples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Per annotator: gold answers, accuracy with its bootstrap interval, flagged or not, and the
    accuracy by day (the dashboard's trend)."""
    stage = get_stage(session, stage_id)
    answers = scored_answers(session, stage)
    flags = flagged(session, stage_id)
    by_user: dict[tuple[int, str], list[GoldAnswer]] = defaultdict(list)
    for a in answers:
        by_user[(a.annotator_id, a.annotator)].append(a)
    annotators = {}
    for (uid, name), given in sorted(by_user.items(), key=lambda kv: kv[0][1]):
        ci = scoring.accuracy([a.score for a in given], samples=samples, seed=seed)
        days: dict[str, list[float]] = defaultdict(list)
        for a in given:
            days[a.day].append(a.score)
        annotators[name] = {
            "items": len(given),
            "accuracy": {"estimate": ci.estimate, "low": _finite(ci.low), "high": _finite(ci.high)},
            "flagged": uid in flags,
            "trend": [{"day": d, "accuracy": sum(v) / len(v), "items": len(v)} for d, v in sorted(days.items())],
        }
    return {
        "gold_items": len(gold_item_ids(session, stage_id)),
        "threshold": float(setting(stage, "gold_threshold")),
        "min_items": int(setting(stage, "gold_min_items")),
        "route_to_review": bool(setting(stage, "gold_route_to_review")),
        "samples": samples,
        "seed": seed,
        "annotators": annotators,
    }


def _finite(value: float) -> float | None:
    return None if value != value else value


def trend_chart(report: dict[str, Any], width: int = 480, height: int = 160) -> dict[str, Any]:
    """The per-annotator accuracy by day as SVG polylines on one shared day axis, with the threshold."""
    days = sorted({p["day"] for a in report["annotators"].values() for p in a["trend"]})
    left, top, right, bottom = 40, 10, 10, 24
    span_x, span_y = width - left - right, height - top - bottom

    def x(day: str) -> float:
        return left + (span_x * days.index(day) / (len(days) - 1) if len(days) > 1 else span_x / 2)

    def y(value: float) -> float:
        return top + span_y * (1 - value)

    lines = []
    for n, (name, a) in enumerate(report["annotators"].items()):
        points = [{"x": round(x(p["day"]), 1), "y": round(y(p["accuracy"]), 1), **p} for p in a["trend"]]
        lines.append({"name": name, "flagged": a["flagged"], "points": points, "colour": PALETTE[n % len(PALETTE)],
                      "path": " ".join(f"{p['x']},{p['y']}" for p in points)})
    return {
        "width": width, "height": height, "left": left, "right": width - right, "top": top, "bottom": height - bottom,
        "threshold_y": round(y(report["threshold"]), 1), "days": [{"day": d, "x": round(x(d), 1)} for d in days], "lines": lines,
    }


PALETTE = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666")
