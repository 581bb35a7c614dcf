"""`vlcurate draft`: a stage's draft kinds and prompt versions, a new version, a run with a progress
bar, and the evaluation of versions against the finals; on the database, or through --server."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from app.cli import remote
from app.cli.apps import draft_app
from app.cli.common import _fail, _sessions, console, err, transaction
from app.errors import DomainError


def _local(work):
    """`work(session, settings)` in one transaction on the database, a refusal printed as an error."""
    settings, sessions = _sessions()
    try:
        with transaction(sessions) as session:
            return work(session, settings)
    except DomainError as exc:
        _fail(exc.message, exc.errors)


@draft_app.command("kinds")
def kinds_cmd(
    stage: int = typer.Argument(..., help="Stage id (the project page lists them)."),
    as_json: bool = typer.Option(False, "--json", help="Print kinds and versions as JSON."),
    server: Optional[str] = remote.SERVER,
    token: Optional[str] = remote.TOKEN,
) -> None:
    """What a model can draft for the stage, and the stage's prompt versions with their counts."""
    from rich.table import Table

    if server:
        with remote.client(server, token) as api:
            kinds, versions = api.draft_kinds(stage), api.draft_prompts(stage)
    else:
        from app.services.drafting import prompts
        from app.services.projects import projects
        from app.web.draft_api import kind_out, stage_prompts

        kinds, versions = _local(lambda s, _: ([kind_out(k) for k in prompts.kinds_for(projects.get_stage(s, stage))], stage_prompts(s, stage)))
    if as_json:
        print(json.dumps({"kinds": [k.model_dump() for k in kinds], "versions": [v.model_dump() for v in versions]}, indent=2, ensure_ascii=False))
        return
    if not kinds:
        console.print(f"Nothing drafts for stage {stage}: no dataset declares a draft kind for its workflow.")
    for kind in kinds:
        console.print(f"[bold]{kind.name}[/]: {kind.title}", highlight=False)
        console.print(f"  fills {kind.suggestion_kind}; template fields: {', '.join('{' + p + '}' for p in kind.placeholders) or 'none'}",
                      highlight=False, markup=False)
        table = Table()
        for column in ("prompt id", "version", "drafter", "drafted", "failed", "items", "note"):
            table.add_column(column)
        for v in versions:
            if v.draft_kind == kind.name:
                table.add_row(str(v.id), str(v.version), v.drafter, str(v.counts.drafted), str(v.counts.failed), str(v.counts.items), v.note)
        console.print(table)


def _read(file: Optional[Path]) -> Optional[str]:
    return None if file is None else file.read_text(encoding="utf-8")


@draft_app.command("prompt")
def prompt_cmd(
    stage: int = typer.Argument(..., help="Stage id."),
    kind: str = typer.Argument(..., help="Draft kind (see `vlcurate draft kinds STAGE`)."),
    drafter: str = typer.Option(..., help="A drafter named in VLCURATE_DRAFTERS_FILE."),
    template_file: Optional[Path] = typer.Option(None, exists=True, dir_okay=False, help="A file holding the template (default: the kind's default prompt)."),
    system_file: Optional[Path] = typer.Option(None, exists=True, dir_okay=False, help="A file holding the system text (default: the kind's)."),
    max_tokens: Optional[int] = typer.Option(None, min=1, max=32768),
    temperature: Optional[float] = typer.Option(None, min=0, max=2),
    seed: Optional[int] = typer.Option(None, min=0),
    note: str = typer.Option("", help="What changed in this version."),
    server: Optional[str] = remote.SERVER,
    token: Optional[str] = remote.TOKEN,
) -> None:
    """Save the next prompt version of a draft kind for the stage; prints its id."""
    from vlcurate.models import PromptIn

    fields = {"template": _read(template_file), "system": _read(system_file), "max_tokens": max_tokens, "temperature": temperature, "seed": seed}
    if server:
        with remote.client(server, token) as api:
            made = api.draft_prompt(stage, kind, drafter, note=note, **fields)
    else:
        from app.web.draft_api import create_version, prompt_out

        body = PromptIn(draft_kind=kind, drafter=drafter, note=note, **fields)
        made = _local(lambda s, settings: prompt_out(s, create_version(s, settings, stage, body, None), None))
    err.print(f"Saved {made.draft_kind} version {made.version} of stage {stage} (prompt id {made.id}).", highlight=False)
    print(made.id)


@draft_app.command("run")
def run_cmd(
    prompt_id: int = typer.Argument(..., help="Prompt version id (`vlcurate draft kinds STAGE` lists them)."),
    scope: str = typer.Option("missing", help="missing (items lacking a valid draft of this version), all, or sample."),
    sample: Optional[int] = typer.Option(None, min=1, help="With --scope sample: how many items."),
    seed: int = typer.Option(0, min=0, help="With --scope sample: the sample's seed."),
    wait: bool = typer.Option(True, help="Follow the jobs with a progress bar until they finish (--no-wait: only queue them)."),
    server: Optional[str] = remote.SERVER,
    token: Optional[str] = remote.TOKEN,
) -> None:
    """Queue draft jobs for a prompt version over the stage's items; the worker drafts them."""
    if server:
        with remote.client(server, token) as api:
            started = api.draft(prompt_id, scope=scope, sample=sample, seed=seed)
            console.print(f"Queued {len(started.job_ids)} draft jobs for {started.items:,} items; the server's worker runs them.")
            if wait and started.items:
                _follow(lambda: api.prompt(prompt_id, run=started.run_id))
        return
    from app.services.drafting import prompts
    from app.services.projects import jobs_view
    from app.web.draft_api import prompt_out

    settings, sessions = _sessions()
    try:
        with transaction(sessions) as session:
            started = prompts.start_run(session, settings, prompt_id, scope, sample=sample, seed=seed)
    except DomainError as exc:
        _fail(exc.message, exc.errors)
    console.print(f"Queued {len(started.job_ids)} draft jobs for {started.items:,} items; `vlcurate worker` runs them.")
    if wait and started.items:

        def status():
            with transaction(sessions) as s:
                return prompt_out(s, prompts.get(s, prompt_id), jobs_view.draft_runs(s, [prompt_id], started.run_id)[prompt_id])

        _follow(status)


def _follow(status, poll: float = 1.0) -> None:
    """A progress bar over the run's jobs until none waits or runs; a failed job fails the command."""
    with Progress(TextColumn("draft"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[note]}"), TimeElapsedColumn(), console=err) as bar:
        task = bar.add_task("draft", total=None, note="")
        while True:
            prompt = status()
            run = prompt.run
            bar.update(task, completed=run.done, total=run.items or None, note=f"{run.failed} failed" if run.failed else "")
            if not run.active:
                break
            time.sleep(poll)
    if run.failed:
        _fail(f"{run.failed} of {run.jobs} draft jobs failed: {'; '.join(run.errors)}")
    console.print(f"Drafted: {prompt.counts.drafted:,} of {prompt.counts.items:,} items have a valid draft of version "
                  f"{prompt.version}; {prompt.counts.failed:,} failed.")


@draft_app.command("eval")
def eval_cmd(
    stage: int = typer.Argument(..., help="Stage id."),
    prompt_ids: str = typer.Option(..., "--prompts", help="Prompt version ids, comma-separated (e.g. 1,2)."),
    gold: bool = typer.Option(False, "--gold", help="Against the stage's gold answers instead of its finals."),
    parquet: Optional[Path] = typer.Option(None, help="Also write the per-item rows to this Parquet file."),
    samples: int = typer.Option(1000, min=0, max=10_000, help="Bootstrap samples for the 95% intervals."),
    seed: int = typer.Option(0, min=0, help="Bootstrap seed."),
    as_json: bool = typer.Option(False, "--json", help="Print the evaluation as JSON."),
    server: Optional[str] = remote.SERVER,
    token: Optional[str] = remote.TOKEN,
) -> None:
    """Prompt versions against the people who finished the stage's items: agreement with bootstrap
    intervals, share accepted unchanged, schema-valid share, latency and tokens."""
    if server:
        with remote.client(server, token) as api:
            found = api.draft_evaluation(stage, prompt_ids, gold=gold, samples=samples, seed=seed, parquet=parquet).model_dump()
    else:
        from app.services.drafting import draft_eval, eval_report

        def work(session, _settings) -> dict[str, Any]:
            evaluation = draft_eval.evaluate(session, stage, draft_eval.parse_ids(prompt_ids), gold=gold, samples=samples, seed=seed)
            if parquet is not None:
                eval_report.to_parquet(evaluation, parquet)
            return eval_report.as_dict(evaluation)

        found = _local(work)
    if as_json:
        print(json.dumps(found, indent=2, ensure_ascii=False))
    else:
        _print_evaluation(found)
    if parquet is not None:
        err.print(f"Per-item rows: {parquet}", highlight=False)


def _print_evaluation(found: dict[str, Any]) -> None:
    """Two tables, narrow enough for a terminal: agreement figures, then what the drafts cost."""
    from rich.table import Table

    def num(value, fmt="{:.3f}"):
        return "n/a" if value is None else fmt.format(value)

    against = "gold answers" if found["gold"] else "finals"
    agreement = Table(title=f"Stage {found['stage_id']} ({found['workflow']}): drafts against the {against}")
    for column in ("version", "items", "figure", "estimate", "95% interval"):
        agreement.add_column(column)
    costs = Table()
    for column in ("version", "accepted", "schema-valid", "latency p50/p95 ms", "tokens in/out"):
        costs.add_column(column)
    for v in found["versions"]:
        name = f"{v['draft_kind']} v{v['version']}"
        for n, f in enumerate(v["figures"]):
            interval = f"[{num(f['low'])}, {num(f['high'])}]" if f["low"] is not None else ""
            agreement.add_row(name if n == 0 else "", str(v["items"]) if n == 0 else "", f["name"], num(f["estimate"]), interval)
        costs.add_row(
            name, f"{num(v['accepted_share'], '{:.1%}')} of {v['shown']}", f"{num(v['valid_share'], '{:.1%}')} of {v['valid'] + v['failed']}",
            f"{num(v['latency_p50_ms'], '{:.0f}')} / {num(v['latency_p95_ms'], '{:.0f}')}",
            f"{num(v['prompt_tokens'], '{:.1f}')} / {num(v['completion_tokens'], '{:.1f}')}",
        )
    console.print(agreement)
    console.print(costs)
