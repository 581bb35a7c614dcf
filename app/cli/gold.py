"""Gold items and leaks: `gold import`, `gold accuracy`, `leaks`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import typer

from app.cli import remote
from app.cli.apps import app, gold_app
from app.cli.common import _fail, _sessions, console, err, transaction
from app.errors import DomainError


def _stage(session, project: str, stage: Optional[str]):
    from app.services.projects import projects

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
    server: Optional[str] = remote.SERVER,
    token: Optional[str] = remote.TOKEN,
) -> None:
    """Mark items as gold items of a stage with their correct answers (validated like annotations)."""
    if server:
        with remote.client(server, token) as api:
            st = _remote_stage(api, project, stage)
            n = api.import_gold(st.id, file).imported
        console.print(f"{n:,} gold items in stage '{st.name}'.")
        return
    from app.services.quality import gold

    settings, sessions = _sessions()
    try:
        with transaction(sessions) as session:
            st = _stage(session, project, stage)
            n = gold.import_answers(session, st.id, file.read_bytes(), actor_id=None)
    except DomainError as exc:
        _fail(exc.message, exc.errors)
    console.print(f"{n:,} gold items in stage '{st.name}'.")


def _remote_stage(api, project: str, stage: Optional[str]):
    """The stage named (by id or name) of a project the server has, or its first."""
    stages = api.settings(int(project) if project.isdigit() else project).stages
    chosen = [st for st in stages if stage is None or stage in (st.name, str(st.id))]
    if not chosen:
        _fail(f"Project '{project}' has no stage '{stage}'.")
    return chosen[0]


@gold_app.command("accuracy")
def gold_accuracy(
    project: str = typer.Argument(..., help="Project id or name."),
    stage: Optional[str] = typer.Option(None, help="The stage (id or name); default: the first."),
    as_json: bool = typer.Option(False, "--json", help="Print the full report as JSON."),
    server: Optional[str] = remote.SERVER,
    token: Optional[str] = remote.TOKEN,
) -> None:
    """Each annotator's accuracy on a stage's gold items, with bootstrap 95% intervals and flags."""
    from rich.table import Table

    if server:
        with remote.client(server, token) as api:
            report = api.gold_accuracy(_remote_stage(api, project, stage).id).model_dump()
    else:
        report = _local_accuracy(project, stage)
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


def _local_accuracy(project: str, stage: Optional[str]) -> dict:
    from app.services.quality import accuracy

    settings, sessions = _sessions()
    try:
        with transaction(sessions) as session:
            return accuracy.accuracy_report(session, _stage(session, project, stage).id)
    except DomainError as exc:
        _fail(exc.message, exc.errors)
    raise AssertionError("unreachable: _fail exits")


@contextmanager
def step_bar() -> Iterator:
    """A progress bar on stderr following a long report's steps: yields its (step, done, total) callback."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=True) as bar:
        task = bar.add_task("leaks", total=None)
        yield lambda step, done, total: bar.update(task, description=step, completed=done, total=total if total > 1 else None)


def find_leaks(sessions, settings, project_id: int, version: int | None = None) -> dict:
    """Make and store a split version's leak report in this process, as the worker's job does
    (hashing the images that have no hash yet first), with a progress bar."""
    from app.services.leaks import leaks
    from app.storage import make_storage

    with step_bar() as progress:
        return leaks.run(sessions, make_storage(settings), project_id, version, progress=progress)[1]


@app.command("leaks")
def leaks_cmd(
    project: str = typer.Argument(..., help="Project id or name."),
    version: Optional[int] = typer.Option(None, help="Split definition version (default: the newest)."),
    as_json: bool = typer.Option(False, "--json", help="Print the full report as JSON."),
    keep_together: bool = typer.Option(False, "--keep-together", help="Put each leaked group into one split (saves a new split version)."),
    server: Optional[str] = remote.SERVER,
    token: Optional[str] = remote.TOKEN,
) -> None:
    """Leakage and duplicates across and within a split version's splits (images and texts); exit 2 while leaks remain.
    With --server the server's worker makes the report (the newest split version's) and this follows its progress."""
    from app.services.leaks import leaks
    from app.services.projects import projects

    if server:
        if version is not None:
            _fail("Through --server the report is made for the newest split version (--version reads stored ones locally).")
        with remote.client(server, token) as api:
            report = api.leaks(int(project) if project.isdigit() else project, keep_together=keep_together).model_dump()
    else:
        settings, sessions = _sessions()
        try:
            with transaction(sessions) as session:
                target = projects.find_project(session, project).id
            report = find_leaks(sessions, settings, target, version)
            if keep_together and report["leaked_groups"]:
                with transaction(sessions) as session:
                    new = leaks.keep_together(session, target, report)
                report = find_leaks(sessions, settings, target, new.version)
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
