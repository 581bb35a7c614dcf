"""Client benchmark: push N WikiDO records (with --images, each with its own PNG) through the Python client and pull N finals back,
against a real server process on a scratch database; prints records/s and the client's peak RSS, for
N = 10,000 and 100,000 (flat RSS means memory does not grow with N), and the CPU time the server
process and its PostgreSQL backends spent on each record (less sensitive than wall time to what
else the machine runs).

The client runs in its own process that imports only `vlcurate`, so its RSS is the client's alone.

    python bench/client_bench.py [--records 10000,100000] [--images] [--batch N] [--phases push,pull,dataset] [--profile DIR]

With --images every record carries a distinct small PNG inline (as a Dataset's Image column holds it),
so the push uploads N images and the Dataset pull downloads them.

With --profile, py-spy samples the server during each phase and writes its collapsed stacks to
DIR/<phase>-<N>.txt (py-spy must be installed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def png(i: int) -> bytes:
    """A distinct 8x8 PNG for record i (its pixels spell i), made without Pillow."""
    import struct
    import zlib

    rows = b"".join(b"\x00" + bytes((i >> (8 * (k % 3))) & 255 for k in range(24)) for _ in range(8))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def records(n: int, images: bool):
    """N WikiDO-shaped records; with `images`, each with its own PNG inline ({"bytes", "path"})."""
    for i in range(n):
        image = {"bytes": png(i), "path": f"img/{i}.png"} if images else f"https://example.org/{i}.jpg"
        yield {"image_id": f"r{i}", "caption": f"A photo of record number {i} on a bench.", "image": image, "topic": "bench"}


def child(url: str, token: str, project: int, n: int, batch: int, phase: str) -> None:
    """Push or pull in this process and print one JSON line: seconds and peak RSS."""
    sys.path.insert(0, str(ROOT / "client"))
    from vlcurate import Client

    with_images = phase.endswith("+images")
    phase = phase.removesuffix("+images")
    with Client(url, token, timeout=600) as client:
        start = time.perf_counter()
        if phase == "push":
            done = client.push_records(project, records(n, with_images), batch_size=batch or None, progress=False).created
        elif phase == "pull":
            done = sum(1 for _ in client.final_records(project))
        else:
            done = client.finals(project).num_rows
        elapsed = time.perf_counter() - start
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across exec. RssAnon is the
    # memory the process holds itself, without the pages of files it maps (a Dataset's Arrow files).
    status = {line.split(":")[0]: line.split()[1] for line in Path("/proc/self/status").read_text().splitlines()
              if line.startswith(("VmHWM:", "RssAnon:"))}
    print(json.dumps({"n": done, "seconds": elapsed, "peak_mb": int(status["VmHWM"]) / 1024, "anon_mb": int(status["RssAnon"]) / 1024}))


def run_child(*args: str, server: int | None = None, profile: Path | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'client'}"}
    where = profile / f"{args[-1]}-{args[3]}.txt" if profile is not None and server is not None else None
    with spying(server, where):
        out = subprocess.run([sys.executable, __file__, "--child", *args], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def spying(pid: int | None, out: Path | None):
    """py-spy samples process `pid` and its children while the block runs and writes their collapsed
    stacks to `out` (nothing when `out` is None): the threads holding the GIL, that is where the
    Python CPU goes (with BENCH_SPY_ALL=1 every thread, waits included)."""
    if pid is None or out is None:
        yield
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    spy = subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--subprocesses", "--format", "raw", "--nonblocking",
                            *([] if os.environ.get("BENCH_SPY_ALL") else ["--gil"]),
                            "-r", "200", "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)  # attached before the phase starts
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)  # py-spy writes its file when interrupted
        spy.wait(30)


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """User + system CPU seconds of each process still running, from /proc."""
    seconds = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seconds[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return seconds


def measured(phase, server: int, engine) -> dict:
    """Run a phase; add the server's and the database backends' CPU seconds it took."""
    import sqlalchemy as sa

    def pids() -> list[int]:
        with engine.connect() as conn:
            query = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            return [server, *conn.scalars(sa.text(query))]

    before = cpu_seconds(pids())
    result = phase()
    after = cpu_seconds(pids())
    result["server_cpu"] = after.get(server, 0) - before.get(server, 0)
    result["db_cpu"] = sum(v - before.get(p, 0) for p, v in after.items() if p != server)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", default="10000,100000")
    parser.add_argument("--batch", type=int, default=0, help="records a request; default the client's")
    parser.add_argument("--images", action="store_true", help="each record with its own PNG: pushed, and pulled in the Dataset")
    parser.add_argument("--phases", default="push,pull,dataset", help="which of push, pull and dataset to run (a pull needs the push)")
    parser.add_argument("--profile", type=Path, help="write py-spy's collapsed stacks of the server per phase here")
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        url, token, project, n, batch, phase = args.child
        child(url, token, int(project), int(n), int(batch), phase)
        return

    sys.path.insert(0, str(ROOT / "bench"))
    sys.path.insert(0, str(ROOT))
    import sqlalchemy as sa
    from scratch import scratch_database

    from app.db import session_factory, transaction
    from app.services.projects import projects
    from app.services.users import users
    from tests.conftest import free_port, running

    for n in [int(x) for x in args.records.split(",")]:
        with scratch_database() as (url, tmp):
            db = url.render_as_string(hide_password=False)
            engine = sa.create_engine(url)
            sessions = session_factory(engine)
            with transaction(sessions) as s:
                admin = users.create_user(s, "bench-admin", "admin", "bench password 123")
                token = users.create_token(s, admin)[1]
                spec = projects.StageSpec(workflow="wikido.verify")
                pid = projects.create_project(s, f"client-bench-{n}", [spec]).id
            port = free_port()
            env = {**os.environ, "DATABASE_URL": db, "VLCURATE_DATA_DIR": str(tmp / "data"), "VLCURATE_SECRET_KEY": "bench",
                   "PYTHONPATH": f"{ROOT}:{ROOT / 'client'}"}
            base = f"http://127.0.0.1:{port}"
            cmd = [sys.executable, "-m", "uvicorn", "app.main:create_app", "--factory", "--host", "127.0.0.1", "--port", str(port),
                   "--log-level", "warning"]
            with running(cmd, base + "/healthz", env) as server:
                spied = {"server": server.pid, "profile": args.profile}

                def phase(name: str) -> dict:
                    name += "+images" if args.images else ""
                    return measured(lambda: run_child(base, token, str(pid), str(n), str(args.batch), name, **spied), server.pid, engine)

                wanted = args.phases.split(",")
                results = {"push": phase("push")}
                with transaction(sessions) as s:  # every item finished, as if annotated
                    s.execute(sa.text("UPDATE items SET status = 'done' WHERE project_id = :p"), {"p": pid})
                for name in ("pull", "dataset"):
                    if name in wanted:
                        results[name] = phase(name)
            engine.dispose()
        what = " with images" if args.images else ""
        names = {"push": f"push records{what}", "pull": "pull finals (JSON lines)", "dataset": f"pull finals as a Dataset{what}"}
        for key, r in results.items():
            name = names[key]
            print(f"client {name}: {r['n']:,} in {r['seconds']:.2f} s ({r['n'] / r['seconds']:,.0f} records/s), "
                  f"peak client RSS {r['peak_mb']:.0f} MB ({r['anon_mb']:.0f} MB its own at the end); CPU a record: server {r['server_cpu'] * 1e6 / r['n']:.1f} µs, "
                  f"database {r['db_cpu'] * 1e6 / r['n']:.1f} µs")


if __name__ == "__main__":
    main()
