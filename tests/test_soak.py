"""The short soak: annotators over HTTP through a server kill and a PostgreSQL restart keep every invariant."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from app import ROOT


def _counts(output: str) -> dict[str, int]:
    return {m[1].strip(): int(m[2]) for m in re.finditer(r"^  (\S.*?)\s+(\d+)$", output, re.M)}


@pytest.mark.committed
def test_a_short_soak_with_faults_keeps_every_invariant():
    cmd = [sys.executable, "bench/soak.py", "--annotators", "20", "--seconds", "16", "--items", "1500",
           "--pg-restart-every", "5", "--kill-every", "9"]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "OK: every invariant holds." in run.stdout, run.stdout[-4000:] + run.stderr[-4000:]
    n = _counts(run.stdout)
    assert n.get("server processes killed (SIGKILL)", 0) >= 1 and n["server processes restarted"] == n["server processes killed (SIGKILL)"]
    # PostgreSQL first (at 5 s), the server kill after (at 9 s): both happen however slow a restart is.
    assert n.get("PostgreSQL restarts (immediate mode)", 0) >= 1 and n["retried after a connection error"] > 0
    assert n["submits acknowledged"] > 100 and n["submits sent twice in a row"] > 0 and n["submits sent 3 times at once"] > 0
    assert n["skips"] > 0 and n["releases"] > 0 and n["leases abandoned"] > 0
    assert n["over-assignment looks during the run"] > 0
    # Every acknowledged submit is one stored annotation, and none is stored twice.
    assert n["acknowledged submits lost"] == 0 and n["duplicated annotations (an assignment with more than one)"] == 0
    assert n["annotations stored"] - n["annotations stored whose answer never reached the client"] == n["submits acknowledged"]
    assert n["over-assigned items (more live or submitted holders than the overlap)"] == 0 and n["wrong slot counters"] == 0
