"""Gold items and leaks: `gold import`, `gold accuracy`, `leaks`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from app.cli import app, gold_app
from app.cli.common import _fail, _sessions, console, transaction
from app.errors import DomainError


def _stage(session, project: str, stage: Optional[str]):
    from app.services import projects

    target = projects.find_project(session, project)
    chosen = [st for st in projects.stages_of(session, target.id) if stage is None or stage in (st.name, str(st.id))]
    if not chosen:
        _fail(f"Project '{target.name}' has no stage '{stage}'.")
    return chosen[0]


@gold_app.command("import")
def gold_import(
    project: str = typer.Argument(..., help="Project id or name."),
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help='JSONL: {"id": "<external id>", "answer": {...}} per line.'),
    stage: Optional[str] = typer.Option(None, help="The stage (id or name); default: the first."),
) -> None:
    """Mark items as gold items of a stage with their correct answers (validated like annotations)."""
    from app.services import gold

    settings, sessions = _sessions()
    try:
        with transaction(sessions) as session:
            st = _stage(session, project, stage)
            n = gold.import_answers(session, st.id, file.read_bytes(), actor_id=None)
    except DomainError as exc:
        _fail(exc.message, exc.errors)
    console.print(f"{n:,} gold items in stage '{st.name}'.")


@gold_app.command("accuracy")
def gold_accuracy(
    project: str = typer.Argument(..., help="Project id or name."),
    stage: Optional[str] = typer.Option(None, help="The stage (id or name); default: the first."),
    as_json: bool = typer.Option(False, "--json", help="Print the full report as JSON."),
) -> None:
    """Each annotator's accuracy on a stage's gold items, with bootstrap 95% intervals and flags."""
    from rich.table import Table

    from app.services import gold

    settings, sessions = _sessions()
    try:
        with transaction(sessions) as session:
            report = gold.accuracy_report(session, _stage(session, project, stage).id)
    except DomainError as exc:
        _fail(exc.message, exc.errors)
    if as_json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return
    table = Table(title=f"{report['gold_items']} gold items; flagged below {report['threshold']:.2f} over >= {report['min_items']}")
    for column in ("annotator", "gold answers", "accuracy", "95% interval", "flag"):
        table.add_column(column)
    for name, a in report["annotators"].items():
        ci = a["accuracy"]
        interval = f"[{ci['low']:.3f}, {ci['high']:.3f}]" if ci["low"] is not None else ""
        table.add_row(name, str(a["items"]), f"{ci['estimate']:.3f}", interval, "flagged" if a["flagged"] else "")
    console.print(table)


@app.command("leaks")
def leaks_cmd(
    project: str = typer.Argument(..., help="Project id or name."),
    version: Optional[int] = typer.Option(None, help="Split definition version (default: the newest)."),
    as_json: bool = typer.Option(False, "--json", help="Print the full report as JSON."),
    keep_together: bool = typer.Option(False, "--keep-together", help="Put each leaked group into one split (saves a new split version)."),
) -> None:
    """Leakage and duplicates across and within a split version's splits (images and texts); exit 2 while leaks remain."""
    from app.services import leaks, projects
    from app.storage import make_storage

    settings, sessions = _sessions()
    storage = make_storage(settings)
    try:
        with transaction(sessions) as session:
            target = projects.find_project(session, project)
            report = leaks.compute(session, storage, target.id, version)
            leaks.store(session, target.id, report)
            if keep_together and report["leaked_groups"]:
                new = leaks.keep_together(session, target.id, report)
                report = leaks.compute(session, storage, target.id, new.version)
                leaks.store(session, target.id, report)
    except DomainError as exc:
        _fail(exc.message, exc.errors)
    if as_json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        console.print(f"Split version {report['version']}: {report['items']:,} items, {report['images']:,} images, {report['texts']:,} texts "
                      f"in {report['seconds']['total']:.1f} s.")
        for pair, n in report["leaks"].items():
            console.print(f"  {pair}: {n:,} leaked groups")
        console.print(f"  {report['leaked_groups']:,} leaked groups, {report['within_split_groups']:,} duplicate groups within one split.")
        for kind, how in report.get("matchers", {}).items():
            console.print(f"  {kind}: {how}", highlight=False)
    if report["leaked_groups"]:
        raise typer.Exit(2)
