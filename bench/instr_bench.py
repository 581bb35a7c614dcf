"""Instructions the server executes per annotation cycle, counted by valgrind's callgrind: a measure of
the hot path's CPU cost that does not move with the machine's load (wall-clock rates and CPU times on
a shared machine move by 20 % and more between runs of the same code; instruction counts repeat to
within 1 to 2 % between windows).

One `uvicorn app.main:serve_app` process (as `vlcurate serve --workers 1` runs it, uvloop and
httptools) runs under `valgrind --tool=callgrind --instr-atstart=no` on a scratch database with one
generic.choice stage; one client sends its requests one after another (no concurrency, so no lock
waits or scheduling in the count). Per mode, after `--warm-up` cycles uncounted, `callgrind_control`
switches counting on for `--cycles` cycles, off, and dumps; `--repeats` times:

- claim: POST /api/v1/stages/{id}/claim again and again (a bearer token; after the first claim the
  annotator gets their live lease back, as http_bench.py's claim mode);
- api: POST /api/v1/stages/{id}/claim, then POST /api/v1/assignments/{id}/submit;
- pages: POST /assignments/{id}/submit, the screen's plain form (cookie session, CSRF token),
  answered with the next item's screen, claimed and rendered in the same request.

It prints each window's instructions per cycle (all the server's threads: event loop, threadpool,
and anything that ran in the background meanwhile, which `--idle` seconds counted with no request
show; with `--idle`, each window is also given less that rate times its seconds, which takes the
machine's load out of the count: a slower cycle on a busy machine counts more idle work) and the
median. Read: thousands of instructions (kIr)
per cycle; two trees compared with the same command on the same machine (same Python and
libraries) differ by what their code executes. `--keep DIR` keeps the dumps for `callgrind_annotate
--inclusive=yes DIR/callgrind.out.*` (where the instructions go, per function).

    python bench/instr_bench.py [--modes claim,api,pages] [--cycles 50] [--warm-up 20] [--repeats 3] [--idle 0] [--keep DIR] [--bias]

With `--bias`, each mode runs on a stage with the draft-bias settings off, then on one with them on
(http_bench.BIAS_CONFIG), in the same server: what the arms and probes code adds to the hot path.

The server runs this file's tree. Uses DATABASE_URL's server when set, else an embedded PostgreSQL;
needs valgrind (callgrind_control on PATH). Slow: the server runs 50 to 100 times slower under it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg
from http_bench import BIAS_CONFIG, annotators, dsn, free_port, make_stage
from scratch import log_in

HERE = Path(__file__).resolve().parent
MODES = ("claim", "api", "pages")
_FIELD = re.compile(r'name="(csrf_token|idempotency_key|opened_at)" value="([^"]+)"')
_FORM = re.compile(r'action="/assignments/(\d+)/submit"')


class Counted:
    """The app's server process under callgrind, counting off until `window` switches it on."""

    def __init__(self, url, data_dir: Path, out: Path):
        self.port, self.out = free_port(), out
        argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}/callgrind.out.%p",
                sys.executable, "-m", "uvicorn", "app.main:serve_app", "--factory", "--port", str(self.port),
                "--no-access-log", "--log-level", "warning"]
        env = {**os.environ, "DATABASE_URL": url.render_as_string(hide_password=False), "VLCURATE_DATA_DIR": str(data_dir),
               "PYTHONPATH": f"{HERE.parent}{os.pathsep}{HERE.parent / 'client'}"}  # this tree's client models too
        self.log = (out / "server.log").open("wb")
        self.proc = subprocess.Popen(argv, env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=HERE.parent)
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=600)
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"the server exited: {(out / 'server.log').read_text()[-3000:]}")
            try:
                if self.client.get("/healthz").status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(1)
        raise SystemExit("the server did not start")

    def _control(self, *args: str) -> None:
        subprocess.run(["callgrind_control", *args, str(self.proc.pid)], check=True, capture_output=True)

    def window(self, run) -> tuple[int, float]:
        """Instructions the process executed while `run()` ran (counting on, then off, then dumped), and
        the seconds counting was on."""
        self._control("-z")
        self._control("-i", "on")
        start = time.monotonic()
        run()
        self._control("-i", "off")
        seconds = time.monotonic() - start
        before = set(self.out.glob("callgrind.out.*"))
        self._control("-d")
        dump = max(set(self.out.glob("callgrind.out.*")) - before, key=lambda p: p.stat().st_mtime)
        return int(re.search(r"^totals: (\d+)", dump.read_text(), re.M).group(1)), seconds

    def stop(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.wait(300)
        self.log.close()


def api_cycles(server: Counted, stage: int, token: str):
    headers = {"Authorization": f"Bearer {token}"}

    def run(n: int) -> None:
        for _ in range(n):
            claimed = server.client.post(f"/api/v1/stages/{stage}/claim", headers=headers)
            aid = claimed.json()["assignment_id"]
            body = {"payload": {"choice": "a"}, "idempotency_key": f"i{time.time_ns()}"}
            if server.client.post(f"/api/v1/assignments/{aid}/submit", headers=headers, json=body).status_code != 200:
                raise SystemExit("submit failed")

    return run


def claims(server: Counted, stage: int, token: str):
    headers = {"Authorization": f"Bearer {token}"}

    def run(n: int) -> None:
        for _ in range(n):
            if server.client.post(f"/api/v1/stages/{stage}/claim", headers=headers).status_code != 200:
                raise SystemExit("claim failed")

    return run


def page_cycles(server: Counted, stage: int, username: str):
    client = httpx.Client(base_url=server.client.base_url, timeout=600)  # its own cookies: one login per stage measured
    log_in(client, username)
    start = client.get(f"/stages/{stage}/annotate").text
    token = _FIELD.search(start).group(2)
    claimed = client.post(f"/stages/{stage}/annotate", data={"csrf_token": token}, follow_redirects=False)
    screen = [client.get(claimed.headers["location"]).text]

    def run(n: int) -> None:
        for _ in range(n):
            html = screen[0]
            form = {**dict(_FIELD.findall(html)), "choice": "a"}
            answer = client.post(f"/assignments/{_FORM.search(html).group(1)}/submit", data=form, headers={"Accept": "text/html"})
            if answer.status_code != 200 or not _FORM.search(answer.text):
                raise SystemExit(f"page submit failed: {answer.status_code} {answer.text[:500]}")
            screen[0] = answer.text

    return run


def measure(server: Counted, mode: str, run, args, idle_rate: float | None) -> None:
    run(args.warm_up)
    windows = [server.window(lambda: run(args.cycles)) for _ in range(args.repeats)]
    counts = [ir / args.cycles for ir, _ in windows]
    shown = ", ".join(f"{c / 1000:,.0f}" for c in counts)
    line = f"{mode}: {statistics.median(counts) / 1000:,.0f} kIr a cycle (median; windows: {shown})"
    if idle_rate is not None:  # what the server does with no request, at its rate, taken out
        net = [(ir - idle_rate * secs) / args.cycles for ir, secs in windows]
        line += (f"; less idle: {statistics.median(net) / 1000:,.0f} ({', '.join(f'{c / 1000:,.0f}' for c in net)};"
                 f" {statistics.median(secs for _, secs in windows) / args.cycles:.2f} s a cycle)")
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--cycles", type=int, default=50)
    parser.add_argument("--warm-up", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--idle", type=float, default=0, help="also count this many seconds with no request")
    parser.add_argument("--keep", type=Path, help="keep the callgrind dumps in this folder")
    parser.add_argument("--bias", action="store_true", help="each mode on a stage with the draft-bias settings off, then on")
    args = parser.parse_args()
    if not shutil.which("callgrind_control"):
        raise SystemExit("needs valgrind (callgrind_control on PATH)")
    from scratch import scratch_database

    items = (args.warm_up + args.cycles * args.repeats) * 2 + 10
    with scratch_database() as (url, tmp):
        with psycopg.connect(dsn(url), autocommit=True) as conn:
            stages = {"": make_stage(conn, "instr", items)[1]}
            if args.bias:  # the same counts on a stage with the draft-bias settings on
                stages = {" (bias off)": stages[""], " (bias on)": make_stage(conn, "instr-bias", items, config=BIAS_CONFIG)[1]}
            _, tokens = annotators(conn)
        out = args.keep or Path(tempfile.mkdtemp(prefix="instr_bench_"))
        out.mkdir(parents=True, exist_ok=True)
        server = Counted(url, tmp, out)
        try:
            idle_rate = None
            if args.idle:
                idle_ir, idle_seconds = server.window(lambda: time.sleep(args.idle))
                idle_rate = idle_ir / idle_seconds
                print(f"idle: {idle_rate / 1000:,.0f} kIr a second", flush=True)
            for mode in args.modes.split(","):
                for label, stage in stages.items():
                    run = {"claim": lambda: claims(server, stage, tokens[2]), "api": lambda: api_cycles(server, stage, tokens[0]),
                           "pages": lambda: page_cycles(server, stage, "bench1")}[mode]()
                    measure(server, mode + label, run, args, idle_rate)
        finally:
            server.stop()
            if not args.keep:
                shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
