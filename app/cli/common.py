"""What every command shares: the consoles, failing with a message, and the checked session factory."""

from __future__ import annotations

import typer
from rich.console import Console

from app.db import database_url, get_engine, session_factory
from app.settings import get_settings

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
