"""What every command shares: the consoles, failing with a message, and the checked session factory.

The command modules import only typer, rich and this at their top; a command imports the database,
the services and the models it uses when it runs, so `vlcurate --help` and a command through
`--server` never load SQLAlchemy or psycopg, and no command loads what another one needs
(tests/test_cli_startup.py; figures in docs/cli-startup.md)."""

from __future__ import annotations

import typer
from rich.console import Console

console = Console()
err = Console(stderr=True)


def _fail(message: str, errors: list[str] | None = None) -> None:
    err.print(f"[bold red]Error:[/] {message}", highlight=False, markup=True)
    for e in errors or []:
        err.print(f"  - {e}", highlight=False, markup=False)
    raise typer.Exit(1)


def _sessions():
    """The settings and a session factory on the database, once its schema is checked to be the newest
    (on the connection the command then goes on using)."""
    from app.db import get_engine, session_factory
    from app.migrate import check_current
    from app.settings import get_settings

    settings = get_settings()
    engine = get_engine(settings)
    if not check_current(engine):
        _fail("The database schema is not up to date: run `vlcurate db upgrade` first.")
    return settings, session_factory(engine)


def transaction(sessions):
    """`app.db.transaction`, imported when a command opens the database."""
    from app.db import transaction

    return transaction(sessions)
