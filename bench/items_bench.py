"""Items page benchmark: one page of a large project's items for each filter (stage, status, annotator,
text), the first page and one deep in the project, between two other projects' items. Prints the
median time of each query. Target: every filtered page well under 100 ms, flat with project size
(text search is the exception: a scan of the project's items until a page is found).

    python bench/items_bench.py [--items 400000]
"""

from __future__ import annotations

import argparse
import statistics
import time

import sqlalchemy as sa
from scratch import scratch_database

from app.db import session_factory, transaction  # noqa: E402
from app.services.imports import items  # noqa: E402
from app.services.projects import projects  # noqa: E402

ITEMS = sa.text(
    """
    INSERT INTO items (project_id, external_id, data, assets, stage_id, status, slots_left)
    SELECT :project, 'it-' || g,
           jsonb_build_object('id', 'it-' || g, 'image', 'images/' || g || '.png',
                              'question', CASE WHEN g = :needle THEN 'Is the heron asleep?' ELSE 'Which shape is shown, number ' || g || '?' END),
           '{}'::jsonb,
           CASE WHEN g % 100 < 70 THEN :first WHEN g % 100 < 90 THEN :second ELSE NULL END,
           CASE WHEN g % 100 = 0 THEN 'review' WHEN g % 100 < 90 THEN 'active' WHEN g % 100 < 99 THEN 'done' ELSE 'discarded' END,
           1
    FROM generate_series(0, :n - 1) g
    """
)

ASSIGNMENTS = sa.text(
    """
    INSERT INTO assignments (item_id, stage_id, annotator_id, status, lease_until)
    SELECT id, :first, CASE WHEN id % 4000 = 0 THEN :rare ELSE :busy END, 'submitted', now()
    FROM items WHERE project_id = :project AND (id % 3 = 0 OR id % 4000 = 0)
    """
)


def make_project(sessions, name: str, n: int) -> tuple[int, list[int]]:
    with transaction(sessions) as s:
        spec = projects.StageSpec(workflow="generic.choice", config={"choices": ["a", "b"]})
        project = projects.create_project(s, name, [spec, spec.model_copy(update={"name": "second"})])
        stages = [st.id for st in projects.stages_of(s, project.id)]
        s.execute(ITEMS, {"project": project.id, "n": n, "first": stages[0], "second": stages[1], "needle": n // 2})
        return project.id, stages


def timed(sessions, project_id: int, f: items.ItemFilter, after: int | None) -> tuple[float, int]:
    runs = []
    for _ in range(5):
        with transaction(sessions) as s:
            start = time.perf_counter()
            page = items.list_items(s, project_id, f, after=after)
            runs.append((time.perf_counter() - start) * 1000)
    return statistics.median(runs), len(page.rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=400_000)
    args = parser.parse_args()
    with scratch_database() as (url, _):
        engine = sa.create_engine(url)
        sessions = session_factory(engine)
        make_project(sessions, "before", args.items // 2)
        project_id, (first, second) = make_project(sessions, "measured", args.items)
        make_project(sessions, "after", args.items // 2)
        with transaction(sessions) as s:
            from app.services.users.users import create_user

            busy, rare = (create_user(s, n, "annotator", "bench password 123").id for n in ("busy", "rare"))
            s.execute(ASSIGNMENTS, {"project": project_id, "first": first, "busy": busy, "rare": rare})
            middle = s.scalar(sa.text("SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY id) FROM items WHERE project_id = :p"), {"p": project_id})
        with engine.begin() as conn:
            conn.execute(sa.text("ANALYZE"))
        cases = {
            "no filter": items.ItemFilter(),
            "stage 2 (20 %)": items.ItemFilter(stage_id=second),
            "status review (1 %)": items.ItemFilter(status="review"),
            "stage 1 + active (69 %)": items.ItemFilter(stage_id=first, status="active"),
            "stage 2 + review (none)": items.ItemFilter(stage_id=second, status="review"),
            "annotator, 33 % of items": items.ItemFilter(annotator_id=busy),
            "annotator, 0.03 % of items": items.ItemFilter(annotator_id=rare),
            "text, common": items.ItemFilter(text="shape"),
            "text, one item": items.ItemFilter(text="heron"),
        }
        print(f"{args.items:,} items in the project, {args.items:,} in two others")
        for name, f in cases.items():
            ms_first, n_first = timed(sessions, project_id, f, None)
            ms_deep, n_deep = timed(sessions, project_id, f, middle)
            print(f"{name:28} first page {ms_first:7.1f} ms ({n_first} rows)   from the middle {ms_deep:7.1f} ms ({n_deep} rows)")
        engine.dispose()


if __name__ == "__main__":
    main()
