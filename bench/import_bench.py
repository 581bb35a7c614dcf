"""Import benchmark: time to import N small generic.choice records (default 100,000).

Prints one line with the figure. Uses DATABASE_URL when set, else the embedded PostgreSQL,
and a scratch database it drops afterwards.

    python bench/import_bench.py [--records 100000]
"""

from __future__ import annotations

import argparse
import json
import time

import sqlalchemy as sa
from scratch import scratch_database

from app.datasets.drawing import draw_shape  # noqa: E402
from app.db import session_factory, transaction  # noqa: E402
from app.services import imports, projects  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.storage import LocalStorage  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    args = parser.parse_args()

    with scratch_database() as (url, tmp):
        settings = Settings(database_url=url.render_as_string(hide_password=False), data_dir=tmp)
        engine = sa.create_engine(url)
        sessions = session_factory(engine)
        with transaction(sessions) as s:
            spec = projects.StageSpec(workflow="generic.choice", config={"choices": ["yes", "no"]})
            pid = projects.create_project(s, "bench", [spec]).id
        # Every record names the same image: the figure is parsing, validation and writing rows.
        (tmp / "img.png").write_bytes(draw_shape("circle", (200, 30, 30), seed=0))
        data = "\n".join(
            json.dumps({"id": f"r{i}", "image": "img.png", "question": f"Is record {i} fine?", "group_id": f"g{i % 97}"})
            for i in range(args.records)
        ).encode()
        store = LocalStorage(tmp / "store")
        start = time.perf_counter()
        with transaction(sessions) as s:
            result = imports.import_items(
                s, pid, data, "bench.jsonl", settings=settings, storage=store,
                images=imports.ImageSource(settings, store, base=tmp),
            )
        elapsed = time.perf_counter() - start
        engine.dispose()
    print(f"import: {result.created:,} records in {elapsed:.2f} s ({result.created / elapsed:,.0f} records/s)")


if __name__ == "__main__":
    main()
