"""The draft-bias report of a stage (app.bias.report) from its answers and their drafts' outcomes, as a
dict (JSON), flat figure rows (Parquet) and the quality page's chart; and an annotator's probe catch
rate where the stage acts on it (app.services.quality.gold flags them). Quiz answers count in neither."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.agreement import gold as scoring
from app.bias import arms, charts, report
from app.datasets import get_workflow
from app.datasets.workflow import StageConfig
from app.lifecycle import AssignmentStatus
from app.models import Stage
from app.services.projects.projects import get_stage

# Quiz answers (app.services.quality.qualification) are an annotator's first answers, given before they
# may work and always on gold items: they are left out of every figure, as they are of gold accuracy.
_NOT_QUIZ = "NOT EXISTS (SELECT 1 FROM quiz_answers q WHERE q.annotation_id = n.id)"
# Each annotator's newest answer to each item of the stage, submitted, with the gold answer where the
# item is a gold item of the stage; no quiz answer.
_ANSWERS = sa.text(
    f"""
    SELECT u.username, n.arm, n.payload, n.probe_caught, coalesce(n.active_seconds, n.seconds_spent) AS seconds, g.answer AS truth
    FROM (SELECT DISTINCT ON (assignment_id) * FROM annotations WHERE stage_id = :stage ORDER BY assignment_id, revision DESC) n
    JOIN assignments a ON a.id = n.assignment_id AND a.status = '{AssignmentStatus.submitted}'
    JOIN users u ON u.id = n.annotator_id
    LEFT JOIN gold_items g ON g.item_id = n.item_id AND g.stage_id = n.stage_id
    WHERE {_NOT_QUIZ}
    ORDER BY n.id
    """
)
_OUTCOMES = sa.text(
    f"""
    SELECT u.username, o.kind, o.model, o.model_version, s.prompt_id, o.shown, o.outcome, o.edit_distance
    FROM suggestion_outcomes o JOIN annotations n ON n.id = o.annotation_id JOIN users u ON u.id = n.annotator_id
    JOIN suggestions s ON s.id = o.suggestion_id
    WHERE o.stage_id = :stage AND {_NOT_QUIZ}
    ORDER BY o.id
    """
)


# Whether any answer of the stage was given without its drafts or with a probe (the settings may be off now).
_MEASURED = sa.text(f"SELECT EXISTS (SELECT 1 FROM annotations n WHERE stage_id = :stage AND arm IN ('control', 'probe') AND {_NOT_QUIZ})")


def _answers(session: Session, stage: Stage) -> list[report.Answer]:
    workflow = get_workflow(stage.workflow)
    nominal = [f for f, kind in workflow.facets.items() if kind == "nominal"]
    out = []
    for row in session.execute(_ANSWERS, {"stage": stage.id}).mappings():
        values = workflow.facet_values(row["payload"])
        truth = row["truth"]
        score = scoring.answer_score(workflow.facets, workflow.facet_values(truth), values) if truth is not None else None
        out.append(report.Answer(row["username"], row["arm"], truth is not None, {f: values.get(f) for f in nominal}, score,
                                 row["probe_caught"], row["seconds"]))
    return out


def _outcomes(session: Session, stage_id: int) -> list[report.Outcome]:
    return [
        report.Outcome(r["username"], f"{r['kind']} · {r['model']} {r['model_version']}".strip(), r["prompt_id"], r["shown"],
                       r["outcome"], r["edit_distance"])
        for r in session.execute(_OUTCOMES, {"stage": stage_id}).mappings()
    ]


def stage_report(session: Session, stage_id: int, *, samples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The stage's report with its settings: the control share and seed, the probe share."""
    stage = get_stage(session, stage_id)
    control, arm_seed, probes = arms.settings(stage.config)
    built = report.build(_answers(session, stage), _outcomes(session, stage_id), samples=samples, seed=seed)
    return {"stage_id": stage_id, "control_share": control, "arm_seed": arm_seed, "probe_share": probes, **built}


def figure_rows(built: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every figure of a report as one flat row: scope (stage, model, annotator), group, figure, estimate, low, high, n."""
    scopes = [("stage", "", built["overall"])]
    scopes += [("model", f"{m['model']} (prompt {m['prompt_id']})" if m["prompt_id"] else m["model"], m) for m in built["models"]]
    scopes += [("annotator", a["annotator"], a) for a in built["annotators"]]
    for scope, group, figures in scopes:
        for path, figure in _walk(figures, ""):
            yield {"scope": scope, "group": group, "figure": path, **{k: figure.get(k) for k in ("estimate", "low", "high", "n")}}


def _walk(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict) and "estimate" in node:
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, f"{path}.{key}" if path else str(key))


def to_parquet(built: dict[str, Any]) -> bytes:
    """The report's figure rows as Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = list(figure_rows(built))
    table = pa.table({
        "scope": pa.array([r["scope"] for r in rows], pa.string()),
        "group": pa.array([r["group"] for r in rows], pa.string()),
        "figure": pa.array([r["figure"] for r in rows], pa.string()),
        "estimate": pa.array([r["estimate"] for r in rows], pa.float64()),
        "low": pa.array([r["low"] for r in rows], pa.float64()),
        "high": pa.array([r["high"] for r in rows], pa.float64()),
        "n": pa.array([r["n"] for r in rows], pa.int64()),
    })
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def page_view(session: Session, stage: Stage, *, samples: int = 1000) -> dict[str, Any] | None:
    """The quality page's section: the report and its charts; None for a stage that measures nothing
    (no control arm, no probes, no answer given in an arm)."""
    control, _, probes = arms.settings(stage.config)
    if not control and not probes and not session.scalar(_MEASURED, {"stage": stage.id}):
        return None
    built = stage_report(session, stage.id, samples=samples)
    return {"report": built, "annotators": charts.annotator_chart(built), "shift": charts.shift_chart(built)}


# An annotator's newest answer to each probe of the stage, quiz answers aside: caught or missed.
_PROBES = sa.text(
    f"""
    SELECT count(*), count(*) FILTER (WHERE probe_caught) FROM (
        SELECT DISTINCT ON (assignment_id) id, probe_caught FROM annotations
        WHERE stage_id = :stage AND annotator_id = :user AND item_id IN (SELECT item_id FROM gold_items WHERE stage_id = :stage)
        ORDER BY assignment_id, revision DESC) n
    WHERE probe_caught IS NOT NULL AND {_NOT_QUIZ}
    """
)


def probe_catch(session: Session, stage: Stage, annotator_id: int) -> tuple[float, int] | None:
    """(catch rate, probes) when the stage acts on probes (`probe_action`) and the annotator caught fewer
    than `probe_threshold` of at least `probe_min_items` probes; else None."""
    if StageConfig.read(stage.config, "probe_action") == "none":
        return None
    n, caught = session.execute(_PROBES, {"stage": stage.id, "user": annotator_id}).one()
    if n < int(StageConfig.read(stage.config, "probe_min_items")) or caught / n >= float(StageConfig.read(stage.config, "probe_threshold")):
        return None
    return caught / n, n
