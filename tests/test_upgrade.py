"""Upgrading keeps what users see: a database made by the previous release (its own code, run from
git, makes the users, the project, the annotations and a lease) answers every page and API route the
same for each of its users before the upgrade (served by that release) and after it (served by this
code): the default workspace holds everything, and every annotator and reviewer is a member with the
role they had. Differences allowed: what this release adds beside what was there, nothing taken away
or changed: a page may gain elements (menu links, a settings link, a section), its tags and texts
before stay in order; static files carry this release's version stamps; a JSON answer may gain keys,
every value it had the same."""

from __future__ import annotations

import json
import os
import re
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
STAMP = re.compile(r"\?v=[0-9a-f]+")


def _kept(old, new) -> bool:
    """Whether `new` says all that `old` said: the same values, where a JSON object may gain keys."""
    if isinstance(old, dict) and isinstance(new, dict):
        return all(k in new and _kept(v, new[k]) for k, v in old.items())
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(_kept(a, b) for a, b in zip(old, new))
    return old == new


TOKEN = re.compile(r"<[^>]+>|[^<]+")


def _tokens(html: str) -> list[str]:
    return [t for t in (" ".join(m.group().split()) for m in TOKEN.finditer(STAMP.sub("?v=", html))) if t]


def _within(old: list[str], new: list[str]) -> bool:
    """Whether every token of `old` comes in `new`, in order (new ones may come between)."""
    rest = iter(new)
    return all(any(t == u for u in rest) for t in old)


def _same(old: list, new: list) -> bool:
    if old[:2] != new[:2]:
        return False
    try:
        return _kept(json.loads(old[2]), json.loads(new[2]))
    except ValueError:
        return _within(_tokens(old[2]), _tokens(new[2]))


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
    old, new = [*old[:2], STAMP.sub("?v=", old[2])], [*new[:2], STAMP.sub("?v=", new[2])]
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
    changed = [_difference(key, before[key], after[key]) for key in before if not _same(before[key], after[key])]
    assert not changed, "answers changed by the upgrade:\n" + "\n".join(changed[:12])
    # What was compared is real: each role's pages and refusals, and the lease that came back.
    statuses = {key: answer[0] for key, answer in after.items()}
    made = json.loads(Path(state).read_text())
    assert statuses[f"annotator GET /projects/{made['project']}/items"] == 403
    assert all(statuses[f"{role} POST /api/v1/stages/{made['stage']}/claim"] == 200 for role in ("annotator", "reviewer", "admin"))
    assert all(statuses[f"{role} GET /"] == 200 for role in ("annotator", "reviewer", "admin"))
    assert "old-project" in after["annotator GET /"][2]
