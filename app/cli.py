"""The `vlcurate` command line (typer): serve, worker, db, demo, user, token, project, import, suggest."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)

from app.db import database_url, get_engine, session_factory, transaction
from app.errors import DomainError
from app.settings import get_settings

app = typer.Typer(help="vlcurate: curate vision-language datasets with humans in the loop.", no_args_is_help=True)
db_app = typer.Typer(help="Database schema (Alembic migrations).", no_args_is_help=True)
user_app = typer.Typer(help="User accounts.", no_args_is_help=True)
token_app = typer.Typer(help="API tokens for /api/v1.", no_args_is_help=True)
project_app = typer.Typer(help="Projects.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(user_app, name="user")
app.add_typer(token_app, name="token")
app.add_typer(project_app, name="project")

console = Console()
err = Console(stderr=True)


def _fail(message: str, errors: list[str] | None = None) -> None:
    err.print(f"[bold red]Error:[/] {message}", highlight=False, markup=True)
    for e in errors or []:
        err.print(f"  - {e}", highlight=False, markup=False)
    raise typer.Exit(1)


def _sessions():
    settings = get_settings()
    from app.migrate import check_current

    url = database_url(settings)
    if not check_current(url):
        _fail("The database schema is not up to date: run `vlcurate db upgrade` first.")
    return settings, session_factory(get_engine(settings))


@db_app.command("upgrade")
def db_upgrade(revision: str = typer.Argument("head", help="Target revision.")) -> None:
    """Apply migrations up to REVISION (default: the newest)."""
    from app.migrate import upgrade

    upgrade(database_url(get_settings()), revision)
    console.print("Database schema is up to date.")


@db_app.command("downgrade")
def db_downgrade(revision: str = typer.Argument(..., help="Target revision, e.g. -1 or base.")) -> None:
    """Revert migrations down to REVISION."""
    from app.migrate import downgrade

    downgrade(database_url(get_settings()), revision)
    console.print(f"Database schema downgraded to {revision}.")


@db_app.command("revision")
def db_revision(message: str = typer.Argument(..., help="What the migration changes.")) -> None:
    """Write a new migration from the difference between the models and the database."""
    from app.migrate import revision

    revision(database_url(get_settings()), message)


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, help="Port to listen on."),
    workers: int = typer.Option(1, help="Worker processes."),
) -> None:
    """Upgrade the database and serve the web app and API."""
    import uvicorn

    from app.migrate import upgrade
    from app.services.users import ensure_first_admin

    settings = get_settings()
    upgrade(database_url(settings))
    with transaction(session_factory(get_engine(settings))) as session:
        first = ensure_first_admin(session)
    if first:
        console.print(
            f"[bold]First start:[/] created user [bold]{first[0]}[/] with one-time password "
            f"[bold]{first[1]}[/] (you choose a new one at first login). It is not shown again."
        )
    console.print(f"vlcurate on http://{host}:{port}")
    uvicorn.run("app.main:create_app", factory=True, host=host, port=port, workers=workers, proxy_headers=False)


@app.command()
def demo() -> None:
    """Create demo accounts and projects (images are drawn locally). Safe to run again."""
    from app.migrate import upgrade
    from app.services.demo import load_demo
    from app.storage import make_storage

    settings = get_settings()
    upgrade(database_url(settings))
    with transaction(session_factory(get_engine(settings))) as session:
        result = load_demo(session, settings, make_storage(settings))
    for name in result.projects:
        console.print(f"Created project [bold]{name}[/]")
    console.print("Demo accounts (passwords are new on every `vlcurate demo`):")
    for username, role, password in result.accounts:
        console.print(f"  {username:<12} {role:<10} password: {password}", highlight=False)


@user_app.command("create")
def user_create(
    username: str,
    role: str = typer.Option("annotator", help="annotator, reviewer or admin."),
    password_stdin: bool = typer.Option(False, "--password-stdin", help="Read the password from standard input."),
) -> None:
    """Create a user. Without --password-stdin a one-time password is printed."""
    from app import security
    from app.services import users

    settings, sessions = _sessions()
    if password_stdin:
        password, one_time = sys.stdin.readline().rstrip("\n"), False
    else:
        password, one_time = security.new_password(), True
    try:
        with transaction(sessions) as session:
            user = users.create_user(session, username, role, password, must_change_password=one_time)
            user_id = user.id
    except DomainError as exc:
        _fail(exc.message, exc.errors)
    console.print(f"Created {role} [bold]{username}[/] (id {user_id}).")
    if one_time:
        console.print(f"One-time password: {password}", highlight=False)


@token_app.command("create")
def token_create(username: str, name: str = typer.Option("", help="A label for the token.")) -> None:
    """Create an API token for USERNAME and print it (it is shown only once)."""
    from app.services import users

    settings, sessions = _sessions()
    try:
        with transaction(sessions) as session:
            _, plain = users.create_token(session, users.user_by_name(session, username), name)
    except DomainError as exc:
        _fail(exc.message)
    print(plain)


@token_app.command("revoke")
def token_revoke(token_id: int) -> None:
    """Revoke the API token with id TOKEN_ID."""
    from app.services import users

    settings, sessions = _sessions()
    try:
        with transaction(sessions) as session:
            users.revoke_token(session, token_id, actor=None)
    except DomainError as exc:
        _fail(exc.message)
    console.print(f"Token {token_id} revoked.")


@project_app.command("create")
def project_create(
    name: str,
    workflow: list[str] = typer.Option(..., "--workflow", help="Workflow of a stage; repeat for a pipeline."),
    overlap: int = typer.Option(1, help="Annotators per item in each stage."),
    sample: Optional[int] = typer.Option(None, help="Give OVERLAP annotators only to a random sample of this many items; one to the rest."),
    sample_seed: int = typer.Option(0, help="Seed of the agreement sample."),
    lease_seconds: int = typer.Option(900, help="How long a claimed item stays reserved."),
    config: Optional[str] = typer.Option(None, help="Stage configuration as JSON (applies to every stage)."),
    description: str = typer.Option("", help="Shown on the project page."),
) -> None:
    """Create a project and print its id."""
    from app.services import projects

    settings, sessions = _sessions()
    if sample is not None and sample < 1:
        _fail("--sample is a number of items, 1 or more.")
    try:
        stage_config = json.loads(config) if config else {}
    except json.JSONDecodeError as exc:
        _fail(f"--config is not valid JSON: {exc.msg}")
    try:
        specs = [
            projects.StageSpec(
                workflow=w, overlap=overlap, lease_seconds=lease_seconds, config=stage_config,
                sample_size=sample, sample_seed=sample_seed,
            )
            for w in workflow
        ]
        with transaction(sessions) as session:
            project = projects.create_project(session, name, specs, description=description)
            project_id = project.id
    except DomainError as exc:
        _fail(exc.message, exc.errors)
    print(project_id)


@app.command("import")
def import_cmd(
    project: str = typer.Argument(..., help="Project id or name."),
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="JSONL, JSON array or CSV."),
    images: Optional[Path] = typer.Option(
        None, exists=True, help="Directory or zip holding the images (default: the file's directory)."
    ),
) -> None:
    """Import items into PROJECT; all or nothing."""
    from app.services import imports, projects
    from app.storage import make_storage

    settings, sessions = _sessions()
    storage = make_storage(settings)
    if images is not None and images.is_file():
        source = imports.ImageSource(settings, storage, zip_path=images)
    else:
        source = imports.ImageSource(settings, storage, base=images or file.parent)
    columns = (TextColumn("{task.description:<10}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn())
    try:
        with Progress(*columns, console=err, transient=False) as bar:
            tasks: dict[str, int] = {}

            def progress(phase: str, done: int, total: int) -> None:
                if phase not in tasks:
                    tasks[phase] = bar.add_task(phase, total=total)
                bar.update(tasks[phase], completed=done, total=total)

            with transaction(sessions) as session:
                target = projects.find_project(session, project)
                result = imports.import_items(
                    session,
                    target.id,
                    file.read_bytes(),
                    file.name,
                    settings=settings,
                    storage=storage,
                    images=source,
                    progress=progress,
                )
    except DomainError as exc:
        _fail(exc.message, exc.errors)
    finally:
        source.close()
    console.print(f"Imported {result.created:,} items ({result.images:,} images, {result.new_images:,} new).")


@app.command()
def worker(
    concurrency: int = typer.Option(1, min=1, help="Jobs run at once (model jobs are best run one at a time)."),
    queues: Optional[str] = typer.Option(None, help="Comma-separated queues (default: suggest,maintenance,export)."),
) -> None:
    """Run background jobs: suggestions, and the reconcile job that catches up on missing work."""
    from app.datasets import producers
    from app.worker import backends, jobs

    settings, _ = _sessions()
    jobs.configure(settings)
    names = [q.strip() for q in (queues or ",".join(jobs.QUEUES)).split(",") if q.strip()]
    console.print(f"Worker on queues {', '.join(names)}; device {backends.device()}.")
    for kind in sorted(producers()):
        why = jobs.unavailable(kind, settings)
        console.print(f"  {kind}: {'ready' if why is None else 'unavailable — ' + why}", highlight=False)
    recovered = jobs.recover_stalled(settings)
    if recovered:
        console.print(f"Re-queued {recovered} jobs whose worker had stopped.")
    jobs.make_app(settings).run_worker(queues=names, concurrency=concurrency, wait=True, install_signal_handlers=True)


@app.command()
def suggest(
    project: str = typer.Argument(..., help="Project id or name."),
    stage: Optional[str] = typer.Option(None, help="Only this stage (id or name)."),
    kind: Optional[str] = typer.Option(None, help="Only this suggestion kind, e.g. colorswap.itm."),
    wait: bool = typer.Option(True, help="Follow the jobs with a progress bar until they finish."),
) -> None:
    """Enqueue suggestion jobs for the items that lack them, and follow their progress."""
    import time

    import sqlalchemy as sa

    from app.models import JobRun, Stage
    from app.services import projects
    from app.worker import jobs

    settings, sessions = _sessions()
    jobs.configure(settings)
    with transaction(sessions) as session:
        try:
            target = projects.find_project(session, project)
        except DomainError as exc:
            _fail(exc.message)
        stage_id = None
        if stage is not None:
            found = session.scalar(
                sa.select(Stage.id).where(
                    Stage.project_id == target.id, (Stage.name == stage) | (Stage.id == (int(stage) if stage.isdigit() else -1))
                )
            )
            if found is None:
                _fail(f"Project '{target.name}' has no stage '{stage}'.")
            stage_id = found
        batches = jobs.missing_batches(session, settings, project_id=target.id, stage_id=stage_id, kind=kind, available_only=False)
    if not batches:
        console.print("Every item already has its suggestions; nothing to do.")
        return
    for k in sorted({b.kind for b in batches}):
        why = jobs.unavailable(k, settings)
        if why:
            err.print(f"[yellow]Warning:[/] {k} cannot run here ({why}); its jobs will fail until it can.", highlight=False)
    app_ = jobs.make_app(settings)
    with app_.open():
        job_ids = jobs.defer_batches(app_, batches)
    total = sum(len(b.item_ids) for b in batches)
    console.print(f"Enqueued {len(job_ids)} jobs for {total:,} items; `vlcurate worker` runs them.")
    if not wait or not job_ids:
        return
    columns = (TextColumn("suggest"), BarColumn(), TaskProgressColumn(), TextColumn("{task.fields[note]}"), TimeElapsedColumn())
    with Progress(*columns, console=err) as bar:
        task = bar.add_task("suggest", total=total, note="")
        while True:
            with transaction(sessions) as session:
                rows = session.execute(sa.select(JobRun.status, JobRun.total).where(JobRun.job_id.in_(job_ids))).all()
                queued = session.scalar(
                    sa.text("SELECT count(*) FROM procrastinate_jobs WHERE id = ANY(:ids) AND status IN ('todo', 'doing')"),
                    {"ids": job_ids},
                )
            done = sum(t for st, t in rows if st == "succeeded")
            failed = sum(1 for st, _ in rows if st == "failed")
            bar.update(task, completed=done, note=f"{failed} failed" if failed else "")
            if not queued:
                break
            time.sleep(1)
    if failed:
        _fail(f"{failed} of {len(job_ids)} jobs failed; the jobs page (/admin/jobs) says why.")
    console.print("Suggestions are in.")


@app.command("agreement")
def agreement_cmd(
    project: str = typer.Argument(..., help="Project id or name."),
    stage: Optional[str] = typer.Option(None, help="Only this stage (id or name)."),
    as_json: bool = typer.Option(False, "--json", help="Print the full report as JSON."),
    samples: int = typer.Option(1000, min=0, help="Bootstrap samples for the 95% intervals."),
    seed: int = typer.Option(0, help="Bootstrap seed (same seed, same intervals)."),
    soft: bool = typer.Option(True, help="Soft-matched Jaccard of text sets with MiniLM (worker extra); --no-soft skips loading it."),
) -> None:
    """Inter-annotator agreement per stage, with bootstrap confidence intervals."""
    from rich.table import Table

    from app.services import agreement, projects
    from app.worker import jobs

    settings, sessions = _sessions()
    with transaction(sessions) as session:
        try:
            target = projects.find_project(session, project)
        except DomainError as exc:
            _fail(exc.message)
        chosen = [st for st in projects.stages_of(session, target.id) if stage is None or stage in (st.name, str(st.id))]
        if not chosen:
            _fail(f"Project '{target.name}' has no stage '{stage}'.")
        reports = [
            agreement.stage_report(session, st.id, samples=samples, seed=seed, embed=jobs.soft_match_embedder(st.workflow) if soft else None)
            for st in chosen
        ]
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
    from app.datasets import get_task
    from app.services import equivalence, projects

    settings, sessions = _sessions()
    try:
        with transaction(sessions) as session:
            target = projects.find_project(session, project)
            chosen = [
                st for st in projects.stages_of(session, target.id)
                if (stage is None or stage in (st.name, str(st.id))) and get_task(st.workflow).equivalence
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
) -> None:
    """Save a new version of the project's split definition and show its counts (or --list them)."""
    from rich.table import Table

    from app.services import projects, splits

    settings, sessions = _sessions()
    config: dict = {"seed": seed}
    try:
        if not show:
            sizes = (("ratios", splits.parse_sizes(ratios, float)), ("counts", splits.parse_sizes(counts, int)), ("rest", rest), ("stratify", stratify))
            config.update({k: v for k, v in sizes if v is not None})
            if held_out:
                field_name, _, values = held_out.partition("=")
                config["held_out"] = {"field": field_name.strip(), "values": [v.strip() for v in values.split(",") if v.strip()], "split": held_out_split}
        with transaction(sessions) as session:
            target = projects.find_project(session, project)
            if show:
                rows = [(d.version, d.ordered_counts, d.config, d.created_at) for d in splits.definitions(session, target.id)]
            else:
                d = splits.save_definition(session, target.id, config)
                rows = [(d.version, d.ordered_counts, d.config, d.created_at)]
                left = splits.unassigned(session, d)
    except DomainError as exc:
        _fail(exc.message, exc.errors)
    table = Table(title=f"Splits of {target.name}")
    for column in ("version", "counts", "config"):
        table.add_column(column)
    for version, found, cfg, _ in rows:
        table.add_row(str(version), ", ".join(f"{k} {v:,}" for k, v in found.items()), json.dumps(cfg, ensure_ascii=False))
    console.print(table)
    if not show and left:
        console.print(f"{left:,} finished items are in no split (past the counts).")


@app.command("export")
def export_cmd(
    project: str = typer.Argument(..., help="Project id or name."),
    fmt: str = typer.Option(..., "--format", help="published, jsonl, parquet or coco."),
    out: str = typer.Option(..., "--out", help="A directory, or s3://bucket/prefix."),
    version: Optional[int] = typer.Option(None, help="Split definition version (default: the newest)."),
    no_splits: bool = typer.Option(False, "--no-splits", help="Ignore split definitions: one split, 'all'."),
) -> None:
    """Export the project's finished items in a format, split by its split definition, with a manifest."""
    from rich.progress import MofNCompleteColumn

    from app.services import export, projects
    from app.storage import make_storage

    settings, sessions = _sessions()
    target = out if out.startswith("s3://") else str(Path(out).resolve())
    try:
        with transaction(sessions) as session:
            row = export.create_export(
                session, projects.find_project(session, project).id, fmt, settings=settings,
                version=version, use_splits=not no_splits, target=target,
            )
            export_id = row.id
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err) as bar:
            task = bar.add_task(f"export {export_id} ({fmt})", total=None)
            manifest = export.run_export(sessions, make_storage(settings), settings, export_id, lambda d, t: bar.update(task, completed=d, total=t))
    except DomainError as exc:
        _fail(exc.message, exc.errors)
    counts = ", ".join(f"{k} {v:,}" for k, v in manifest["splits"].items())
    console.print(f"Exported {counts} to {target} ({len(manifest['files'])} files, manifest.json).")


def main() -> None:
    app()
