"""The CPU a benchmark's run took in the server's processes and in the database's backends, read
from /proc while the run goes on (steadier than the rates on a shared machine; local database only)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from client_bench import cpu_seconds


def process_tree(pid: int) -> list[int]:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return [pid]
    return [pid, *(p for child in children for p in process_tree(int(child)))]


def measured(run: Callable[[], dict], server: int, conn) -> dict:
    """Run wrk; add the CPU ms a unit (an item; a request for `claim`) took in the server's processes
    and in the database's backends (steadier than the wall time on a shared machine; from /proc, so
    only for a local database).
    Backends come and go with the pool's overflow: they are looked at every 0.2 s while wrk runs."""
    query = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    first: dict[str, dict[int, float]] = {"app": {}, "db": {}}
    last: dict[str, dict[int, float]] = {"app": {}, "db": {}}

    def look(counted_whole: bool) -> None:
        """A process first seen while wrk runs started during the run: all its CPU counts."""
        for group, pids in (("app", process_tree(server)), ("db", [row[0] for row in conn.execute(query)])):
            for pid, seconds in cpu_seconds(pids).items():
                first[group].setdefault(pid, 0.0 if counted_whole else seconds)
                last[group][pid] = seconds

    def go() -> None:
        try:
            outcome.append(run())
        except BaseException as e:  # noqa: BLE001 - raised again below, in the main thread
            outcome.append(e)

    outcome: list = []
    look(False)
    worker = threading.Thread(target=go)
    worker.start()
    while worker.is_alive():
        worker.join(0.2)
        look(True)
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    result = outcome[0]
    per_item = 1000 / max(result.get("units", result["items"]), 1)
    result["app_ms"], result["db_ms"] = (sum(last[g][p] - first[g].get(p, 0.0) for p in last[g]) * per_item for g in ("app", "db"))
    return result
