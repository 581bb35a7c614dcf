"""The README's "From Python" section runs as written, in a fresh virtual environment where only
`pip install './client[datasets]'` was run (no server package, no SQLAlchemy), against a live server:
only the address and the token are the test server's, as the README asks of its readers.

The environment is made once per module. Its packages come from a wheel folder that is filled once
through pip's configured indexes (keyed by client/pyproject.toml, kept under ~/.cache/vlcurate or
VLCURATE_TEST_WHEELS); the install itself is `pip install --no-index --find-links` that folder, so
a rerun needs no network and takes seconds."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from app import ROOT
from app.db import transaction
from app.models import Item, Project, Suggestion
from tests import factories

ADDRESS = '"http://127.0.0.1:8000"'
TOKEN = '"vlc_your_admin_token"'


def python_blocks() -> list[str]:
    section = (ROOT / "README.md").read_text().split("\n## From Python\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_section_has_the_notebook_example():
    code = "\n".join(python_blocks())
    for needed in ("from vlcurate import Client", "push_records", "push_suggestions", "submit", "client.finals"):
        assert needed in code
    assert code.count(ADDRESS) == 1 and code.count(TOKEN) == 1  # what a reader (and the test) replaces


def pip(*args: str) -> None:
    """Run this environment's pip quietly; its output is the failure message."""
    done = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"pip {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def wheels() -> Path:
    """The client's dependencies (and its build backend) as wheels, fetched once per client/pyproject.toml."""
    key = hashlib.sha256((ROOT / "client" / "pyproject.toml").read_bytes()).hexdigest()[:12]
    folder = Path(os.environ.get("VLCURATE_TEST_WHEELS", Path.home() / ".cache" / "vlcurate" / "test-wheels")) / key
    if not folder.exists():
        # Filled beside it and renamed into place: a test run beside this one sees all of it or none.
        folder.parent.mkdir(parents=True, exist_ok=True)
        filling = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{key}-"))
        pip("wheel", "--wheel-dir", str(filling), "./client[datasets]")
        pip("download", "--dest", str(filling), "--only-binary", ":all:", "setuptools>=77", "wheel")
        for built in filling.glob("vlcurate_client-*"):
            built.unlink()  # built from the working tree at each install
        try:
            filling.rename(folder)
        except OSError:  # another run got there first
            shutil.rmtree(filling)
    return folder


@pytest.fixture(scope="module")
def client_python(tmp_path_factory) -> Path:
    """The Python of a new virtual environment holding `./client[datasets]` and what it requires, nothing else."""
    venv = tmp_path_factory.mktemp("client-venv")
    # Without a pip of its own: this pip installs into it (--python), and leaves byte-compiling to the
    # first import, which halves the install's CPU time.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    pip("--python", str(python), "install", "--no-compile", "--no-index", "--find-links", str(wheels()), "./client[datasets]")
    return python


@pytest.mark.committed
def test_from_python_blocks_run_in_a_venv_with_only_the_client(client_python, live_server, committed, tmp_path):
    # Only the client: the server's package and its database stack are not importable there.
    probe = "import importlib.util as u; print([m for m in ('app', 'sqlalchemy', 'psycopg', 'fastapi') if u.find_spec(m)])"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "DATABASE_URL", "VLCURATE_"))}
    env.update(HF_DATASETS_CACHE=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    found = subprocess.run([str(client_python), "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert found.stdout.strip() == "[]", found.stdout + found.stderr

    with transaction(committed) as s:
        token = factories.token(s, factories.user(s, "readme-admin", "admin"))
    notebook = "\n".join(python_blocks()).replace(ADDRESS, repr(live_server)).replace(TOKEN, repr(token))
    (tmp_path / "notebook.py").write_text(notebook)
    run = subprocess.run([str(client_python), "notebook.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]

    # What the blocks say they did, seen from the server's database: ten records with their images,
    # the outside model's ten drafts, four items annotated to the end, one record hidden.
    with transaction(committed) as s:
        project_id = s.scalar(sa.select(Project.id).where(Project.name == "wikido-notebook"))
        statuses = dict(s.execute(sa.select(Item.status, sa.func.count()).where(Item.project_id == project_id)
                                  .group_by(Item.status)).all())
        drafts = s.scalar(sa.select(sa.func.count()).select_from(Suggestion).where(Suggestion.model == "my-captioner"))
    assert statuses == {"done": 4, "active": 5, "discarded": 1} and drafts == 10

    # The remote commands, from the same environment: the client distribution's own command.
    def remote(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(client_python.parent / "vlcurate-remote"), "--server", live_server, "--token", token, *args],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    listed = remote("project", "list")
    assert listed.returncode == 0 and "wikido-notebook\twikido.verify\t4 of 10 done" in listed.stdout, listed.stdout + listed.stderr
    table = remote("annotations", "wikido-notebook", "--out", "annotations.jsonl")
    assert table.returncode == 0 and "Wrote 4 annotations" in table.stdout, table.stdout + table.stderr
    splits = remote("splits", "wikido-notebook", "--ratios", "train=0.5,test=0.5")
    assert splits.returncode == 0 and splits.stdout.startswith("version 1: train 2, test 2"), splits.stdout + splits.stderr
    refused = remote("project", "delete", "wikido-notebook", "--confirm", "wrong")
    assert refused.returncode == 1 and "confirm with its name, 'wikido-notebook'" in refused.stderr
