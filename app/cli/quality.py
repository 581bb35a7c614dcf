"""Quality: agreement reports and equivalence judgements."""

from __future__ import annotations

import json
from typing import Any, Optional

import typer

from app.cli import remote
from app.cli.apps import app
from app.cli.common import _fail, _sessions, console, transaction
from app.errors import DomainError


@app.command("agreement")
def agreement_cmd(
    project: str = typer.Argument(..., help="Project id or name."),
    stage: Optional[str] = typer.Option(None, help="Only this stage (id or name)."),
    as_json: bool = typer.Option(False, "--json", help="Print the full report as JSON."),
    samples: int = typer.Option(1000, min=0, help="Bootstrap samples for the 95% intervals."),
    seed: int = typer.Option(0, help="Bootstrap seed (same seed, same intervals)."),
    soft: bool = typer.Option(True, help="Soft-matched Jaccard of text sets with MiniLM (worker extra); --no-soft skips loading it."),
    server: Optional[str] = remote.SERVER,
    token: Optional[str] = remote.TOKEN,
) -> None:
    """Inter-annotator agreement per stage, with bootstrap confidence intervals (through --server: computed
    by the server, without the soft-matched Jaccard, which the worker's stored reports have)."""
    from rich.table import Table

    if server:
        reports = _remote_reports(project, stage, samples, seed, server, token)
    else:
        reports = _local_reports(project, stage, samples, seed, soft)
    if as_json:
        print(json.dumps(reports if stage is None else reports[0], indent=2, ensure_ascii=False))
        return
    for report in reports:
        table = Table(title=f"{report['stage']['name']} ({report['stage']['workflow']}): {report['items']} items with 2+ annotators")
        for column in ("facet", "metric", "estimate", "95% interval"):
            table.add_column(column)
        for facet, figures in report["facets"].items():
            for metric, ci in figures["metrics"].items():
                low, high = ci.get("low"), ci.get("high")
                interval = f"[{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
                estimate = ci["estimate"]
                table.add_row(facet, metric, "n/a" if estimate is None or estimate != estimate else f"{estimate:.3f}", interval)
        console.print(table)


@app.command("equivalence")
def equivalence_cmd(
    project: str = typer.Argument(..., help="Project id or name."),
    stage: Optional[str] = typer.Option(None, help="The stage whose free-text answers are judged (id or name); default: the only one that has them."),
    overlap: int = typer.Option(1, min=1, help="Judges per pair (when the judgement project is created)."),
) -> None:
    """Queue differently worded answer pairs (VisArgs conclusions) for reviewers' equivalence judgements."""
    from app.datasets import get_workflow
    from app.services.projects import projects
    from app.services.review import equivalence

    settings, sessions = _sessions()
    try:
        with transaction(sessions) as session:
            target = projects.find_project(session, project)
            chosen = [
                st for st in projects.stages_of(session, target.id)
                if (stage is None or stage in (st.name, str(st.id))) and get_workflow(st.workflow).equivalence
            ]
            if not chosen:
                _fail(f"Project '{target.name}' has no stage{f' {stage!r}' if stage else ''} with free-text answers to judge.")
            made = equivalence.create_judgements(session, chosen[0].id, overlap=overlap)
    except DomainError as exc:
        _fail(exc.message, exc.errors)
    console.print(
        f"{made['created']} new pairs to judge in project {made['project_id']} "
        f"({made['pairs']} pairs in all, {made['same_wording']} worded the same): /stages/{made['stage_id']}/annotate"
    )


def _remote_stages(api: Any, project: str, stage: Optional[str]) -> list[Any]:
    """The project's stages (all, or the one named by id or name) through the API."""
    stages = api.settings(int(project) if project.isdigit() else project).stages
    chosen = [st for st in stages if stage is None or stage in (st.name, str(st.id))]
    if not chosen:
        _fail(f"Project '{project}' has no stage '{stage}'.")
    return chosen


def _local_stages(session: Any, project: str, stage: Optional[str]) -> list[Any]:
    """The project's stages (all, or the one named by id or name) from the database."""
    from app.services.projects import projects

    try:
        target = projects.find_project(session, project)
    except DomainError as exc:
        _fail(exc.message)
    chosen = [st for st in projects.stages_of(session, target.id) if stage is None or stage in (st.name, str(st.id))]
    if not chosen:
        _fail(f"Project '{target.name}' has no stage '{stage}'.")
    return chosen


def _remote_reports(project: str, stage: Optional[str], samples: int, seed: int, server: str, token: Optional[str]) -> list[dict]:
    with remote.client(server, token) as api:
        return [api.agreement(st.id, samples=samples, seed=seed).model_dump(exclude_unset=True) for st in _remote_stages(api, project, stage)]


def _local_reports(project: str, stage: Optional[str], samples: int, seed: int, soft: bool) -> list[dict]:
    from app.services.review import agreement
    from app.worker.backends import soft_match_embedder

    settings, sessions = _sessions()
    with transaction(sessions) as session:
        reports = [
            agreement.stage_report(session, st.id, samples=samples, seed=seed, embed=soft_match_embedder(st.workflow) if soft else None)
            for st in _local_stages(session, project, stage)
        ]
    return reports


@app.command("bias")
def bias_cmd(
    project: str = typer.Argument(..., help="Project id or name."),
    stage: Optional[str] = typer.Option(None, help="Only this stage (id or name)."),
    as_json: bool = typer.Option(False, "--json", help="Print the full report as JSON (GET /api/v1/stages/{id}/bias)."),
    samples: int = typer.Option(1000, min=0, max=10_000, help="Bootstrap samples for the 95% intervals."),
    seed: int = typer.Option(0, min=0, help="Bootstrap seed (same seed, same intervals)."),
    server: Optional[str] = remote.SERVER,
    token: Optional[str] = remote.TOKEN,
) -> None:
    """What drafts do to annotators (docs/draft-bias.md): acceptance and edit rate with drafts shown and
    hidden, probe catch rate, gold agreement and time per item in each arm, the label and edit-size shift
    between arms with p-values; for the stage, each model and prompt version, each annotator."""
    from vlcurate import _bias_table

    if server:
        with remote.client(server, token) as api:
            reports = [(st.name, st.workflow, api.draft_bias(st.id, samples=samples, seed=seed)) for st in _remote_stages(api, project, stage)]
    else:
        from app.services.quality import bias

        settings, sessions = _sessions()
        with transaction(sessions) as session:
            reports = [(st.name, st.workflow, bias.stage_report(session, st.id, samples=samples, seed=seed))
                       for st in _local_stages(session, project, stage)]
    if as_json:
        print(json.dumps(reports[0][2] if stage else [r for _, _, r in reports], indent=2, ensure_ascii=False))
        return
    # Plain text, one block per group: the thirteen figures do not fit a terminal's width as table columns.
    print("\n\n".join(_bias_table.text(f"{name} ({workflow})", report) for name, workflow, report in reports))
