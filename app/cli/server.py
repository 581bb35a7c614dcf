"""Running vlcurate: the database schema, the web server, the worker and the demo data."""

from __future__ import annotations

import os
from typing import Optional

import typer

from app.cli.apps import app, db_app
from app.cli.common import _sessions, console


@db_app.command("upgrade")
def db_upgrade(revision: str = typer.Argument("head", help="Target revision.")) -> None:
    """Apply migrations up to REVISION (default: the newest)."""
    from app.db import database_url
    from app.migrate import upgrade
    from app.settings import get_settings

    upgrade(database_url(get_settings()), revision)
    console.print("Database schema is up to date.")


@db_app.command("downgrade")
def db_downgrade(revision: str = typer.Argument(..., help="Target revision, e.g. -1 or base.")) -> None:
    """Revert migrations down to REVISION."""
    from app.db import database_url
    from app.migrate import downgrade
    from app.settings import get_settings

    downgrade(database_url(get_settings()), revision)
    console.print(f"Database schema downgraded to {revision}.")


@db_app.command("revision")
def db_revision(message: str = typer.Argument(..., help="What the migration changes.")) -> None:
    """Write a new migration from the difference between the models and the database."""
    from app.db import database_url
    from app.migrate import revision
    from app.settings import get_settings

    revision(database_url(get_settings()), message)


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, help="Port to listen on."),
    workers: Optional[int] = typer.Option(
        None, min=1, help="Worker processes (default: one per CPU this process may use, at most 4)."
    ),
    access_log: bool = typer.Option(False, help="Log every request (off by default: it costs the hot path time)."),
) -> None:
    """Upgrade the database and serve the web app and API."""
    import signal

    import uvicorn

    from app.db import connection_budget, database_url, get_engine, session_factory, transaction
    from app.migrate import upgrade
    from app.services.users.users import ensure_first_admin
    from app.settings import get_settings

    # SIGTERM (a service manager, `kill`) ends like Ctrl-C: uvicorn shuts down gracefully, then
    # re-raises the signal; as an exit instead of a kill, the embedded PostgreSQL this process
    # started is stopped by its exit handler rather than left running.
    signal.signal(signal.SIGTERM, _exit_on_signal)
    settings = get_settings()
    upgrade(database_url(settings))
    with transaction(session_factory(get_engine(settings))) as session:
        first = ensure_first_admin(session)
    if first:
        console.print(
            f"[bold]First start:[/] created user [bold]{first[0]}[/] with one-time password "
            f"[bold]{first[1]}[/] (you choose a new one at first login). It is not shown again."
        )
    chosen = workers or default_workers(embedded=not settings.database_url)
    why = "" if workers else f" (the default for {_cpus()} CPUs{' on the embedded PostgreSQL' if not settings.database_url else ''}; --workers to change)"
    console.print(f"vlcurate on http://{host}:{port} with {chosen} worker process{'es' if chosen > 1 else ''}{why}")
    console.print(connection_budget(settings, chosen), highlight=False, soft_wrap=True)
    uvicorn.run(
        "app.main:serve_app", factory=True, host=host, port=port, workers=chosen, proxy_headers=False, access_log=access_log
    )


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def default_workers(*, embedded: bool = False) -> int:
    """One worker process per CPU: a request's Python work holds one CPU, and workers share nothing.
    At most 4, so that their connection pools stay inside PostgreSQL's default max_connections
    (100) with room for the job worker and the command line. One on the embedded PostgreSQL (a
    trial or development setup), whose server stops with the process that started it."""
    return 1 if embedded else max(1, min(_cpus(), 4))


def _exit_on_signal(signum, frame) -> None:
    raise SystemExit(0)


@app.command()
def demo() -> None:
    """Create demo accounts and projects (images are drawn locally). Safe to run again."""
    from app.db import database_url, get_engine, session_factory, transaction
    from app.migrate import upgrade
    from app.services.demo.demo import load_demo
    from app.settings import get_settings
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


@app.command()
def worker(
    concurrency: int = typer.Option(1, min=1, help="Jobs run at once (model jobs are best run one at a time)."),
    queues: Optional[str] = typer.Option(
        None, help="Comma-separated queues (default: suggest,draft,maintenance,export); `--queues draft` makes a drafting box."
    ),
) -> None:
    """Run background jobs: suggestions, drafts, and the reconcile job that catches up on missing work."""
    from app.db import connection_budget
    from app.worker import availability, backends, jobs, runtime

    settings, _ = _sessions()
    runtime.configure(settings)
    names = [q.strip() for q in (queues or ",".join(jobs.QUEUES)).split(",") if q.strip()]
    unknown = sorted(set(names) - set(jobs.QUEUES))
    if unknown or not names:
        console.print(f"[red]Unknown queue {', '.join(unknown) or '(none given)'}[/]; the queues are {', '.join(jobs.QUEUES)}.")
        raise typer.Exit(2)
    console.print(f"Worker on queues {', '.join(names)}; device {backends.device()}.")
    console.print(connection_budget(settings), highlight=False, soft_wrap=True)
    for line in [*availability.availability(settings), *availability.drafter_lines(settings)]:
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    recovered = jobs.recover_stalled(settings)
    if recovered:
        console.print(f"Re-queued {recovered} jobs whose worker had stopped.")
    jobs.make_app(settings).run_worker(queues=names, concurrency=concurrency, wait=True, install_signal_handlers=True)
