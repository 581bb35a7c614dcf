"""Projects and their items: create, import, and queue model suggestions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from app import jsontext
from app.cli.apps import app, project_app
from app.cli import remote
from app.cli.common import _fail, _sessions, console, err, transaction
from app.errors import DomainError


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
    from app.services.projects import projects

    settings, sessions = _sessions()
    if sample is not None and sample < 1:
        _fail("--sample is a number of items, 1 or more.")
    try:
        stage_config = jsontext.loads(config) if config else {}
    except jsontext.NumberRefused as exc:
        _fail(f"--config holds a number JSON does not allow: {exc}.")
    except json.JSONDecodeError as exc:
        _fail(f"--config is not valid JSON: {exc.msg}")
    try:
        # One --workflow gets the workflow's follow-on stages, as the web form does; repeated, they are the pipeline.
        specs = projects.stage_specs_for(
            workflow[0], then=workflow[1:] or None, overlap=overlap, lease_seconds=lease_seconds, config=stage_config,
            config_for_all=True, sample_size=sample, sample_seed=sample_seed,
        )
        for spec in specs:
            spec.name = _stage_name(spec.workflow)
        with transaction(sessions) as session:
            project = projects.create_project(session, name, specs, description=description)
            project_id = project.id
    except DomainError as exc:
        _fail(exc.message, exc.errors)
    if len(specs) > len(workflow):
        added = ", ".join(s.workflow for s in specs[len(workflow):])
        err.print(f"Added the stages that follow {workflow[0]}: {added} (repeat --workflow to list the stages yourself).", highlight=False)
    print(project_id)


@project_app.command("list")
def project_list(
    as_json: bool = typer.Option(False, "--json", help="Print the projects as GET /api/v1/projects gives them."),
    server: Optional[str] = remote.SERVER,
    token: Optional[str] = remote.TOKEN,
) -> None:
    """List the projects: id, name, the workflows of their stages and how many items are done."""
    if server:
        with remote.client(server, token) as api:
            rows = [p.model_dump() for p in api.projects()]
    else:
        from app.services.projects import projects

        settings, sessions = _sessions()
        with transaction(sessions) as session:
            rows = [p.as_dict() for p in projects.progress(session)]
    if as_json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    if not rows:
        console.print("No projects yet: `vlcurate project create` makes one (`vlcurate demo` a few to try).")
        return
    from rich.table import Table
    from rich.text import Text

    table = Table()
    for column, justify in (("id", "right"), ("name", "left"), ("workflows", "left"), ("items", "right"), ("done", "right"),
                            ("discarded", "right"), ("in review", "right")):
        table.add_column(column, justify=justify)
    for p in rows:
        review = sum(s["counts"]["review"] for s in p["stages"])
        # Names are people's text: shown as typed, never read as console markup.
        table.add_row(str(p["id"]), Text(p["name"]), Text(" → ".join(s["workflow"] for s in p["stages"])),
                      f"{p['items']:,}", f"{p['done']:,}", f"{p['discarded']:,}", f"{review:,}")
    console.print(table)


def _stage_name(workflow: str) -> str:
    """A stage's name from its workflow's title without the dataset in front ("VisArgs: one box per
    visual premise" → "One box per visual premise"): the project page already names the dataset."""
    from app.datasets import get_workflow

    title = get_workflow(workflow).title.split(": ", 1)[-1]
    return title[:1].upper() + title[1:]


@app.command("import")
def import_cmd(
    project: str = typer.Argument(..., help="Project id or name."),
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="JSONL, JSON array or CSV."),
    images: Optional[Path] = typer.Option(
        None, exists=True, help="Directory or zip holding the images (default: the file's directory)."
    ),
    server: Optional[str] = remote.SERVER,
    token: Optional[str] = remote.TOKEN,
) -> None:
    """Import items into PROJECT; all or nothing. With --server: pushed through the API in batches,
    leaving out records whose id the project has (run it again to resume)."""
    if server:
        with remote.client(server, token) as api:
            pushed = api.push_records(_ref(project), remote.read_records(file), images=images or file.parent)
        console.print(f"Imported {pushed.created:,} items ({pushed.images:,} images, {pushed.new_images:,} new; "
                      f"{pushed.skipped:,} already there).")
        return
    result = _import_here(project, file, images)
    console.print(f"Imported {result.created:,} items ({result.images:,} images, {result.new_images:,} new).")


def _import_here(project: str, file: Path, images: Optional[Path]):
    """Import the file into the project in this machine's database, with a progress bar per phase."""
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    from app.services.imports import imports
    from app.services.projects import projects
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

            with transaction(sessions) as session, file.open("rb") as records:
                target = projects.find_project(session, project)
                result = imports.import_items(
                    session,
                    target.id,
                    records,
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
    return result


def _ref(project: str) -> int | str:
    return int(project) if project.isdigit() else project


@app.command()
def suggest(
    project: str = typer.Argument(..., help="Project id or name."),
    stage: Optional[str] = typer.Option(None, help="Only this stage (id or name)."),
    kind: Optional[str] = typer.Option(None, help="Only this suggestion kind, e.g. colorswap.itm."),
    wait: bool = typer.Option(True, help="Follow the jobs with a progress bar until they finish."),
    retry_failed: bool = typer.Option(
        False, "--retry-failed", help="Also queue the items whose producer failed on them (left alone until their record or images change).",
    ),
    from_file: Optional[Path] = typer.Option(
        None, "--from", exists=True, dir_okay=False,
        help="Store an outside model's suggestions from this JSONL ({external_id, kind, payload, score} a line) instead of running jobs.",
    ),
    model: str = typer.Option("outside", help="With --from: the model's name (a line's own `model` wins)."),
    model_version: str = typer.Option("", "--model-version", help="With --from: the model version (a line's own wins)."),
    server: Optional[str] = remote.SERVER,
    token: Optional[str] = remote.TOKEN,
) -> None:
    """Enqueue suggestion jobs for the items that lack them, and follow their progress; or, with --from,
    store suggestions computed elsewhere (the same model version again changes nothing)."""
    if from_file is not None:
        _suggest_from(project, stage, kind, from_file, model, model_version, server, token)
        return
    if server:
        _fail("Through --server, suggestions come from a file: give --from FILE (the worker runs the models on the server).")

    from app.worker import availability, jobs

    settings, sessions = _sessions()
    batches = _missing_batches(settings, sessions, project, stage, kind, retry_failed)
    if not batches:
        console.print("Every item already has its suggestions; nothing to do."
                      + ("" if retry_failed else " (Items that failed are tried again with --retry-failed.)"))
        return
    for k in sorted({b.kind for b in batches}):
        why = availability.unavailable(k, settings)
        if why:
            err.print(f"[yellow]Warning:[/] {k} cannot run here: {why}. Its jobs will fail until it can.", highlight=False)
    app_ = jobs.make_app(settings)
    with app_.open():
        job_ids = jobs.defer_batches(app_, batches)
    total = sum(len(b.item_ids) for b in batches)
    console.print(f"Enqueued {len(job_ids)} jobs for {total:,} items; `vlcurate worker` runs them.")
    if not wait or not job_ids:
        return
    failed = _follow_jobs(sessions, job_ids, total)
    if failed:
        _fail(f"{failed} of {len(job_ids)} jobs failed; the jobs page (/admin/jobs) says why.")
    console.print("Suggestions are in.")


def _missing_batches(settings, sessions, project: str, stage: Optional[str], kind: Optional[str], retry_failed: bool):
    from app.worker import jobs, runtime

    runtime.configure(settings)
    with transaction(sessions) as session:
        target, stage_id = _project_stage(session, project, stage)
        return jobs.missing_batches(session, settings, project_id=target.id, stage_id=stage_id, kind=kind,
                                    available_only=False, retry_failed=retry_failed)


def _project_stage(session, project: str, stage: Optional[str]):
    """The project named, and the id of its stage named (None when no stage is named)."""
    import sqlalchemy as sa

    from app.models import Stage
    from app.services.projects import projects

    try:
        target = projects.find_project(session, project)
    except DomainError as exc:
        _fail(exc.message)
    if stage is None:
        return target, None
    found = session.scalar(
        sa.select(Stage.id).where(
            Stage.project_id == target.id, (Stage.name == stage) | (Stage.id == (int(stage) if stage.isdigit() else -1))
        )
    )
    if found is None:
        _fail(f"Project '{target.name}' has no stage '{stage}'.")
    return target, found


def _follow_jobs(sessions, job_ids: list[int], total: int) -> int:
    """A progress bar over the jobs' items until none waits or runs; how many jobs failed."""
    import time

    import sqlalchemy as sa
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    from app.models import JobRun

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
                return failed
            time.sleep(1)


def _suggest_from(project: str, stage: Optional[str], kind: Optional[str], file: Path, model: str, version: str,
                  server: Optional[str], token: Optional[str]) -> None:
    rows = ({**({"kind": kind} if kind else {}), "model": model, "model_version": version, **row} for row in remote.suggestion_rows(file))
    if server:
        with remote.client(server, token) as api:
            stages = api.settings(_ref(project)).stages
            chosen = [s for s in stages if stage is None or stage in (s.name, s.workflow, str(s.id))]
            if len(chosen) != 1:
                _fail(f"Name the stage with --stage (one of: {', '.join(s.name for s in stages)}).")
            done = api.push_suggestions(chosen[0].id, model, version, rows)
    else:
        from pydantic import ValidationError

        from app.errors import format_validation_error
        from app.services.drafting import suggestion_push
        from app.services.projects import projects
        from vlcurate.models import SuggestionIn, SuggestionsOut

        settings, sessions = _sessions()
        try:
            with transaction(sessions) as session:
                target = projects.find_project(session, project)
                stages = projects.stages_of(session, target.id)
                chosen = [s for s in stages if stage is None or stage in (s.name, s.workflow, str(s.id))]
                if len(chosen) != 1:
                    _fail(f"Name the stage with --stage (one of: {', '.join(s.name for s in stages)}).")
                try:
                    checked = [SuggestionIn.model_validate(r).model_dump() for r in rows]
                except ValidationError as exc:
                    _fail(f"{file.name}: nothing was stored.", format_validation_error(exc))
                if not checked:
                    _fail(f"{file.name} holds no suggestions.")
                stored, unchanged = suggestion_push.push(session, chosen[0].id, checked)
        except DomainError as exc:
            _fail(exc.message, exc.errors)
        done = SuggestionsOut(stored=stored, unchanged=unchanged)
    console.print(f"Stored {done.stored:,} suggestions ({done.unchanged:,} unchanged).")
