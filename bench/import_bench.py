"""Import benchmark: `vlcurate import` of N small generic.choice records (default 100,000 and
1,000,000), and of the largest file with a bad record near its end, each in its own process,
which reports its time and peak RSS. Target: >= 50,000 records/s, peak RSS <= 500 MB at any size.

By default every record names the same image (the figure is parsing, validation and writing rows);
with `--images N` the records name N distinct photo-like pictures in turn (`--image-format`, at
`--image-size`), so that each is checked, hashed and stored once: the figure is the image work.

Uses DATABASE_URL when set, else the embedded PostgreSQL, and a scratch database it drops afterwards.

    python bench/import_bench.py [--records 100000 1000000] [--no-bad] [--format jsonl|json]
                                 [--images 5000 --image-format jpeg|png --image-size 640x480]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import sqlalchemy as sa
from scratch import scratch_database

from app.datasets.drawing import draw_shape  # noqa: E402
from app.db import session_factory, transaction  # noqa: E402
from app.services.projects import projects  # noqa: E402

# How far from the end the bad record is, and what is wrong with it.
BAD_FROM_END = 10
BAD = {"choices": "not-a-list"}


def child(project: str, path: str, images: str) -> None:
    """Run `vlcurate import` in this process and print its time, CPU time, exit status and peak RSS as JSON."""
    from app.cli import app

    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    # Without standalone mode, click returns the exit status of a command that fails (typer.Exit).
    code = app(["import", project, path, "--images", images], standalone_mode=False) or 0
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(json.dumps({"seconds": elapsed, "cpu": cpu, "db_cpu": database_cpu(), "exit": code,
                      "peak_mb": after.ru_maxrss / 1024, "start_mb": before.ru_maxrss / 1024}))


def database_cpu() -> float | None:
    """CPU seconds of the PostgreSQL backends serving the scratch database (the import's is still
    open in the command's pool), read from /proc; None when the server is not on this machine."""
    from app.db import get_engine
    from app.settings import get_settings

    with get_engine(get_settings()).connect() as conn:
        pids = conn.scalars(sa.text("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")).all()
    try:
        ticks = sum(sum(map(int, Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[11:13])) for pid in pids)
    except OSError:
        return None
    return ticks / os.sysconf("SC_CLK_TCK")


def write_images(folder: Path, n: int, fmt: str, size: tuple[int, int]) -> list[str]:
    """N distinct photo-like pictures (smooth colour fields with grain), their file names."""
    import io

    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    ext = "jpg" if fmt == "jpeg" else "png"
    names = []
    for i in range(n):
        smooth = Image.fromarray(rng.integers(0, 256, (6, 8, 3), dtype=np.uint8), "RGB").resize(size, Image.BICUBIC)
        grain = rng.integers(-12, 13, (size[1], size[0], 3), dtype=np.int16)
        pixels = np.clip(np.asarray(smooth, dtype=np.int16) + grain, 0, 255).astype(np.uint8)
        out = io.BytesIO()
        Image.fromarray(pixels, "RGB").save(out, fmt.upper(), **({"quality": 85} if fmt == "jpeg" else {}))
        names.append(f"img{i}.{ext}")
        (folder / names[-1]).write_bytes(out.getvalue())
    return names


def write_records(path: Path, n: int, bad_at: int | None = None, images: list[str] | None = None) -> None:
    """N records as JSONL, or as a JSON array for a .json path, written a record at a time (the
    benchmark itself holds none of them); they name `images` in turn (default: one image)."""
    array = path.suffix == ".json"
    images = images or ["img.png"]
    with path.open("w") as out:
        out.write("[\n" if array else "")
        for i in range(n):
            rec = {"id": f"r{i}", "image": images[i % len(images)], "question": f"Is record {i} fine?", "group_id": f"g{i % 97}"}
            if i == bad_at:
                rec.update(BAD)
            out.write(json.dumps(rec) + ("," if array and i < n - 1 else "") + "\n")
        out.write("]\n" if array else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--no-bad", action="store_true", help="Skip the file with a bad record near its end.")
    parser.add_argument("--format", choices=["jsonl", "json"], default="jsonl", help="JSON Lines, or one JSON array.")
    parser.add_argument("--images", type=int, default=0, help="Distinct images the records name in turn (default: one).")
    parser.add_argument("--image-format", choices=["jpeg", "png"], default="jpeg")
    parser.add_argument("--image-size", default="640x480", help="WIDTHxHEIGHT of each distinct image.")
    parser.add_argument("--child", nargs=3, metavar=("PROJECT", "FILE", "IMAGES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    with scratch_database() as (url, tmp):
        engine = sa.create_engine(url)
        sessions = session_factory(engine)
        # Every record names the same image: the figure is parsing, validation and writing rows.
        (tmp / "img.png").write_bytes(draw_shape("circle", (200, 30, 30), seed=0))
        image_size = tuple(int(v) for v in args.image_size.lower().split("x"))
        images = write_images(tmp, args.images, args.image_format, image_size) if args.images else None
        runs = [(n, None) for n in args.records]
        if not args.no_bad:
            runs.append((max(args.records), max(args.records) - BAD_FROM_END))
        env = {**os.environ, "DATABASE_URL": url.render_as_string(hide_password=False), "VLCURATE_DATA_DIR": str(tmp / "data")}
        worst = 0.0
        for n, bad_at in runs:
            with transaction(sessions) as s:
                spec = projects.StageSpec(workflow="generic.choice", config={"choices": ["yes", "no"]})
                name = f"bench {n} {'bad' if bad_at is not None else 'good'}"
                projects.create_project(s, name, [spec])
            path = tmp / f"records.{args.format}"
            write_records(path, n, bad_at, images)
            out = subprocess.run(
                [sys.executable, __file__, "--child", name, str(path), str(tmp)], env=env, capture_output=True, text=True
            )
            lines = out.stdout.strip().splitlines()
            if not lines or not lines[-1].startswith("{"):
                sys.exit(out.stdout + out.stderr)
            result = json.loads(lines[-1])
            worst = max(worst, result["peak_mb"])
            size = path.stat().st_size / 1e6
            # On a shared machine the wall time depends on the neighbours; the process's CPU time less so.
            db = f", database CPU {result['db_cpu']:.1f} s" if result["db_cpu"] is not None else ""
            rss = f"app CPU {result['cpu']:.1f} s{db}, peak RSS {result['peak_mb']:.0f} MB ({result['start_mb']:.0f} MB before the import)"
            if bad_at is None:
                if result["exit"] != 0:
                    sys.exit(out.stderr)
                with_images = f" naming {args.images:,} {args.image_format} images of {args.image_size}" if images else ""
                print(f"import: {n:,} records ({size:.0f} MB){with_images} in {result['seconds']:.2f} s "
                      f"({n / result['seconds']:,.0f} records/s), {rss}")
            else:
                said = [line.strip() for line in out.stderr.splitlines() if line.strip().startswith(("Error", "-"))]
                at = f"line {bad_at + 1:,}" if args.format == "jsonl" else f"record {bad_at + 1:,}"
                print(f"refuse: {n:,} records ({size:.0f} MB), bad record at {at}: exit {result['exit']} "
                      f"after {result['seconds']:.2f} s, {rss}; said: {' '.join(said)}")
            path.unlink()
        engine.dispose()
    print(f"peak RSS of any import: {worst:.0f} MB (target <= 500 MB: {'met' if worst <= 500 else 'NOT met'})")


if __name__ == "__main__":
    main()
