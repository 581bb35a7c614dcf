"""Upgrading keeps what users see: a database made by the previous release (its own code, run from
git, makes the users, the project, the annotations and a lease) answers every page and API route the
same for each of its users before the upgrade (served by that release) and after it (served by this
code): the default workspace holds everything, and every annotator and reviewer is a member with the
role they had. Differences allowed: the admin's menu gains its Workspaces link."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from app import ROOT
from app.migrate import upgrade
from tests.conftest import create_scratch_database, drop_database

# The release before workspaces (the commit before the migration 0025workspaces).
PREVIOUS_RELEASE = "5e0407f"
PROBE = Path(__file__).with_name("upgrade_probe.py")
WORKSPACES_LINK = '<li><a href="/admin/workspaces">Workspaces</a></li>'


def _previous_release(folder: Path) -> Path:
    """The previous release's code (app, its templates, static files, migrations and client), from git."""
    archive = folder / "release.tar"
    try:
        subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), PREVIOUS_RELEASE,
                        "app", "templates", "static", "migrations", "client", "pyproject.toml"],
                       check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"the previous release is not in this checkout's git history ({exc})")
    with tarfile.open(archive) as tar:
        tar.extractall(folder / "release", filter="data")
    return folder / "release"


def _run(code: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": f"{code}{os.pathsep}{code / 'client'}"}
    done = subprocess.run([sys.executable, str(PROBE), *args], cwd=code, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _difference(key: str, old: list, new: list) -> str:
    """Where two answers part: their statuses and the text around the first character that differs."""
    at = next((i for i, (a, b) in enumerate(zip(old[2], new[2])) if a != b), min(len(old[2]), len(new[2])))
    return f"{key}: {old[:2]} -> {new[:2]}, from character {at}:\n  before: {old[2][at - 80:at + 120]!r}\n  after:  {new[2][at - 80:at + 120]!r}"


def test_every_answer_is_the_same_after_the_upgrade(server_url, tmp_path):
    old = _previous_release(tmp_path)
    assert not (old / "migrations" / "versions" / "0025_workspaces.py").exists()
    url = create_scratch_database(server_url, "vlcurate_upgrade")
    plain = url.render_as_string(hide_password=False)
    data, state = str(tmp_path / "data"), str(tmp_path / "state.json")
    try:
        _run(old, "make", plain, data, state)
        before = json.loads(_run(old, "probe", plain, data, state))
        upgrade(url)
        after = json.loads(_run(ROOT, "probe", plain, data, state))
    finally:
        drop_database(server_url, url)
    assert before.keys() == after.keys() and len(before) > 50
    for answer in after.values():
        answer[2] = answer[2].replace(WORKSPACES_LINK, "")
    changed = [_difference(key, before[key], after[key]) for key in before if before[key] != after[key]]
    assert not changed, "answers changed by the upgrade:\n" + "\n".join(changed[:8])
    # What was compared is real: each role's pages and refusals, and the lease that came back.
    statuses = {key: answer[0] for key, answer in after.items()}
    made = json.loads(Path(state).read_text())
    assert statuses[f"annotator GET /projects/{made['project']}/items"] == 403
    assert all(statuses[f"{role} POST /api/v1/stages/{made['stage']}/claim"] == 200 for role in ("annotator", "reviewer", "admin"))
    assert all(statuses[f"{role} GET /"] == 200 for role in ("annotator", "reviewer", "admin"))
    assert "old-project" in after["annotator GET /"][2]
