"""The report's figures as SVG coordinates for the quality page: one horizontal bar per figure on a 0-1
axis, its bootstrap interval as a whisker. Plain numbers and labels only: the template writes the SVG,
and its autoescaping keeps annotators' names and model names text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

COLOURS = {"shown": "#d95f02", "control": "#1b9e77", "probe": "#7570b3"}


def bars(rows: Sequence[tuple[str, str, dict[str, Any]]], *, width: int = 560, left: int = 230, row: int = 20) -> dict[str, Any]:
    """`rows`: (label, arm, figure) each; a figure without an estimate keeps its row, with no bar."""
    span = width - left - 20

    def x(value: float) -> float:
        return round(left + span * max(0.0, min(1.0, value)), 1)

    out = []
    for n, (label, arm, figure) in enumerate(rows):
        y = 8 + n * row
        est = figure.get("estimate")
        item = {"label": label, "y": y, "text_y": y + row * 0.65, "colour": COLOURS.get(arm, "#666"), "n": figure.get("n", 0),
                "estimate": est, "bar": None}
        if est is not None:
            item["bar"] = {"x": left, "width": round(x(est) - left, 1), "height": row - 6}
            if figure.get("low") is not None and figure.get("high") is not None:
                item["whisker"] = {"x1": x(figure["low"]), "x2": x(figure["high"]), "y": y + (row - 6) / 2}
        out.append(item)
    ticks = [{"x": x(t), "label": f"{t:g}"} for t in (0.0, 0.25, 0.5, 0.75, 1.0)]
    return {"width": width, "height": 8 + len(rows) * row + 18, "left": left, "axis_y": 8 + len(rows) * row, "rows": out,
            "ticks": ticks}


def annotator_chart(report: dict[str, Any]) -> dict[str, Any]:
    """Per annotator: drafts accepted unchanged when shown and when hidden, and probes caught."""
    rows = []
    for a in report["annotators"]:
        rows.append((f"{a['annotator']} · accepted, shown", "shown", a["acceptance"]["shown"]))
        rows.append((f"{a['annotator']} · accepted, hidden", "control", a["acceptance"]["control"]))
        rows.append((f"{a['annotator']} · probes caught", "probe", a["probe_catch"]))
    return bars(rows)


def shift_chart(report: dict[str, Any]) -> dict[str, Any]:
    """The stage's label distribution in each arm: each value's proportion, shown against control."""
    rows = []
    for facet, shift in report["overall"]["shift"]["labels"].items():
        counts = shift["counts"]
        if shift["chi_square"]["dof"] == 0:  # one value in both arms: nothing moved
            continue
        for value in sorted({v for c in counts.values() for v in c}):
            for arm in ("shown", "control"):
                total = sum(counts.get(arm, {}).values())
                share = counts.get(arm, {}).get(value, 0) / total if total else None
                rows.append((f"{facet} = {value} · {arm}", arm, {"estimate": share, "n": total}))
    return bars(rows)
