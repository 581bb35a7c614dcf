"""CLI start-up benchmark: how long `vlcurate` commands take from the shell prompt to their answer.

Times, each as the median of N runs in a fresh process (wall seconds and the process's own CPU
seconds, steadier than the wall time on a shared machine):

- `vlcurate --help`;
- `vlcurate project list` and `vlcurate splits P --list` on the database at DATABASE_URL (a scratch
  database on its server; without DATABASE_URL an embedded one);
- the same two through `--server URL --token T` against a live server process on that database;
- with the embedded PostgreSQL (no DATABASE_URL, a data directory of its own): `project list` while
  no server runs (the command starts PostgreSQL and stops it as it exits) and while `vlcurate serve`
  holds it (as under `make run`: the command joins the running server).

    python bench/cli_bench.py [--runs 5] [--items 1000] [--root DIR ...] [--no-embedded]

`--root` names checkouts whose command line is timed side by side (default: this one): with two,
say a copy of the code before a change and after, every command runs in turns A, B, A, B, ... on
the same databases, so a neighbour's load falls on both. A command a checkout does not have is
reported as failed, with its exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))


# What the environment's `vlcurate` script runs; `app.cli` comes from the root first on PYTHONPATH
# (-P: not from the current directory).
VLCURATE = [sys.executable, "-P", "-c", "import sys; from app.cli import main; sys.argv[0] = 'vlcurate'; sys.exit(main())"]


def env_for(root: Path, **extra: str | None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": f"{root}:{root / 'client'}"}
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """One run: wall seconds, the child's user + system CPU seconds, its exit status and its output's last line."""
    with tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        lines = [line.strip(" │╭╮╰╯─") for line in out.read().splitlines()]
    said = [line for line in lines if any(c.isalnum() for c in line)]
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode, said[-1] if said else ""


def measure(label: str, args: list[str], roots: list[Path], runs: int, **env: str | None) -> None:
    """Run `vlcurate args` `runs` times per root, in turns, and print the medians."""
    walls: dict[Path, list[float]] = {r: [] for r in roots}
    cpus: dict[Path, list[float]] = {r: [] for r in roots}
    failed: dict[Path, str] = {}
    for _ in range(runs):
        for root in roots:
            if root in failed:
                continue
            wall, cpu, code, last = timed(VLCURATE + args, env_for(root, **env))
            if code != 0:
                failed[root] = f"failed (exit {code}): {last[:100]}"
            walls[root].append(wall)
            cpus[root].append(cpu)
    for root in roots:
        name = f" [{root.name}]" if len(roots) > 1 else ""
        if root in failed:
            print(f"{label}{name}: {failed[root]}")
        else:
            print(f"{label}{name}: {statistics.median(walls[root]):.2f} s wall, {statistics.median(cpus[root]):.2f} s CPU "
                  f"(median of {runs}; wall {min(walls[root]):.2f} to {max(walls[root]):.2f} s)")


def records(n: int) -> str:
    return "".join(
        json.dumps({"image_id": f"r{i}", "orig_cap": "A boat by a pier.", "caption": f"A blue boat number {i} by a pier.",
                    "image": f"https://example.org/{i}.jpg", "topic": "bench"}) + "\n"
        for i in range(n)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--items", type=int, default=1000, help="items in the benchmark's project")
    parser.add_argument("--root", type=Path, action="append", help="a checkout to time (repeat to compare); default this one")
    parser.add_argument("--no-embedded", action="store_true", help="skip the embedded-PostgreSQL case")
    args = parser.parse_args()
    roots = [r.resolve() for r in (args.root or [ROOT])]

    from scratch import scratch_database

    from tests.conftest import free_port, running

    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start; {args.runs} runs each")
    measure("vlcurate --help", ["--help"], roots, args.runs)

    with scratch_database() as (url, tmp):
        db = url.render_as_string(hide_password=False)
        local = {"DATABASE_URL": db, "VLCURATE_DATA_DIR": str(tmp / "data"), "VLCURATE_SECRET_KEY": "bench"}
        token = setup(db, tmp, args.items, local)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = [sys.executable, "-m", "uvicorn", "app.main:create_app", "--factory", "--host", "127.0.0.1", "--port", str(port),
                  "--log-level", "warning"]
        measure("project list, local database", ["project", "list"], roots, args.runs, **local)
        measure("splits --list, local database", ["splits", "bench", "--list"], roots, args.runs, **local)
        with running(server, base + "/healthz", env_for(ROOT, **local)):
            remote = ["--server", base, "--token", token]
            measure("project list --server", ["project", "list", *remote], roots, args.runs)
            measure("splits --list --server", ["splits", "bench", "--list", *remote], roots, args.runs)

    if not args.no_embedded:
        embedded(roots, args.runs)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def setup(db: str, tmp: Path, items: int, local: dict[str, str]) -> str:
    """An admin, their token and a WikiDO project of `items` items (image URLs: nothing to store)."""
    env = env_for(ROOT, **local)
    cli = VLCURATE
    subprocess.run(cli + ["user", "create", "bench-admin", "--role", "admin"], env=env, check=True, capture_output=True)
    token = subprocess.run(cli + ["token", "create", "bench-admin"], env=env, check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(cli + ["project", "create", "bench", "--workflow", "wikido.verify"], env=env, check=True, capture_output=True)
    (tmp / "items.jsonl").write_text(records(items))
    subprocess.run(cli + ["import", "bench", str(tmp / "items.jsonl")], env=env, check=True, capture_output=True)
    return token


def embedded(roots: list[Path], runs: int) -> None:
    """`project list` on the embedded PostgreSQL, first with no server running, then while `vlcurate serve` holds it."""
    from tests.conftest import free_port, running

    with tempfile.TemporaryDirectory() as tmp:
        env = {"DATABASE_URL": None, "VLCURATE_DATABASE_URL": None, "VLCURATE_DATA_DIR": str(Path(tmp) / "data"),
               "VLCURATE_SECRET_KEY": "bench"}
        cli = VLCURATE
        subprocess.run(cli + ["db", "upgrade"], env=env_for(ROOT, **env), check=True, capture_output=True)
        subprocess.run(cli + ["project", "create", "bench", "--workflow", "wikido.verify"], env=env_for(ROOT, **env), check=True,
                       capture_output=True)
        measure("project list, embedded PostgreSQL not running", ["project", "list"], roots, runs, **env)
        measure("splits --list, embedded PostgreSQL not running", ["splits", "bench", "--list"], roots, runs, **env)
        port = free_port()
        with running(cli + ["serve", "--port", str(port)], f"http://127.0.0.1:{port}/healthz", env_for(ROOT, **env)):
            measure("project list, embedded PostgreSQL held by `vlcurate serve`", ["project", "list"], roots, runs, **env)
            measure("splits --list, embedded PostgreSQL held by `vlcurate serve`", ["splits", "bench", "--list"], roots, runs, **env)


if __name__ == "__main__":
    main()
