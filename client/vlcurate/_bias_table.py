"""The draft-bias report (GET /stages/{id}/bias) as a table for the command lines (`vlcurate bias` and
`vlcurate-remote bias`): one row for the stage, one per draft kind and model version (with its prompt),
one per annotator; each figure as "estimate [low, high] n", each test as its p-value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

COLUMNS = (
    "scope", "group", "accepted (shown)", "accepted (hidden)", "edited (shown)", "probe catch",
    "gold (shown)", "gold (control)", "gold (probe)", "label shift p", "edit size p", "s/item (shown)", "s/item (control)",
)


def figure(value: Mapping[str, Any] | None, digits: int = 2) -> str:
    """{estimate, low, high, n} in words; "" where there is nothing to estimate from."""
    if not value or value.get("estimate") is None:
        return ""
    text = f"{value['estimate']:.{digits}f}"
    if value.get("low") is not None and value.get("high") is not None:
        text += f" [{value['low']:.{digits}f}, {value['high']:.{digits}f}]"
    return f"{text} n={value.get('n', 0)}"


def _p(value: float | None) -> str:
    return "" if value is None else f"{value:.3g}"


def _row(scope: str, group: str, figures: Mapping[str, Any]) -> list[str]:
    arms = figures.get("arms") or {}
    shift = figures.get("shift") or {}
    # The smallest p of the label facets' chi-square tests: a shift in any label shows.
    label_p = min((f["chi_square"]["p"] for f in (shift.get("labels") or {}).values()), default=None)
    return [
        scope, group,
        figure(figures.get("acceptance", {}).get("shown")), figure(figures.get("acceptance", {}).get("control")),
        figure(figures.get("edit_rate", {}).get("shown")), figure(figures.get("probe_catch")),
        *(figure((arms.get(arm) or {}).get("gold_agreement")) for arm in ("shown", "control", "probe")),
        _p(label_p), _p((shift.get("edit_size") or {}).get("p")),
        *(figure((arms.get(arm) or {}).get("time"), 1) for arm in ("shown", "control")),
    ]


def rows(report: Mapping[str, Any]) -> list[list[str]]:
    """The report's rows, in COLUMNS' order: the stage, each model version, each annotator."""
    out = [_row("stage", "", report["overall"])]
    for m in report["models"]:
        out.append(_row("model", f"{m['model']} (prompt {m['prompt_id']})" if m.get("prompt_id") else m["model"], m))
    out += [_row("annotator", a["annotator"], a) for a in report["annotators"]]
    return out


def settings_line(report: Mapping[str, Any]) -> str:
    return (f"control share {report['control_share']:g} (seed {report['arm_seed']}), probe share {report['probe_share']:g}; "
            f"95 % bootstrap intervals, {report['samples']} samples")


def text(title: str, report: Mapping[str, Any]) -> str:
    """The report as plain text: a title line, its settings, then one block per row (empty figures left out)."""
    lines = [title, settings_line(report)]
    for row in rows(report):
        lines.append(f"{row[0]} {row[1]}".rstrip() + ":")
        lines += [f"  {name}: {value}" for name, value in zip(COLUMNS[2:], row[2:]) if value]
    return "\n".join(lines)
