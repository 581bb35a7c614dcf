"""The finished dataset: split definitions and exports."""

from __future__ import annotations

import json
from typing import Optional

import typer

from app.cli import remote
from app.cli.apps import app
from app.cli.common import _fail, _sessions, console, err, transaction
from app.errors import DomainError


@app.command("splits")
def splits_cmd(
    project: str = typer.Argument(..., help="Project id or name."),
    ratios: Optional[str] = typer.Option(None, help="Split by ratio, e.g. train=0.8,validation=0.1,test=0.1."),
    counts: Optional[str] = typer.Option(None, help="Split by counts, e.g. train=700,test=300 (test=3000 alone: a fixed-size sample)."),
    rest: Optional[str] = typer.Option(None, help="With --counts: the split for the items past the counts."),
    seed: int = typer.Option(0, help="Seed of the random order."),
    held_out: Optional[str] = typer.Option(None, "--held-out", help="FIELD=V1,V2,...: items with these values form their own split."),
    held_out_split: str = typer.Option("test_ood", help="Name of the held-out split."),
    stratify: Optional[str] = typer.Option(None, help="With --ratios: cut each value of this field in the same proportions."),
    show: bool = typer.Option(False, "--list", help="List the saved versions instead of saving one."),
    server: Optional[str] = remote.SERVER,
    token: Optional[str] = remote.TOKEN,
) -> None:
    """Save a new version of the project's split definition and show its counts (or --list them)."""
    from rich.table import Table

    left, config = 0, {}
    if not show:
        from app.services.exports import splits

        try:
            config = splits.config_from_text(
                seed=seed, ratios=ratios, counts=counts, rest=rest, stratify=stratify, held_out=held_out, held_out_split=held_out_split,
            )
        except DomainError as exc:
            _fail(exc.message, exc.errors)
    if server:
        with remote.client(server, token) as api:
            target = api.project(int(project) if project.isdigit() else project)
            rows = [(d.version, d.counts, d.config) for d in (api.splits(target.id) if show else [api.save_splits(target.id, config)])]
        name = target.name
    else:
        name, rows, left = _splits_here(project, config, show)
    table = Table(title=f"Splits of {name}")
    for column in ("version", "counts", "config"):
        table.add_column(column)
    for version, found, cfg in rows:
        table.add_row(str(version), ", ".join(f"{k} {v:,}" for k, v in found.items()), json.dumps(cfg, ensure_ascii=False))
    console.print(table)
    if not show and left:
        console.print(f"{left:,} finished items are in no split (past the counts).")


def _splits_here(project: str, config: dict, show: bool) -> tuple[str, list[tuple], int]:
    """On this machine's database: the project's name, its saved versions (or the one saved now) as
    (version, counts, config), and how many finished items the new version leaves in no split."""
    from app.services.exports import splits
    from app.services.projects import projects

    settings, sessions = _sessions()
    left = 0
    try:
        with transaction(sessions) as session:
            target = projects.find_project(session, project)
            if show:
                rows = [(d.version, d.ordered_counts, d.config) for d in splits.definitions(session, target.id)]
            else:
                d = splits.save_definition(session, target.id, config)
                rows = [(d.version, d.ordered_counts, d.config)]
                left = splits.unassigned(session, d)
    except DomainError as exc:
        _fail(exc.message, exc.errors)
    return target.name, rows, left


@app.command("export")
def export_cmd(
    project: str = typer.Argument(..., help="Project id or name."),
    fmt: str = typer.Option(..., "--format", help="published, jsonl, parquet or coco."),
    out: str = typer.Option(..., "--out", help="A directory, or s3://bucket/prefix."),
    version: Optional[int] = typer.Option(None, help="Split definition version (default: the newest)."),
    no_splits: bool = typer.Option(False, "--no-splits", help="Ignore split definitions: one split, 'all'."),
    server: Optional[str] = remote.SERVER,
    token: Optional[str] = remote.TOKEN,
    no_leaks: bool = typer.Option(False, "--no-leaks", help="Refuse to export while the split version has leaked duplicate groups."),
    gold: bool = typer.Option(False, "--gold", help="Also write the stages' gold items (id, stage, record, answer) to gold.jsonl; never in the data files."),
) -> None:
    """Export the project's finished items in a format, split by its split definition, with a manifest.
    With --server the server's worker writes it and it is downloaded into the directory --out names."""
    if server:
        if out.startswith("s3://"):
            _fail("Through --server, --out is a local directory the export is downloaded to.")
        if no_leaks:
            _fail("--no-leaks checks the database directly; through --server, run `vlcurate leaks` on the server first.")
        with remote.client(server, token) as api:
            folder = api.export(int(project) if project.isdigit() else project, fmt, out, splits=not no_splits, version=version, gold=gold)
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        counts = ", ".join(f"{k} {v:,}" for k, v in manifest["splits"].items())
        console.print(f"Exported {counts} to {folder} ({len(manifest['files'])} files, manifest.json).")
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from app.services.exports import export, targets
    from app.services.projects import projects
    from app.storage import make_storage

    settings, sessions = _sessions()
    try:
        target = targets.check_target(out, directories=True)
        if not no_splits:
            _leak_check(sessions, settings, project, version, refuse=no_leaks)
        with transaction(sessions) as session:
            row = export.create_export(
                session, projects.find_project(session, project).id, fmt, settings=settings,
                version=version, use_splits=not no_splits, target=target, gold=gold,
            )
            export_id = row.id
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err) as bar:
            task = bar.add_task(f"export {export_id} ({fmt})", total=None)
            manifest = export.run_export(sessions, make_storage(settings), settings, export_id, lambda d, t: bar.update(task, completed=d, total=t))
    except DomainError as exc:
        _fail(exc.message, exc.errors)
    counts = ", ".join(f"{k} {v:,}" for k, v in manifest["splits"].items())
    gold_note = f", {manifest['gold_items']:,} gold items in gold.jsonl" if "gold_items" in manifest else ""
    console.print(f"Exported {counts}{gold_note} to {target} ({len(manifest['files'])} files, manifest.json).")


def _leak_check(sessions, settings, project: str, version: int | None, *, refuse: bool) -> None:
    """Warn (or with --no-leaks refuse) while the split version has groups of duplicates across splits."""
    from app.cli.gold import find_leaks
    from app.services.projects import projects

    with transaction(sessions) as session:
        target = projects.find_project(session, project)
    try:
        report = find_leaks(sessions, settings, target.id, version)
    except DomainError:
        return  # no split version: nothing can leak
    if report["leaked_groups"]:
        pairs = ", ".join(f"{k}: {v}" for k, v in report["leaks"].items())
        if refuse:
            _fail(f"Split version {report['version']} has {report['leaked_groups']} leaked duplicate groups ({pairs}); "
                  f"see `vlcurate leaks {project}` (--keep-together fixes them).")
        err.print(f"[yellow]Warning:[/] split version {report['version']} has {report['leaked_groups']} leaked duplicate groups ({pairs}).")
