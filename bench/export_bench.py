"""Export benchmark: 384,000 finalized WikiDO-shaped records to JSONL and to Parquet (and the
published layout), with a split definition holding out three topics. Each export runs in its own
process, which reports its peak RSS. Target: peak RSS under 300 MB (printed with the times).

    python bench/export_bench.py [--records 384000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import sqlalchemy as sa
from scratch import scratch_database

from app.db import session_factory, transaction  # noqa: E402
from app.services.exports import splits  # noqa: E402
from app.services.projects import projects  # noqa: E402

TOPICS = ["architecture", "paintings", "food", "medicine", "sports", "animals", "plants", "vehicles"]

ITEMS = sa.text(
    """
    INSERT INTO items (project_id, external_id, data, assets, stage_id, status, slots_left)
    SELECT :project, g::text,
           jsonb_build_object('id', g::text, 'image_id', g::text,
                              'orig_cap', 'The stone church nave was built in the ' || (g % 9 + 11) || 'th century; its tower and bridge face the market.',
                              'caption', 'A stone church ' || g || ' with a tall tower beside a river bridge.',
                              'image', 'https://upload.wikimedia.org/wikipedia/commons/' || to_hex(g % 16) || '/Image_' || g || '.jpg',
                              'page_id', 10000000 + g, 'page_title', 'Article ' || g, 'topic', (CAST(:topics AS text[]))[1 + g % 8]),
           '{}'::jsonb, :stage, CASE WHEN g % 10 = 9 THEN 'discarded' ELSE 'done' END, 0
    FROM generate_series(0, :n - 1) g
    """
)

RESULTS = sa.text(
    """
    INSERT INTO item_results (item_id, stage_id, payload, discard, source)
    SELECT i.id, :stage,
           CASE WHEN i.status = 'discarded' THEN '{"verdict": "wrong"}'::jsonb
                WHEN i.id % 2 = 0 THEN '{"verdict": "correct"}'::jsonb
                ELSE jsonb_build_object('verdict', 'hallucinated', 'caption', 'A stone church ' || i.external_id || ' with a tall tower.',
                                        'edits', jsonb_build_object('kind', 'deletion', 'distance', 3,
                                                 'ops', jsonb_build_array(jsonb_build_object('op', 'delete', 'i1', 9, 'i2', 12, 'j1', 9, 'j2', 9)))) END,
           i.status = 'discarded', 'auto'
    FROM items i WHERE i.project_id = :project
    """
)


def child(fmt: str, out: str) -> None:
    """Run one export in this process and print its time and peak RSS as JSON."""
    from app.services.exports import export
    from app.settings import get_settings
    from app.storage import make_storage

    settings = get_settings()
    sessions = session_factory(sa.create_engine(settings.database_url))
    with transaction(sessions) as s:
        project_id = projects.find_project(s, "WikiDO bench").id
        export_id = export.create_export(s, project_id, fmt, settings=settings, target=out).id
    started = time.perf_counter()
    manifest = export.run_export(sessions, make_storage(settings), settings, export_id)
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    size = sum(f["bytes"] for f in manifest["files"].values())
    print(json.dumps({"seconds": elapsed, "peak_mb": peak, "records": sum(manifest["splits"].values()), "bytes": size}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=384_000)
    parser.add_argument("--child", nargs=2, metavar=("FORMAT", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    with scratch_database() as (url, tmp):
        engine = sa.create_engine(url)
        sessions = session_factory(engine)
        started = time.perf_counter()
        with transaction(sessions) as s:
            project = projects.create_project(s, "WikiDO bench", [projects.StageSpec(workflow="wikido.verify")])
            stage_id = projects.stages_of(s, project.id)[0].id
            s.execute(ITEMS, {"project": project.id, "stage": stage_id, "n": args.records, "topics": TOPICS})
            s.execute(RESULTS, {"project": project.id, "stage": stage_id})
            s.execute(sa.text("UPDATE items SET stage_id = NULL WHERE project_id = :p"), {"p": project.id})
        print(f"{args.records:,} finalized records written in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        with transaction(sessions) as s:
            definition = splits.save_definition(s, project.id, {
                "ratios": {"train": 0.9, "validation": 0.05, "test": 0.05}, "seed": 0,
                "held_out": {"field": "topic", "values": ["food", "paintings", "medicine"], "split": "test_ood"},
            })
            counts = definition.counts
        print(f"split definition saved in {time.perf_counter() - started:.1f} s: {counts}")
        engine.dispose()

        env = {**os.environ, "DATABASE_URL": url.render_as_string(hide_password=False), "VLCURATE_DATA_DIR": str(tmp / "data")}
        worst = 0.0
        for fmt in ("jsonl", "parquet", "published"):
            out = subprocess.run([sys.executable, __file__, "--child", fmt, str(tmp / fmt)], env=env, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(out.stderr)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            worst = max(worst, result["peak_mb"])
            print(f"{fmt}: {result['records']:,} records in {result['seconds']:.1f} s "
                  f"({result['records'] / result['seconds']:,.0f}/s), {result['bytes'] / 1e6:.0f} MB written, peak RSS {result['peak_mb']:.0f} MB")
        print(f"peak RSS of any export: {worst:.0f} MB (target < 300 MB: {'met' if worst < 300 else 'NOT met'})")


if __name__ == "__main__":
    main()
