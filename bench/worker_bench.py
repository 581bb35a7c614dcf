"""Worker benchmark: each suggestion producer against its bare model, in the same run, on this machine's device.

- image-text matching (`colorswap.itm`, `wikido.itm`, `visargs.regions`): the producer (PNG
  decode, the CLIP processor, the model, the scores) against the same model's image tower on
  ready tensors, images/s, at each precision. `--model vit-b16|vit-l14` builds a full-size
  randomly initialised CLIP of that shape (the compute of the real model); `--model DIR` loads a
  real one;
- OCR (`visargs.boxes`, 480x360 posters): the producer against the engine called on decoded arrays;
- text similarity (`wikido.unsupported`): the producer against MiniLM's `encode` of the same texts;
- one whole `suggest` job through the queue on a scratch database (import, then a worker runs
  it): its time against the producer's on the same items.

Each figure is the best of `--repeats` interleaved runs (a shared machine's neighbours slow
runs unevenly), with the CPU seconds this process spent in that run and their ratio (bare /
producer: the producer's own extra work, which neighbours disturb less than wall time); one line
per producer and precision ends with `ratio N %`, the producer's throughput over the bare model's.

    python bench/worker_bench.py [--model vit-b16] [--precisions fp32,bf16] [--images N] [--repeats 3]
                                 [--batch N] [--compile] [--skip ocr,minilm,job]
"""

from __future__ import annotations

import argparse
import io
import json
import math
import random
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from app.datasets.colorswap.producers import colorswap_itm  # noqa: E402
from app.datasets.suggest import ItemInput  # noqa: E402
from app.datasets.visargs.demo import draw_poster  # noqa: E402
from app.datasets.visargs.producers import visargs_boxes, visargs_regions, windows  # noqa: E402
from app.datasets.wikido.producers import phrases, wikido_itm, wikido_unsupported  # noqa: E402
from app.datasets.wikido.tokenedits import tokenize  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.worker import backends  # noqa: E402

ARCH_NAMES = {"vit-b16": "ViT-B/16", "vit-l14": "ViT-L/14"}
# The texts the CLIP producers score here; their words are single tokens of the random model's
# vocabulary, as in a real CLIP's, so that the text tower does the real model's work.
CAPTIONS = ("a red cat {i} in a grey jacket", "a grey cat {i} in a red jacket", "a stone church {i} by a river",
            "The words SAVE WATER", "A blue circle {i}")


def scene_png(seed: int, size: int = 512) -> bytes:
    """A generated-looking scene: a gradient, a few coloured shapes and sensor-like noise (a PNG
    that costs what a real candidate image costs to decode, unlike a flat colour)."""
    rnd = random.Random(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    base = np.stack([x * rnd.randint(60, 255), y * rnd.randint(60, 255), (1 - x) * rnd.randint(60, 255)], axis=-1)
    img = Image.fromarray(base.astype(np.uint8))
    d = ImageDraw.Draw(img)
    for _ in range(4):
        x0, y0 = rnd.randint(0, size // 2), rnd.randint(0, size // 2)
        box = (x0, y0, x0 + rnd.randint(size // 8, size // 2), y0 + rnd.randint(size // 8, size // 2))
        fill = tuple(rnd.randint(0, 255) for _ in range(3))
        (d.ellipse if rnd.random() < 0.5 else d.rectangle)(box, fill=fill)
    noisy = np.asarray(img, dtype=np.int16) + np.random.default_rng(seed).integers(-12, 13, (size, size, 3))
    out = io.BytesIO()
    Image.fromarray(noisy.clip(0, 255).astype(np.uint8)).save(out, "PNG")
    return out.getvalue()


class Best:
    """The shortest of repeated timings of each named measurement, with the CPU seconds this
    process spent in that run (on a shared machine the neighbours stretch wall time, not those)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def time(self, name: str, fn, *, sync=None) -> None:
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        if sync:
            sync()
        elapsed = time.perf_counter() - start
        if elapsed < self.seconds.get(name, math.inf):
            self.seconds[name], self.cpu[name] = elapsed, time.process_time() - cpu

    def line(self, label: str, unit: str, n: int, producer: str, bare: str, bare_name: str) -> str:
        """Throughput of the producer and of its bare model, the ratio of the CPU seconds they took and,
        last, the ratio of their throughputs."""
        p, b, pc, bc = self.seconds[producer], self.seconds[bare], self.cpu[producer], self.cpu[bare]
        return (f"{label}: producer {n / p:,.2f} {unit}/s, {bare_name} {n / b:,.2f} {unit}/s ({n} {unit}; "
                f"CPU {pc:.1f} s vs {bc:.1f} s, {100 * bc / pc:.0f} %), ratio {100 * b / p:.0f} %")


def clip_benchmarks(args, settings: Settings, model_name: str) -> None:
    import torch

    dev = backends.device()
    n = args.images
    pool = [scene_png(i) for i in range(min(n, 64))]
    pairs = [
        ItemInput(i, {"id": str(i), "caption_1": CAPTIONS[0].format(i=i), "caption_2": CAPTIONS[1].format(i=i), "candidates": [{}] * 16},
                  {f"/candidates/{k}/image": pool[(i * 16 + k) % len(pool)] for k in range(16)}, {})
        for i in range(max(1, n // 16))
    ]
    fits = [ItemInput(i, {"caption": CAPTIONS[2].format(i=i)}, {"/image": pool[i % len(pool)]}, {}) for i in range(n)]
    per_poster = len(windows(480, 360))
    posters = [
        ItemInput(i, {"id": str(i)}, {"/image": draw_poster("SAVE WATER", "circle", (40, 80, 220), i)},
                  {"visargs.premises": {"visual_premises": [CAPTIONS[3], CAPTIONS[4].format(i=i)]}})
        for i in range(max(1, round(n / per_poster)))
    ]
    producers = [  # name, images, the producer on the items
        ("colorswap.itm", len(pairs) * 16, lambda cfg, k=None: colorswap_itm(pairs[:k], cfg, backends)),
        ("wikido.itm", len(fits), lambda cfg, k=None: wikido_itm(fits[:k], cfg, backends)),
        ("visargs.regions", len(posters) * per_poster, lambda cfg, k=None: visargs_regions(posters[:k], cfg, backends)),
    ]
    scores: dict[str, list[float]] = {}
    for precision in args.precisions:
        cfg = settings.model_copy(update={"worker_precision": precision})
        model = backends.image_text_for(cfg)
        size = model.processor.image_processor.crop_size
        ready = torch.rand((model.image_batch, 3, size["height"], size["width"]), device=model.device)
        sync = torch.cuda.synchronize if model.device == "cuda" else None

        def bare(count: int, model=model, ready=ready) -> None:
            with torch.inference_mode(), backends.autocast(model.device, model.dtype):
                for start in range(0, count, model.image_batch):
                    model.model.get_image_features(pixel_values=ready[: min(model.image_batch, count - start)])

        bare(model.image_batch)  # first calls (and compiling) are not the model's speed
        for name, _, run in producers:
            first = run(cfg, 1)
            if name == "colorswap.itm":
                scores[model.precision] = [s for p in first for row in p.payload["scores"] for s in row]
        best = Best()
        for _ in range(args.repeats):
            for name, count, run in producers:
                best.time(f"bare {name}", lambda count=count: bare(count), sync=sync)
                best.time(name, lambda run=run: run(cfg))
        for name, count, _ in producers:
            label = f"{name} {model.precision} {dev} {model_name} batch {model.image_batch}"
            print(best.line(label, "images", count, name, f"bare {name}", "bare image tower"), flush=True)
    for precision, found in scores.items():
        if precision != "fp32" and "fp32" in scores:
            gap = max(abs(a - b) for a, b in zip(scores["fp32"], found, strict=True))
            print(f"colorswap.itm scores {precision} within {gap:.4f} of fp32 ({model_name}, {len(found)} scores)", flush=True)


def ocr_benchmark(args, settings: Settings) -> None:
    posters = [
        ItemInput(i, {"id": str(i)}, {"/image": draw_poster("SAVE WATER", "circle", (40, 80, 220), i)},
                  {"visargs.premises": {"visual_premises": ["The words SAVE WATER", "A blue circle"]}})
        for i in range(args.posters)
    ]
    arrays = [np.asarray(backends.open_image(p.images["/image"])) for p in posters]
    engine = backends._ocr_engine()
    engine(arrays[0])
    best = Best()
    for _ in range(args.repeats):
        best.time("bare", lambda: [engine(a) for a in arrays])
        best.time("producer", lambda: visargs_boxes(posters, settings, backends))
    print(best.line(f"visargs.boxes OCR {backends.device()} 480x360 posters", "images", len(posters), "producer", "bare", "bare engine"),
          flush=True)


def minilm_benchmark(args, settings: Settings) -> None:
    rnd = random.Random(0)
    # Made-up words from syllables, so that phrases rarely repeat (as in WikiDO's captions): the
    # producer embeds each distinct text once, and repeats would flatter it.
    syllables = "ba ko ri ten sul mar vo len dra pi que tor ash bel nim ca".split()
    nouns = list({"".join(rnd.choices(syllables, k=rnd.randint(2, 3))) for _ in range(3000)})
    joins = ["in", "with", "on", "near", "by", "of", "and"]

    def sentence(words: int) -> str:
        out = ["A", rnd.choice(nouns)]
        while len(out) < words:
            out += [rnd.choice(joins), "the", rnd.choice(nouns), rnd.choice(nouns)]
        return " ".join(out) + "."

    captions = [ItemInput(i, {"caption": sentence(22), "orig_cap": f"{sentence(20)} {sentence(20)}"}, {}, {}) for i in range(args.captions)]
    # The texts the producer embeds: each caption's phrases and each reference's sentences, once each.
    texts = []
    for item in captions:
        tokens = tokenize(item.data["caption"])
        texts += [" ".join(t.text for t in tokens[a:b]) for a, b in phrases(item.data["caption"])]
        texts += [s for s in re.split(r"(?<=[.!?;])\s+", item.data["orig_cap"]) if s.strip()]
    distinct = list(dict.fromkeys(texts))
    model = backends.text_similarity()
    model.embed(distinct[:8])
    best = Best()
    for _ in range(args.repeats):
        best.time("bare", lambda: model.model.encode(distinct, normalize_embeddings=True, convert_to_numpy=True, batch_size=64))
        best.time("producer", lambda: wikido_unsupported(captions, settings, backends))
    print(best.line(f"wikido.unsupported MiniLM {backends.device()} ({len(distinct)} texts)", "items", len(captions), "producer", "bare",
                    "bare encode"), flush=True)


def job_benchmark(args, settings: Settings) -> None:
    """One colorswap.itm job through the queue on a scratch database, run by a `vlcurate worker`
    process (its model loaded by a first, one-item job), against the producer alone on the same items."""
    import os
    import subprocess

    import sqlalchemy as sa
    from scratch import scratch_database

    from app.db import get_engine, session_factory, transaction
    from app.models import JobRun, Suggestion
    from app.services.imports import imports
    from app.services.projects import projects
    from app.storage import make_storage
    from app.worker import jobs, runtime, suggest_batch

    pairs = max(1, args.images // 16)
    with scratch_database() as (url, tmp):
        cfg = settings.model_copy(update={"database_url": url.render_as_string(hide_password=False), "data_dir": tmp / "data"})
        storage = make_storage(cfg)
        sessions = session_factory(get_engine(cfg))
        folder = tmp / "images"
        folder.mkdir()
        records = []
        for i in range(pairs + 1):  # the first pair loads the worker's model
            for k in range(16):
                (folder / f"{i}_{k}.png").write_bytes(scene_png(1000 + i * 16 + k))
            records.append({"id": f"pair-{i}", "caption_1": CAPTIONS[0].format(i=i), "caption_2": CAPTIONS[1].format(i=i),
                            "caption_source": "rule-based", "image_source": "stable-diffusion",
                            "candidates": [{"image": f"{i}_{k}.png", "from_caption": 1 + k // 8, "generator": "sd"} for k in range(16)]})
        with transaction(sessions) as s:
            project = projects.create_project(s, "bench", [projects.StageSpec(workflow="colorswap.filter")])
            body = "\n".join(json.dumps(r) for r in records).encode()
            imports.import_items(s, project.id, body, "r.jsonl", settings=cfg, storage=storage, images=imports.ImageSource(cfg, storage, base=folder))
        runtime.configure(cfg)
        with transaction(sessions) as s:
            (all_items,) = jobs.missing_batches(s, cfg, project_id=project.id)
            warm = jobs.Batch(all_items.stage_id, all_items.kind, all_items.item_ids[:1])
            batch = jobs.Batch(all_items.stage_id, all_items.kind, all_items.item_ids[1:])
            inputs = suggest_batch.load_inputs(s, storage, batch.stage_id, batch.item_ids, True)
        best = Best()
        colorswap_itm(inputs[:1], cfg, backends)
        for _ in range(args.repeats):  # the job's work in this process (reads, producer, one write) against the producer's
            best.time("producer", lambda: colorswap_itm(inputs, cfg, backends))
            best.time("compute", lambda: suggest_batch.compute_suggestions(batch.stage_id, batch.kind, batch.item_ids))

        root = Path(__file__).resolve().parent.parent
        env = {**os.environ, "PYTHONPATH": str(root), "DATABASE_URL": cfg.database_url, "VLCURATE_DATA_DIR": str(cfg.data_dir),
               "VLCURATE_CLIP_MODEL_DIR": str(cfg.clip_model_dir), "VLCURATE_WORKER_PRECISION": cfg.worker_precision,
               "VLCURATE_WORKER_IMAGE_BATCH": str(cfg.worker_image_batch), "VLCURATE_WORKER_COMPILE": str(cfg.worker_compile).lower()}
        cli = "import sys; from app.cli import main; sys.argv[0] = 'vlcurate'; sys.exit(main())"
        worker = subprocess.Popen([sys.executable, "-c", cli, "worker", "--queues", "suggest"], cwd=root, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        queue = jobs.make_app(cfg)

        def run(b: jobs.Batch) -> float:
            """Queue the batch and wait for its job; returns the job's own time (the worker's job_runs row)."""
            with transaction(sessions) as s:
                s.execute(sa.delete(Suggestion).where(Suggestion.item_id.in_(b.item_ids)))
            with queue.open():
                (job_id,) = jobs.defer_batches(queue, [b])
            while True:
                with transaction(sessions) as s:
                    status = s.scalar(sa.text("SELECT status::text FROM procrastinate_jobs WHERE id = :id"), {"id": job_id})
                    run = s.get(JobRun, job_id)
                    if status in ("succeeded", "failed") and run is not None and run.finished_at is not None:
                        if status == "failed":
                            raise RuntimeError(f"the job failed: {run.error}")
                        return (run.finished_at - run.started_at).total_seconds()
                if worker.poll() is not None:
                    raise RuntimeError(f"the worker exited: {worker.stderr.read()[-2000:]}")
                time.sleep(0.05)

        try:
            run(warm)
            for _ in range(args.repeats):
                start = time.perf_counter()
                inside = run(batch)
                through = time.perf_counter() - start
                if through < best.seconds.get("through", math.inf):
                    best.seconds["through"], best.seconds["job"] = through, inside
        finally:
            worker.terminate()
            worker.wait(30)
        with transaction(sessions) as s:
            stored = s.scalar(sa.select(sa.func.count()).select_from(Suggestion).where(Suggestion.item_id.in_(batch.item_ids)))
        assert stored == pairs, f"the job stored {stored} of {pairs} suggestions"
        job, through, producer, compute = (best.seconds[k] for k in ("job", "through", "producer", "compute"))
        print(f"suggest job (colorswap.itm, {pairs} pairs, {pairs * 16} images): the producer alone {producer:.2f} s; the job's work "
              f"(reads, producer, one write) {compute:.2f} s, its other costs {100 * (compute - producer) / producer:.0f} % of the "
              f"producer's time; through the queue in a worker process {through:.2f} s from defer to done (the job itself {job:.2f} s)",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="vit-b16", help="vit-b16, vit-l14 (full-size, randomly initialised) or a local CLIP directory")
    parser.add_argument("--precisions", default=None, help="comma-separated: fp32,bf16,fp16 (default fp32,bf16)")
    parser.add_argument("--images", type=int, default=None, help="images per CLIP measurement (default 16 on CPU, 4096 on CUDA)")
    parser.add_argument("--posters", type=int, default=8, help="posters per OCR measurement")
    parser.add_argument("--captions", type=int, default=256, help="captions per MiniLM measurement")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=0, help="images per forward pass (default: the worker's choice for the device)")
    parser.add_argument("--compile", action="store_true", help="torch.compile the image tower (VLCURATE_WORKER_COMPILE)")
    parser.add_argument("--skip", default="", help="comma-separated parts to leave out: clip,ocr,minilm,job")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    args.precisions = (args.precisions or "fp32,bf16").split(",")
    args.images = args.images or (4096 if backends.device() == "cuda" else 16)

    with tempfile.TemporaryDirectory() as tmp:
        if args.model in ARCH_NAMES:
            from tests.worker.tiny_clip import save_full_size_clip

            started = time.perf_counter()
            model_dir = save_full_size_clip(Path(tmp) / args.model, args.model, words=re.findall(r"[a-z]+", " ".join(CAPTIONS).lower()))
            model_name = ARCH_NAMES[args.model]
            print(f"{model_name}: full-size CLIP, randomly initialised (built in {time.perf_counter() - started:.0f} s)", flush=True)
        else:
            model_dir, model_name = Path(args.model), Path(args.model).name
        settings = Settings(clip_model_dir=model_dir, data_dir=Path(tmp) / "data", worker_image_batch=args.batch,
                            worker_compile=args.compile)
        if "clip" not in skip:
            clip_benchmarks(args, settings, model_name)
        if "ocr" not in skip:
            ocr_benchmark(args, settings)
        if "minilm" not in skip:
            minilm_benchmark(args, settings)
        if "job" not in skip:
            job_benchmark(args, settings.model_copy(update={"worker_precision": "auto"}))


if __name__ == "__main__":
    main()
