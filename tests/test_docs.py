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


def _members(cls) -> set[str]:
    names = set(getattr(cls, "__annotations__", {})) | set(vars(cls))
    return {n for n in names if not n.startswith("_")}


def test_every_plugin_hook_is_documented():
    """Every hook of the dataset, task and export-format shapes is in the README's plugin section."""
    from app.datasets.dataset import Dataset
    from app.datasets.task import Task
    from app.exporters.base import Format

    section = README.split("### Dataset plugins", 1)[1].split("\n## ", 1)[0]
    for cls in (Dataset, Task, Format):
        missing = sorted(n for n in _members(cls) if f"`{n}`" not in section and f"`{n}(" not in section)
        assert not missing, f"{cls.__name__} hooks missing from the README's plugin section: {missing}"
