"""Leak reports through the API, as the Python client and `vlcurate leaks --server` ask for them: the
request queues the job, a real `vlcurate worker` process makes the report, and the client follows the
job to its end and reads the report (keeping leaked groups together when asked)."""

from __future__ import annotations

import json
import subprocess

import pytest
from typer.testing import CliRunner

from app.cli import app as cli
from app.db import transaction
from tests import factories
from tests.services.test_leaks import planted_project
from tests.worker.test_jobs import VLCURATE, _worker_env
from vlcurate import Client, VlcurateError

runner = CliRunner()


@pytest.mark.committed
def test_the_client_and_the_remote_command_wait_for_the_leak_job(live_server, committed, settings, storage, tmp_path, monkeypatch):
    with transaction(committed) as s:
        admin = factories.token(s, factories.user(s, "leaks-admin", "admin"))
        project_id, _ = planted_project(s, settings, storage, tmp_path, distinct=40)
        bare, _ = factories.project(s, "generic.choice", name="no-splits")
    worker = subprocess.Popen([VLCURATE, "worker", "--queues", "maintenance"], env=_worker_env(settings),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        with Client(live_server, admin) as api:
            report = api.leaks(project_id, progress=False, timeout=120)
            assert report.version == 1 and report.leaked_groups == 30 and report.leaks == {"test / train": 30}
            assert api.leak_report(project_id) == report
            with pytest.raises(VlcurateError, match="no split definition"):
                api.leaks(bare, progress=False, timeout=120)

        # The database is out of reach: only the API can answer.
        monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
        r = runner.invoke(cli, ["leaks", str(project_id), "--server", live_server, "--token", admin, "--keep-together", "--json"])
        assert r.exit_code == 0, r.output
        fixed = json.loads(r.stdout)
        assert fixed["version"] == 2 and fixed["leaked_groups"] == 0 and fixed["within_split_groups"] == 30
        refused = runner.invoke(cli, ["leaks", str(project_id), "--server", live_server, "--token", admin, "--version", "1"])
        assert refused.exit_code == 1 and "newest split version" in refused.output
    finally:
        worker.terminate()
        worker.wait(20)
