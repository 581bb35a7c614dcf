"""ColorSwap benchmark: import 1,000 pairs with 8 + 8 candidate images, then time the filter screen.

Prints the import time and the server time (the app's Server-Timing header) of the filter
screen per item: claim-and-redirect, and the screen itself with model scores for all 16
candidates. Target: the screen under 100 ms per item. Uses DATABASE_URL when set, else the
embedded PostgreSQL, and a scratch database it drops afterwards.

    python bench/colorswap_bench.py [--pairs 1000] [--screens 200]
"""

from __future__ import annotations

import argparse
import io
import json
import random
import time

import sqlalchemy as sa
from PIL import Image, ImageDraw
from scratch import (
    BENCH_PASSWORD,
    claim,
    csrf,
    log_in,
    p95,
    scratch_database,
    server_ms,
    summary,
)

from app.db import session_factory, transaction  # noqa: E402
from app.models import Item  # noqa: E402
from app.services.annotation import suggestions  # noqa: E402
from app.services.imports import imports  # noqa: E402
from app.services.projects import projects  # noqa: E402
from app.services.users import users  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.storage import make_storage  # noqa: E402


def candidate_png(pair: int, k: int, size: int = 128) -> bytes:
    """A distinct small image per candidate: two coloured shapes, like a colour-swap scene."""
    rnd = random.Random(pair * 100 + k)
    img = Image.new("RGB", (size, size), tuple(rnd.randint(200, 255) for _ in range(3)))
    d = ImageDraw.Draw(img)
    d.rectangle((10, 10, 70, 110), fill=tuple(rnd.randint(0, 255) for _ in range(3)))
    d.ellipse((60, 40, 120, 100), fill=tuple(rnd.randint(0, 255) for _ in range(3)))
    out = io.BytesIO()
    img.save(out, "PNG")
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--screens", type=int, default=200, help="filter screens to time")
    args = parser.parse_args()

    with scratch_database() as (url, tmp):
        settings = Settings(database_url=url.render_as_string(hide_password=False), data_dir=tmp / "data")
        storage = make_storage(settings)
        images = tmp / "images"
        images.mkdir()
        started = time.perf_counter()
        records = []
        for i in range(args.pairs):
            candidates = []
            for k in range(16):
                name = f"img_{i}_{k}.png"
                (images / name).write_bytes(candidate_png(i, k))
                candidates.append({"image": name, "from_caption": 1 + k // 8, "generator": "stable-diffusion"})
            records.append(
                {
                    "id": str(i),
                    "caption_1": f"a red cat number {i} in a grey jacket",
                    "caption_2": f"a grey cat number {i} in a red jacket",
                    "caption_source": ["rule-based", "handmade", "generated"][i % 3],
                    "image_source": "stable-diffusion",
                    "candidates": candidates,
                }
            )
        print(f"generated {args.pairs * 16:,} candidate images in {time.perf_counter() - started:.1f} s")

        engine = sa.create_engine(url)
        sessions = session_factory(engine)
        with transaction(sessions) as s:
            specs = [projects.StageSpec(workflow="colorswap.filter"), projects.StageSpec(workflow="colorswap.recaption")]
            project_id = projects.create_project(s, "bench", specs).id
            stage_id = projects.stages_of(s, project_id)[0].id
            users.create_user(s, "bench", "annotator", BENCH_PASSWORD)
        data = "\n".join(json.dumps(r) for r in records).encode()
        started = time.perf_counter()
        with transaction(sessions) as s:
            result = imports.import_items(
                s, project_id, data, "pairs.jsonl", settings=settings, storage=storage,
                images=imports.ImageSource(settings, storage, base=images),
            )
        elapsed = time.perf_counter() - started
        print(f"import: {result.created:,} pairs, {result.images:,} images in {elapsed:.2f} s "
              f"({result.created / elapsed:,.0f} pairs/s, {result.images / elapsed:,.0f} images/s)")

        # Model scores for every candidate, as the worker stores them: the screen shows them all.
        rnd = random.Random(0)
        with transaction(sessions) as s:
            for item_id in s.scalars(sa.select(Item.id).where(Item.project_id == project_id)):
                scores = [[round(rnd.random(), 3), round(rnd.random(), 3)] for _ in range(16)]
                suggestions.store(s, item_id, stage_id, "colorswap.itm", "clip-bench", {"scores": scores})
        engine.dispose()

        from fastapi.testclient import TestClient

        from app.main import create_app

        claim_ms, screen_ms = [], []
        with TestClient(create_app(settings)) as client:
            log_in(client, "bench")
            token = csrf(client.get(f"/stages/{stage_id}/annotate").text)
            for n in range(min(args.screens, args.pairs)):
                claimed = claim(client, stage_id, token)
                claim_ms.append(server_ms(claimed))
                screen = client.get(claimed.headers["location"])
                assert screen.status_code == 200 and screen.text.count('class="candidate"') == 16
                screen_ms.append(server_ms(screen))
                form = {
                    "csrf_token": csrf(screen.text),
                    "idempotency_key": f"bench-{n}",
                    "choice_1": "0",
                    "choice_2": "8",
                }
                client.post(claimed.headers["location"] + "/submit", data=form, follow_redirects=False)

    print(f"claim (server time): {summary(claim_ms)}")
    print(f"filter screen, 16 candidates with scores (server time): {summary(screen_ms)}"
          f" over {len(screen_ms)} items; target p95 < 100 ms: {'met' if p95(screen_ms) < 100 else 'NOT met'}")


if __name__ == "__main__":
    main()
