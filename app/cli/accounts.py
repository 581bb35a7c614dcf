"""Accounts: users and their API tokens."""

from __future__ import annotations

import sys

import typer

from app.cli.apps import token_app, user_app
from app.cli.common import _fail, _sessions, console, transaction
from app.errors import DomainError


@user_app.command("create")
def user_create(
    username: str,
    role: str = typer.Option("annotator", help="annotator, reviewer or admin."),
    password_stdin: bool = typer.Option(False, "--password-stdin", help="Read the password from standard input."),
) -> None:
    """Create a user. Without --password-stdin a one-time password is printed."""
    from app import security
    from app.services.users import users

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
    from app.services.users import users

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
    from app.services.users import users

    settings, sessions = _sessions()
    try:
        with transaction(sessions) as session:
            users.revoke_token(session, token_id, actor=None)
    except DomainError as exc:
        _fail(exc.message)
    console.print(f"Token {token_id} revoked.")
