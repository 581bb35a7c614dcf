"""HTTP benchmark of the annotation hot path: vlcurate `serve` against the bare stack, side by side.

Starts bench/bare_app.py (the fastest FastAPI + async psycopg stack we can write: see its docstring) and `vlcurate serve
--workers 1` and `--workers 2` on one scratch database, drives each with the same external load
generator (wrk, one annotator token per connection, bench/http_bench.lua), and prints the ratios:

- claim: POST /api/v1/stages/{id}/claim again and again (after its first claim an annotator gets
  their live lease back, the path a client that lost the answer takes);
- fresh: claim, then release the item, and again: claims/s, each of a fresh item (the honest
  claim figure: a fresh claim does the full SKIP LOCKED pick);
- cycle: claim, then submit the item (generic.choice), and again: items/s;
- each with the CPU ms a request (claim) or an item (fresh, cycle) took in the server's processes
  and in the database's backends (steadier than the rates on a shared machine);
- bias (`--bias`): claim and cycle on a stage with the draft-bias settings on (BIAS_CONFIG) and on one
  with them off, one `vlcurate serve --workers 1`, the two stages measured in turn `--bias-rounds` times
  so that the machine's ups and downs weigh on both alike: each one's median rate and CPU ms, and on / off;
- matrix: one client on stages of each size N at 0 % and at 90 % done (all the stages in one
  database; each 90 % written in one transaction over 32 annotators with autovacuum off; all rows
  measured right after the writes, no ANALYZE): p50 of claim, the annotation screen (with "you did N" and
  the stage's progress bar), submit, the project's progress (API), the project page and its
  progress fragment (the page's poll). The rows are measured in turn, a few cycles each, so that the
  machine's own ups and downs weigh on every row alike; it prints each column's spread (slowest
  row over fastest) and whether every column stays within 20 %.

    python bench/http_bench.py [--clients 32] [--seconds 10] [--throughput-items 200000]
                               [--matrix 10000,1000000,10000000] [--matrix-cycles 200] [--matrix-rounds 10]
                               [--skip-throughput] [--modes claim,fresh,cycle] [--workers 1,2] [--bias] [--bias-rounds 5]

Uses DATABASE_URL's server when set, else an embedded PostgreSQL; needs `wrk` on PATH
(Debian: apt-get install wrk). Load generator and servers share the machine: say how many cores.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg
from scratch import BENCH_PASSWORD, log_in, scratch_database
from server_cpu import measured

from app import security  # noqa: E402

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
ANNOTATORS = 32
MODES = ("claim", "fresh", "cycle")
MATRIX = ("claim", "screen", "submit", "progress", "page", "fragment")  # the matrix's columns
# The draft-bias settings `--bias` turns on (docs/draft-bias.md): half the assignments in the control arm,
# a probe on half the gold ones. Its stages have no gold item: the hot path is the ordinary item's.
BIAS_CONFIG = {"draft_control_share": 0.5, "draft_control_seed": 7, "probe_share": 0.5, "probe_action": "review"}


def dsn(url) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def make_stage(conn, name: str, items: int, overlap: int = 1, config: dict | None = None) -> tuple[int, int]:
    """A project with one generic.choice stage of `items` items (`config`: more settings); (project id, stage id)."""
    project = conn.execute("INSERT INTO projects (name) VALUES (%s) RETURNING id", (name,)).fetchone()[0]
    stage = conn.execute(
        "INSERT INTO stages (project_id, position, name, workflow, overlap, lease_seconds, config)"
        " VALUES (%s, 0, 's', 'generic.choice', %s, 3600, %s) RETURNING id",
        (project, overlap, json.dumps({"choices": ["a", "b"], **(config or {})})),
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO items (project_id, external_id, data, stage_id, status, slots_left)"
        " SELECT %s, g::text, jsonb_build_object('image', 'i' || g || '.png', 'question', 'Which?'), %s, 'active', %s"
        " FROM generate_series(1, %s) g",
        (project, stage, overlap, items),
    )
    return project, stage


def annotators(conn) -> tuple[list[int], list[str]]:
    ids, tokens = [], []
    password = security.hash_password(BENCH_PASSWORD)
    for i in range(ANNOTATORS):
        uid = conn.execute(
            "INSERT INTO users (username, password_hash, role) VALUES (%s, %s, 'annotator') RETURNING id", (f"bench{i}", password)
        ).fetchone()[0]
        # A member of the default workspace, as `create_user` makes one (else every stage answers 404).
        conn.execute("INSERT INTO workspace_members (workspace_id, user_id, role) VALUES (default_workspace_id(), %s, 'annotator')", (uid,))
        plain, digest = security.new_api_token()
        conn.execute("INSERT INTO api_tokens (user_id, name, token_hash) VALUES (%s, 'bench', %s)", (uid, digest))
        ids.append(uid)
        tokens.append(plain)
    return ids, tokens


def finish_most(conn, stage: int, fraction: float, users: list[int]) -> None:
    """Mark the first `fraction` of the stage's items done in one transaction, as 32 annotators'
    submits would leave them (assignment, annotation, final record), with autovacuum held off."""
    n = conn.execute("SELECT count(*) FROM items WHERE stage_id = %s", (stage,)).fetchone()[0]
    cutoff = conn.execute(
        "SELECT id FROM items WHERE stage_id = %s ORDER BY id OFFSET %s LIMIT 1", (stage, int(n * fraction))
    ).fetchone()[0]
    conn.execute(
        """
        WITH a AS (
            INSERT INTO assignments (item_id, stage_id, annotator_id, status, lease_until, submitted_at)
            SELECT i.id, i.stage_id, (%(users)s::int[])[1 + i.id %% %(n)s], 'submitted', now(), now()
            FROM items i WHERE i.stage_id = %(stage)s AND i.status = 'active' AND i.id < %(cutoff)s
            RETURNING id, item_id, stage_id, annotator_id
        ), an AS (
            INSERT INTO annotations (assignment_id, item_id, stage_id, annotator_id, revision, idempotency_key, payload)
            SELECT id, item_id, stage_id, annotator_id, 1, 'bulk-' || id, '{"choice": "a"}' FROM a
        ), r AS (
            INSERT INTO item_results (item_id, stage_id, payload, source) SELECT item_id, stage_id, '{"choice": "a"}', 'auto' FROM a
        )
        UPDATE items SET status = 'done', slots_left = 0 FROM a WHERE items.id = a.item_id
        """,
        {"users": users, "n": len(users), "stage": stage, "cutoff": cutoff},
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(port: int, proc: subprocess.Popen, path: str = "/openapi.json") -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server on port {port} exited with {proc.returncode}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", path)
            c.getresponse().read()
            return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"server on port {port} did not start")


class Server:
    def __init__(self, argv: list[str], env: dict[str, str], port: int, probe: str, cwd: Path = HERE.parent):
        self.port = port
        self.log = Path(tempfile.mkstemp(prefix="http_bench_", suffix=".log")[1])
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(argv, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT, cwd=cwd)
        wait_up(port, self.proc, probe)

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.unlink(missing_ok=True)


def bare_server(url, stage: int) -> Server:
    port = free_port()
    argv = [PYTHON, "-m", "uvicorn", "bare_app:app", "--app-dir", str(HERE), "--port", str(port), "--loop", "uvloop",
            "--http", "httptools", "--no-access-log", "--log-level", "warning"]
    return Server(argv, {"BARE_DSN": dsn(url), "BARE_STAGE": str(stage)}, port, "/openapi.json")


def vlcurate_server(url, workers: int, data_dir: Path) -> Server:
    port = free_port()
    argv = [PYTHON, "-c", "from app.cli import main; main()", "serve", "--port", str(port), "--workers", str(workers)]
    # The server reads its API's schemas from this checkout's client package too, not from an installed one.
    env = {"DATABASE_URL": url.render_as_string(hide_password=False), "VLCURATE_DATA_DIR": str(data_dir),
           "PYTHONPATH": os.pathsep.join((str(HERE.parent), str(HERE.parent / "client")))}
    return Server(argv, env, port, "/healthz")


def wrk(port: int, mode: str, stage: int, tokens_file: Path, clients: int, seconds: int) -> dict:
    out = subprocess.run(
        ["wrk", "-t", str(clients), "-c", str(clients), "-d", f"{seconds}s", "--latency", "-s", str(HERE / "http_bench.lua"),
         f"http://127.0.0.1:{port}", "--", mode, str(stage), str(tokens_file)],
        capture_output=True, text=True,
    )
    if out.returncode:
        raise SystemExit(f"wrk failed: {out.stdout[-2000:]} {out.stderr[-2000:]}")
    out = out.stdout
    result = json.loads(out.split("RESULT ", 1)[1].splitlines()[0])
    result["units"] = result["requests"] if mode == "claim" else result["items"]
    result["rate"] = result["units"] / result["seconds"]
    return result


def page_cookie(port: int, username: str) -> str:
    """A logged-in page session for `username` (password BENCH_PASSWORD): its Cookie header."""
    with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
        log_in(client, username)
        return "; ".join(f"{k}={v}" for k, v in client.cookies.items())


def one_client(port: int, token: str, cookie: str, project: int, stage: int, n: int, first: int = 0) -> dict[str, list[float]]:
    """Request times (ms) for one client over n cycles: claim and submit (API), the annotation screen
    (the page an annotator opens for the claimed item, with its stage's bar), and every fifth cycle
    (counting from `first`) the project's progress (API), project page and its progress fragment
    (the page's 10 s poll)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    api = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    page = {"Cookie": cookie}
    fragment = {**page, "HX-Request": "true", "HX-Target": "progress"}
    times: dict[str, list[float]] = {k: [] for k in MATRIX}

    def call(kind: str, method: str, path: str, headers: dict, body: dict | None = None):
        t0 = time.perf_counter()
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        r = conn.getresponse()
        data = r.read()
        times[kind].append((time.perf_counter() - t0) * 1000)
        if r.status >= 400:
            raise SystemExit(f"{method} {path}: {r.status} {data[:300]!r}")
        return json.loads(data) if data and headers is api else None

    for i in range(first, first + n):
        claimed = call("claim", "POST", f"/api/v1/stages/{stage}/claim", api)
        if claimed is None:
            break
        call("screen", "GET", f"/assignments/{claimed['assignment_id']}", page)
        call("submit", "POST", f"/api/v1/assignments/{claimed['assignment_id']}/submit", api,
             {"payload": {"choice": "a"}, "idempotency_key": f"m{stage}-{i}-{time.time_ns()}"})
        if i % 5 == 0:
            call("progress", "GET", f"/api/v1/projects/{project}", api)
            call("page", "GET", f"/projects/{project}", page)
            call("fragment", "GET", f"/projects/{project}", fragment)
    conn.close()
    return times


MATRIX_TABLES = ("items", "assignments", "annotations", "item_results")
WARM_UP = 10  # cycles per size and level before the measured ones


def matrix(conn, url, data_dir: Path, sizes: list[int], users: list[int], tokens: list[str], cycles: int, rounds: int) -> None:
    """The one-client matrix: two stages of each size, all in one database; 90 % of one of each is
    written (largest first; autovacuum off on the tables throughout, no ANALYZE after the writes),
    the other is left at 0 % done. Right after the writes (a CHECKPOINT, then WARM_UP cycles on each
    stage), the six rows are measured in turn, `rounds` times `cycles / rounds` cycles each, so that
    what the machine does meanwhile weighs on every row alike; each column's spread is its largest
    p50 over its smallest.

    Measured at 0 % before the writes and at 90 % after them instead, the two levels were half an
    hour apart with a 10M stage, and the machine's pace moved more than the rows differed: every
    column 10 % slower at 0 % than at 90 % in one run, 40 % in another, on every size alike (and
    the bare stack's own claim by 12 % and 22 % between the same rounds)."""
    rows_stages: dict[tuple[int, int], tuple[int, int]] = {}
    for size in sizes:
        for done in (0, 90):
            t0 = time.perf_counter()
            rows_stages[size, done] = make_stage(conn, f"m{size}-{done}", size)
            print(f"stage of {size:,} items written in {time.perf_counter() - t0:.0f} s", flush=True)
    conn.execute("ANALYZE")
    for table in MATRIX_TABLES:
        conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
    for size in sorted(sizes, reverse=True):
        t0 = time.perf_counter()
        finish_most(conn, rows_stages[size, 90][1], 0.9, users)
        print(f"90 % of a {size:,} items stage written in {time.perf_counter() - t0:.0f} s", flush=True)
    # The writes' dirty pages are flushed first, so that a checkpoint they start does not fall on the
    # measurement (no statistics are taken: no ANALYZE).
    conn.execute("CHECKPOINT")
    server = vlcurate_server(url, 1, data_dir)
    order = [(size, done) for done in (0, 90) for size in sizes]
    times: dict[tuple[int, int], dict[str, list[float]]] = {row: {k: [] for k in MATRIX} for row in order}
    try:
        cookie = page_cookie(server.port, "bench0")
        for row in order:  # a few cycles first: the server's first requests on a stage are not its usual ones
            one_client(server.port, tokens[0], cookie, *rows_stages[row], WARM_UP, first=-WARM_UP)
        per_round = max(1, cycles // rounds)
        for r in range(rounds):
            for row in order:
                try:
                    got = one_client(server.port, tokens[0], cookie, *rows_stages[row], per_round, first=r * per_round)
                except SystemExit:
                    print(server.tail())
                    raise
                for k, v in got.items():
                    times[row][k] += v
    finally:
        server.stop()
        for table in MATRIX_TABLES:
            conn.execute(f"ALTER TABLE {table} RESET (autovacuum_enabled)")
    rows = [(size, done, {k: statistics.median(v) for k, v in times[size, done].items() if v}) for size, done in order]
    print(f"\none client, `serve --workers 1`; p50 ms of {cycles} cycles per row, the rows measured in turn "
          f"({rounds} rounds), right after the 90 % were written, no ANALYZE")
    print(f"{'items':>10} {'done':>5} " + " ".join(f"{k:>8}" for k in MATRIX))
    for size, done, r in rows:
        print(f"{size:>10,} {done:>4}% " + " ".join(f"{r[k]:>8.1f}" for k in MATRIX))
    spread = {k: max(r[k] for *_, r in rows) / min(r[k] for *_, r in rows) for k in MATRIX}
    print(f"{'spread':>16} " + " ".join(f"{100 * (v - 1):>7.0f}%" for v in spread.values()))
    worst = max(spread, key=spread.get)
    verdict = "met" if spread[worst] <= 1.2 else "not met"
    print(f"every column within 20 % from the fastest row to the slowest: {verdict} (widest: {worst}, {100 * (spread[worst] - 1):.0f} %)")


def bias_rounds(conn, url, data_dir: Path, tokens_file: Path, args) -> None:
    """Claim and cycle on a stage with the draft-bias settings on and one with them off, in turn on one server."""
    stages = {"off": make_stage(conn, "bias-off", args.throughput_items)[1],
              "on": make_stage(conn, "bias-on", args.throughput_items, config=BIAS_CONFIG)[1]}
    conn.execute("ANALYZE")
    runs: dict[tuple[str, str], list[dict]] = {}
    server = vlcurate_server(url, 1, data_dir)
    try:
        for _ in range(args.bias_rounds):
            for mode in ("claim", "cycle"):
                for setting, stage in stages.items():
                    runs.setdefault((mode, setting), []).append(measured(
                        lambda: wrk(server.port, mode, stage, tokens_file, args.clients, args.seconds), server.proc.pid, conn))
    finally:
        server.stop()
    print(f"\ndraft-bias settings on ({json.dumps(BIAS_CONFIG)}) and off: {args.bias_rounds} rounds of {args.seconds} s, "
          f"{args.clients} clients, workers 1 (medians)")
    print(f"{'measure':<8} {'settings':<9} {'rate/s':>9} {'rates':>13} {'p50 ms':>8} {'app ms':>7} {'db ms':>6} {'on/off':>7}")
    for (mode, setting), got in runs.items():
        med = {k: statistics.median(r[k] for r in got) for k in ("rate", "p50_ms", "app_ms", "db_ms")}
        spread = f"{min(r['rate'] for r in got):,.0f}-{max(r['rate'] for r in got):,.0f}"
        off = statistics.median(r["rate"] for r in runs[mode, "off"])
        ratio = f"{100 * med['rate'] / off:.1f}%" if setting == "on" else ""
        print(f"{mode:<8} {setting:<9} {med['rate']:>9,.0f} {spread:>13} {med['p50_ms']:>8.1f} {med['app_ms']:>7.2f} {med['db_ms']:>6.2f} "
              f"{ratio:>7}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--throughput-items", type=int, default=200_000)
    parser.add_argument("--workers", default="1,2", help="vlcurate serve --workers values to measure")
    parser.add_argument("--matrix", default="10000,1000000", help="stage sizes for the one-client matrix ('' for none)")
    parser.add_argument("--matrix-cycles", type=int, default=200, help="cycles per stage size and progress")
    parser.add_argument("--matrix-rounds", type=int, default=10, help="turns the sizes take, each of matrix-cycles / rounds cycles")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--modes", default=",".join(MODES), help="throughput measures to run (of claim,fresh,cycle)")
    parser.add_argument("--bias", action="store_true", help="claim and cycle with the draft-bias settings on against off")
    parser.add_argument("--bias-rounds", type=int, default=5, help="turns the two stages take")
    args = parser.parse_args()
    if shutil.which("wrk") is None and not args.skip_throughput:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    workers = [int(w) for w in args.workers.split(",") if w]
    modes = [m for m in args.modes.split(",") if m]
    if not set(modes) <= set(MODES):
        raise SystemExit(f"--modes: choose among {', '.join(MODES)}")
    sizes = [int(s) for s in args.matrix.split(",") if s]
    print(f"machine: {os.cpu_count()} cores; load generator and servers on the same machine", flush=True)
    with scratch_database() as (url, tmp), psycopg.connect(dsn(url), autocommit=True) as conn:
        users, tokens = annotators(conn)
        tokens_file = tmp / "tokens.txt"
        tokens_file.write_text("\n".join(tokens) + "\n")
        conn.execute("CREATE TABLE bare_submits (id bigserial PRIMARY KEY, item_id bigint, payload jsonb)")
        rows: list[tuple[str, str, dict]] = []
        if not args.skip_throughput:
            _, bare_stage = make_stage(conn, "bare", args.throughput_items)
            _, tp_stage = make_stage(conn, "throughput", args.throughput_items)
            conn.execute("ANALYZE")
            bare = bare_server(url, bare_stage)
            try:
                for mode in modes:
                    rows.append((mode, "bare", measured(lambda: wrk(bare.port, mode, bare_stage, tokens_file, args.clients, args.seconds),
                                                        bare.proc.pid, conn)))
            finally:
                bare.stop()
            for w in workers:
                server = vlcurate_server(url, w, tmp / "data")
                try:
                    for mode in modes:
                        rows.append((mode, f"workers {w}", measured(
                            lambda: wrk(server.port, mode, tp_stage, tokens_file, args.clients, args.seconds), server.proc.pid, conn)))
                        if rows[-1][2]["errors"]:
                            print(f"{mode}, workers {w}: {rows[-1][2]['errors']} errors; the server's log ends:\n{server.tail()}")
                finally:
                    server.stop()
            print(f"\n{args.clients} clients, {args.seconds} s each, stage of {args.throughput_items:,} items")
            print(f"{'measure':<8} {'server':<10} {'rate/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7} {'ratio':>7} {'app ms':>7} {'db ms':>6}")
            base = {mode: r["rate"] for mode, who, r in rows if who == "bare"}
            for mode, who, r in rows:
                print(f"{mode:<8} {who:<10} {r['rate']:>9,.0f} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} {r['errors']:>7} "
                      f"{100 * r['rate'] / base[mode]:>6.1f}% {r['app_ms']:>7.2f} {r['db_ms']:>6.2f}", flush=True)
        if args.bias:
            bias_rounds(conn, url, tmp / "data", tokens_file, args)
        if sizes:
            matrix(conn, url, tmp / "data", sizes, users, tokens, args.matrix_cycles, args.matrix_rounds)

if __name__ == "__main__":
    main()
