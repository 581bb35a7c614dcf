"""A draft evaluation as the API answers it, as Parquet rows per item, and as the page's bar chart."""

from __future__ import annotations

import io
import json
from typing import Any

from app.services.drafting.draft_eval import Evaluation
from app.services.quality.accuracy import PALETTE


def as_dict(evaluation: Evaluation) -> dict[str, Any]:
    """The evaluation as the API answers it (the per-item rows go to Parquet)."""
    return {
        "stage_id": evaluation.stage_id, "workflow": evaluation.workflow, "measure": evaluation.measure,
        "gold": evaluation.gold, "samples": evaluation.samples, "seed": evaluation.seed,
        "versions": [
            {
                **{k: getattr(v, k) for k in ("prompt_id", "draft_kind", "version", "drafter", "note", "items", "uncomparable",
                                              "accepted", "shown", "valid", "failed", "latency_p50_ms", "latency_p95_ms",
                                              "prompt_tokens", "completion_tokens", "accepted_share", "valid_share")},
                "figures": [vars(f) for f in v.figures],
            }
            for v in evaluation.versions
        ],
    }


def to_parquet(evaluation: Evaluation, where=None) -> bytes | None:
    """The per-item rows (item, version, draft and final as JSON text, score) as Parquet, written to
    `where` (a path or a binary file); without it, returned as bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = evaluation.rows
    table = pa.table({
        "item_id": pa.array([r.item_id for r in rows], pa.int64()),
        "external_id": pa.array([r.external_id for r in rows], pa.string()),
        "prompt_id": pa.array([r.prompt_id for r in rows], pa.int64()),
        "version": pa.array([r.version for r in rows], pa.int32()),
        "draft": pa.array([json.dumps(r.draft, ensure_ascii=False, sort_keys=True) for r in rows], pa.string()),
        "final": pa.array([json.dumps(r.final, ensure_ascii=False, sort_keys=True) for r in rows], pa.string()),
        "score": pa.array([r.score for r in rows], pa.float64()),
    })
    if where is not None:
        pq.write_table(table, where)
        return None
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def chart(evaluation: Evaluation, width: int = 640, bar: int = 22) -> dict[str, Any]:
    """The versions' figures as grouped bars with their intervals as whiskers, in SVG coordinates:
    one group per figure, one bar per version. The axis runs from min(0, lowest bound) to 1."""
    names = list(dict.fromkeys(f.name for v in evaluation.versions for f in v.figures))
    values = [x for v in evaluation.versions for f in v.figures for x in (f.estimate, f.low) if x is not None]
    floor = min([0.0, *values])
    left, top, group_gap = 150, 10, 12
    group = bar * max(len(evaluation.versions), 1) + group_gap
    height = top + group * max(len(names), 1) + 28
    span = width - left - 20

    def x(value: float) -> float:
        return round(left + span * (value - floor) / (1 - floor), 1)

    groups = []
    for g, name in enumerate(names):
        bars = []
        for n, v in enumerate(evaluation.versions):
            f = next((f for f in v.figures if f.name == name), None)
            if f is None or f.estimate is None:
                continue
            y = top + g * group + n * bar
            bars.append({
                "label": f"{v.draft_kind} v{v.version}", "estimate": f.estimate, "colour": PALETTE[n % len(PALETTE)],
                "x": min(x(0.0), x(f.estimate)), "width": round(abs(x(f.estimate) - x(0.0)), 1), "y": y, "height": bar - 4,
                "low": None if f.low is None else x(f.low), "high": None if f.high is None else x(f.high), "mid": y + (bar - 4) / 2,
            })
        groups.append({"name": name, "y": top + g * group + (group - group_gap) / 2, "bars": bars})
    ticks = [t for t in (-1.0, -0.5, 0.0, 0.5, 1.0) if t >= floor]
    return {
        "width": width, "height": height, "top": top, "bottom": height - 20, "groups": groups,
        "ticks": [{"value": t, "x": x(t)} for t in ticks], "zero": x(0.0),
        "legend": [{"label": f"{v.draft_kind} v{v.version}", "colour": PALETTE[n % len(PALETTE)]} for n, v in enumerate(evaluation.versions)],
    }
