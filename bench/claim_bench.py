"""Queue benchmark: claims per second and latency at C concurrent clients, straight on the database.

Each client is a thread with its own connection, claiming as one of 8 annotators until the
stage is drained (overlap 1). Prints claims/s and p50/p99 latency. Uses DATABASE_URL when set,
else the embedded PostgreSQL, in a scratch database dropped afterwards.

    python bench/claim_bench.py [--items 20000] [--clients 32]
"""

from __future__ import annotations

import argparse
import threading
import time

import sqlalchemy as sa
from scratch import scratch_database

from app import queue  # noqa: E402
from app.db import session_factory, transaction  # noqa: E402
from app.models import Item, Stage, User, WorkspaceMember  # noqa: E402
from app.services.users.workspaces import default_workspace_id  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=32)
    args = parser.parse_args()
    with scratch_database() as (url, _):
        engine = sa.create_engine(url, pool_size=args.clients + 2)
        sessions = session_factory(engine)
        with transaction(sessions) as s:
            s.execute(sa.text("INSERT INTO projects (name) VALUES ('bench')"))
            stage = Stage(project_id=1, position=0, name="s", workflow="generic.choice", overlap=1, lease_seconds=600)
            s.add(stage)
            users = [User(username=f"u{i}", password_hash="x", role="annotator") for i in range(8)]
            s.add_all(users)
            s.flush()
            # Members of the default workspace, as `create_user` makes them (else every stage answers 404).
            s.add_all([WorkspaceMember(workspace_id=default_workspace_id(s), user_id=u.id, role="annotator") for u in users])
            s.execute(
                sa.insert(Item),
                [
                    {"project_id": 1, "external_id": str(i), "data": {}, "stage_id": stage.id, "slots_left": 1}
                    for i in range(args.items)
                ],
            )
            stage_id, user_ids = stage.id, [u.id for u in users]
        latencies: list[float] = []
        lock = threading.Lock()

        def client(user_id: int) -> None:
            mine = []
            while True:
                t0 = time.perf_counter()
                with transaction(sessions) as s:
                    claimed = queue.claim_next(s, stage_id, user_id)
                mine.append(time.perf_counter() - t0)
                if claimed is None:
                    break
            with lock:
                latencies.extend(mine)

        threads = [threading.Thread(target=client, args=(user_ids[i % 8],)) for i in range(args.clients)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
        engine.dispose()
    latencies.sort()
    p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000  # noqa: E731
    print(
        f"claim: {args.items:,} claims by {args.clients} clients in {elapsed:.2f} s "
        f"({args.items / elapsed:,.0f} claims/s), p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms"
    )


if __name__ == "__main__":
    main()
