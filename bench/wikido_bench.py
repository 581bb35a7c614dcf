"""WikiDO benchmark: import a 384,000-record WikiDO-shaped JSONL (metadata only), then claim and render.

Records name their images by URL, as the published files do, so nothing is fetched or stored:
the figure is parsing, validation and writing rows (target: under 60 s). Then prints the
server time (Server-Timing) of claiming and of rendering the verify screen at that size, and
the peak memory of the process. Uses DATABASE_URL when set, else the embedded PostgreSQL, and
a scratch database it drops afterwards.

    python bench/wikido_bench.py [--records 384000] [--screens 100]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time

import sqlalchemy as sa
from scratch import BENCH_PASSWORD, claim, csrf, log_in, scratch_database, server_ms, summary

from app.db import session_factory, transaction  # noqa: E402
from app.services.imports import imports  # noqa: E402
from app.services.projects import projects  # noqa: E402
from app.services.users import users  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.storage import make_storage  # noqa: E402

WORDS = ("church nave built century stone tower painting portrait river bridge market dish served "
         "festival museum collection bronze statue garden palace harbour mountain village").split()
TOPICS = ["architecture", "paintings", "food", "medicine", "sports", "animals", "plants", "vehicles"]


def record(i: int, rnd: random.Random) -> dict:
    return {
        "image_id": i,
        "orig_cap": " ".join(rnd.choices(WORDS, k=40)).capitalize() + ".",
        "caption": " ".join(rnd.choices(WORDS, k=22)).capitalize() + ".",
        "image": f"https://upload.wikimedia.org/wikipedia/commons/{i % 16:x}/{i % 256:02x}/Image_{i}.jpg",
        "page_id": 10_000_000 + i,
        "page_title": f"Article {i}",
        "topic": TOPICS[i % len(TOPICS)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=384_000)
    parser.add_argument("--screens", type=int, default=100)
    args = parser.parse_args()

    rnd = random.Random(0)
    data = "\n".join(json.dumps(record(i, rnd)) for i in range(args.records)).encode()
    print(f"WikiDO-shaped JSONL: {args.records:,} records, {len(data) / 1e6:.0f} MB")
    with scratch_database() as (url, tmp):
        settings = Settings(database_url=url.render_as_string(hide_password=False), data_dir=tmp / "data")
        storage = make_storage(settings)
        engine = sa.create_engine(url)
        sessions = session_factory(engine)
        with transaction(sessions) as s:
            project_id = projects.create_project(s, "bench", [projects.StageSpec(workflow="wikido.verify")]).id
            stage_id = projects.stages_of(s, project_id)[0].id
            users.create_user(s, "bench", "annotator", BENCH_PASSWORD)
        started = time.perf_counter()
        with transaction(sessions) as s:
            result = imports.import_items(s, project_id, data, "val.jsonl", settings=settings, storage=storage)
        elapsed = time.perf_counter() - started
        del data
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"import: {result.created:,} records in {elapsed:.1f} s ({result.created / elapsed:,.0f} records/s); "
              f"target < 60 s: {'met' if elapsed < 60 else 'NOT met'}; peak RSS so far {peak:,.0f} MB")
        # What autovacuum does soon after a large import; index-only scans need the visibility map.
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(sa.text("VACUUM (ANALYZE) items"))
        engine.dispose()

        from fastapi.testclient import TestClient

        from app.main import create_app

        claim_ms, screen_ms, submit_ms = [], [], []
        with TestClient(create_app(settings)) as client:
            log_in(client, "bench")
            token = csrf(client.get(f"/stages/{stage_id}/annotate").text)
            for n in range(args.screens):
                claimed = claim(client, stage_id, token)
                claim_ms.append(server_ms(claimed))
                screen = client.get(claimed.headers["location"])
                assert screen.status_code == 200 and 'data-wikido' in screen.text
                screen_ms.append(server_ms(screen))
                form = {
                    "csrf_token": csrf(screen.text),
                    "idempotency_key": f"bench-{n}",
                    "verdict": "hallucinated" if n % 2 else "correct",
                    "caption": "A shorter caption.",
                }
                done = client.post(claimed.headers["location"] + "/submit", data=form, follow_redirects=False)
                assert done.status_code == 200 and 'data-wikido' in done.text, done.text[:500]  # the next screen
                submit_ms.append(server_ms(done))
    print(f"claim at {args.records:,} items (server time): {summary(claim_ms)}")
    print(f"verify screen, with its progress bar, at {args.records:,} items (server time): {summary(screen_ms)}")
    print(f"submit with server-side edits (server time): {summary(submit_ms)}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")


if __name__ == "__main__":
    main()
