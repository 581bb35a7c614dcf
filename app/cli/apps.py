"""The `vlcurate` command groups (typer apps), apart from the modules that add commands to them."""

from __future__ import annotations

import typer

app = typer.Typer(help="vlcurate: curate vision-language datasets with humans in the loop.", no_args_is_help=True)
db_app = typer.Typer(help="Database schema (Alembic migrations).", no_args_is_help=True)
user_app = typer.Typer(help="User accounts.", no_args_is_help=True)
token_app = typer.Typer(help="API tokens for /api/v1.", no_args_is_help=True)
project_app = typer.Typer(help="Projects.", no_args_is_help=True)
gold_app = typer.Typer(help="Gold items: import their answers, annotators' accuracy.", no_args_is_help=True)
draft_app = typer.Typer(help="Drafting with a model: prompt versions of a stage, runs, and their evaluation against people.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(user_app, name="user")
app.add_typer(token_app, name="token")
app.add_typer(project_app, name="project")
app.add_typer(gold_app, name="gold")
app.add_typer(draft_app, name="draft")
