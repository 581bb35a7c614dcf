"""Docs that cannot rot: every setting and every CLI command is in the README, every plugin hook in
docs/plugins.md, and every link between the README and docs/ reaches a file and a heading that exist."""

from __future__ import annotations

import re
from pathlib import Path

from typer.main import get_command

from app import ROOT
from app.cli import app as cli
from app.settings import Settings

README = (ROOT / "README.md").read_text()
PLUGINS = (ROOT / "docs" / "plugins.md").read_text()
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


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
    """Every hook of the dataset, workflow and export-format shapes is in docs/plugins.md, which the
    README's plugin section links to."""
    from app.datasets.dataset import Dataset
    from app.datasets.workflow import ItemContext, Workflow
    from app.exporters.base import Format

    assert "(docs/plugins.md)" in README.split("### Dataset plugins", 1)[1].split("\n## ", 1)[0]
    for cls in (Dataset, Workflow, ItemContext, Format):
        missing = sorted(n for n in _members(cls) if f"`{n}`" not in PLUGINS and f"`{n}(" not in PLUGINS)
        assert not missing, f"{cls.__name__} hooks missing from docs/plugins.md: {missing}"


def _anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)  # no headings in code blocks
    return {_anchor(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def test_anchor_is_githubs():
    assert _anchor("Where the cycle stands against the goal") == "where-the-cycle-stands-against-the-goal"
    assert _anchor("ColorSwap: `colorswap.filter` → `colorswap.recaption`") == "colorswap-colorswapfilter--colorswaprecaption"


def test_links_between_the_docs_reach_their_files_and_headings():
    """The README's sections moved to docs/ (the performance history, each dataset's reference, the
    plugin hooks) link back and forth; a link to a file or heading that is not there fails here."""
    broken = []
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # an outside address
            name, _, anchor = target.partition("#")
            path = (doc.parent / name).resolve() if name else doc
            if not path.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
    assert any(d.name == "performance.md" for d in DOCS) and len(DOCS) > 5


def test_every_dataset_with_a_reference_is_linked_from_the_readme():
    for page in sorted((ROOT / "docs" / "datasets").glob("*.md")):
        assert f"(docs/datasets/{page.name})" in README, f"docs/datasets/{page.name} is not linked from the README"
