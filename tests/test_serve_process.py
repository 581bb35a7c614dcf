"""`vlcurate serve` as a process on a machine with no PostgreSQL: it starts the embedded server,
and stopping it (SIGTERM from a service manager or `kill`, SIGINT from Ctrl-C) stops that too."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import free_port, wait_for


def _postgres_on(pgdata: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(attrs=["name", "cmdline"]):
        if proc.info["name"] == "postgres" and str(pgdata) in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
    return found


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stopping_serve_stops_its_embedded_postgres(tmp_path, stop):
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(VLCURATE_DATA_DIR=str(data), VLCURATE_SECRET_KEY="s" * 40)
    port = free_port()
    vlcurate = shutil.which("vlcurate", path=str(Path(os.sys.executable).parent)) or "vlcurate"
    # Its own session: the signal reaches the server alone, as from `kill`, not the whole group.
    proc = subprocess.Popen([vlcurate, "serve", "--port", str(port)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        wait_for(f"http://127.0.0.1:{port}/healthz", proc, timeout=120)
        pgdata = (data / "postgres").resolve()
        assert _postgres_on(pgdata), "the embedded PostgreSQL is running"
        proc.send_signal(stop)
        assert proc.wait(60) == 0
        deadline = time.monotonic() + 30
        while _postgres_on(pgdata) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _postgres_on(pgdata), "the embedded PostgreSQL outlived `vlcurate serve`"
    finally:
        if proc.poll() is None:
            proc.kill()
        for leftover in _postgres_on((data / "postgres").resolve()):
            leftover.kill()
