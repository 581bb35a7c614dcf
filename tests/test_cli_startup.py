"""The command line loads only what a command needs: `--help` and a command through `--server` never
import the database stack, and no command imports the model, data-frame or metric libraries it does
not use (each is seconds or tenths of one, on every command: docs/cli-startup.md). Each command runs
in a fresh process, as a user runs it, and reports which watched modules it imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from app import ROOT
from app.db import transaction
from tests import factories

# Runs `vlcurate ARGS` as the console script does, then prints the watched modules it imported.
PROBE = """
import json, sys
from app.cli import main
sys.argv[0] = "vlcurate"
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
loaded = sorted({name.split(".")[0] for name in sys.modules} & set(WATCHED))
print("\\nPROBE " + json.dumps({"code": code, "loaded": loaded}))
"""
# Model backends, data frames and the metrics' scientific stack, Alembic, the web app and the job
# queue; the database driver and ORM; the client's HTTP stack.
MODELS = {"torch", "transformers", "sentence_transformers", "rapidocr_onnxruntime", "datasets", "pandas", "pyarrow"}
SCIENCE = {"numpy", "scipy", "PIL"}
SERVER = {"alembic", "fastapi", "starlette", "uvicorn", "procrastinate", "jinja2"}
DATABASE = {"sqlalchemy", "psycopg"}
WATCHED = MODELS | SCIENCE | SERVER | DATABASE | {"httpx"}


def vlcurate(*args: str, env: dict[str, str] | None = None) -> tuple[str, set[str]]:
    """Run a command in a new interpreter; its output and the watched modules it imported."""
    code = f"WATCHED = {sorted(WATCHED)!r}\n{PROBE}"
    run = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'client'}", "COLUMNS": "200", **(env or {})})
    out, _, probe = run.stdout.rpartition("\nPROBE ")
    assert probe, run.stdout + run.stderr
    result = json.loads(probe)
    assert result["code"] == 0, out + run.stderr
    return out, set(result["loaded"])


def test_help_loads_neither_the_database_nor_any_model_or_metric_library():
    out, loaded = vlcurate("--help")
    assert "project" in out and "worker" in out
    assert loaded == set()


@pytest.mark.committed
def test_project_list_loads_the_database_alone_and_through_the_api_only_the_client(committed, settings, live_server):
    with transaction(committed) as s:
        factories.project(s, "generic.choice", name="Birds")
        factories.project(s, ["visargs.premises", "visargs.structure"], name="Posters")
        token = factories.token(s, factories.user(s, "lister", "admin"))
    local_env = {"DATABASE_URL": settings.database_url, "VLCURATE_DATA_DIR": str(settings.data_dir)}

    local, loaded = vlcurate("project", "list", env=local_env)
    assert "Birds" in local and "visargs.premises → visargs.structure" in local
    assert loaded == DATABASE  # no dataset registry, metrics, Alembic or web app for a listing

    # Through the API: the database is out of reach, and not one of its modules is imported.
    remote_env = {"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none", "VLCURATE_SERVER": live_server, "VLCURATE_TOKEN": token}
    remote, loaded = vlcurate("project", "list", env=remote_env)
    assert remote == local
    assert loaded == {"httpx"}
    listed, loaded = vlcurate("splits", "Birds", "--list", env=remote_env)
    assert "Splits of Birds" in listed and loaded == {"httpx"}
