"""Docs that cannot rot: every setting and every CLI command is in the README."""

from __future__ import annotations

import re

from typer.main import get_command

from app import ROOT
from app.cli import app as cli
from app.settings import Settings

README = (ROOT / "README.md").read_text()


def test_readme_opens_with_the_two_commands():
    block = README.split("```")[1]
    assert "make run" in block and "make test" in block


def test_every_setting_is_documented():
    for name in Settings.model_fields:
        env = "DATABASE_URL" if name == "database_url" else f"VLCURATE_{name.upper()}"
        assert f"`{env}`" in README, f"{env} is not in the README"


def _commands(group, prefix=""):
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}"


def test_every_cli_command_is_documented():
    names = list(_commands(get_command(cli)))
    assert "import" in names and "user create" in names
    for name in names:
        assert re.search(rf"`vlcurate {re.escape(name)}\b", README), f"vlcurate {name} is not in the README"
