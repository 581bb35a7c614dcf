"""The `vlcurate` command line (typer): serve, worker, db, demo, user, token, project, import, suggest,
agreement, equivalence, splits, export, gold, leaks, draft. One module per family of commands."""

from __future__ import annotations

from app.cli.apps import app

# Importing the modules registers their commands, in the order `--help` lists them.
from app.cli import server, accounts, projects, quality, exports, gold, drafts  # noqa: F401, I001


def main() -> None:
    app()
