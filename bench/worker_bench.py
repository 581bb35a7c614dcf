"""Worker benchmark: items per second for each suggestion backend, on this machine's device.

- image-text matching: CLIP from --clip DIR (a real local model), else a tiny random CLIP built
  here (then the figure is the pipeline's overhead, not a real model's speed);
- OCR: rapidocr on 480x360 posters with a slogan;
- text similarity: all-MiniLM-L6-v2 on WikiDO-length captions against their reference text.

Runs the producers directly (no database), as the suggest job does after loading its items.

    python bench/worker_bench.py [--items 64] [--clip DIR]
"""

from __future__ import annotations

import argparse
import io
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.datasets.colorswap.producers import colorswap_itm  # noqa: E402
from app.datasets.suggest import ItemInput  # noqa: E402
from app.datasets.visargs.demo import draw_poster  # noqa: E402
from app.datasets.visargs.producers import visargs_boxes  # noqa: E402
from app.datasets.wikido.producers import wikido_unsupported  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.worker import backends  # noqa: E402


def png(i: int) -> bytes:
    from PIL import Image

    img = Image.new("RGB", (512, 512), ((i * 37) % 256, (i * 91) % 256, (i * 53) % 256))
    out = io.BytesIO()
    img.save(out, "PNG")
    return out.getvalue()


def timed(name: str, items: int, unit: str, fn) -> None:
    fn()  # load the model once, as a worker does
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    print(f"{name}: {items / elapsed:,.1f} {unit}/s ({items} in {elapsed:.2f} s) on {backends.device()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=64)
    parser.add_argument("--clip", type=Path, default=None, help="local CLIP model directory")
    args = parser.parse_args()
    rnd = random.Random(0)

    with tempfile.TemporaryDirectory() as tmp:
        clip = args.clip
        if clip is None:
            from tests.worker.tiny_clip import save_tiny_clip

            clip = save_tiny_clip(Path(tmp) / "tiny-clip")
            print("image-text matching uses a tiny random CLIP (give --clip DIR for a real model's speed)")
        settings = Settings(clip_model_dir=clip, data_dir=Path(tmp))

        pairs = [
            ItemInput(i, {"id": str(i), "caption_1": "a red cat in a grey jacket", "caption_2": "a grey cat in a red jacket",
                          "candidates": [{} for _ in range(16)]},
                      {f"/candidates/{k}/image": png(i * 16 + k) for k in range(16)}, {})
            for i in range(max(1, args.items // 16))
        ]
        timed("colorswap.itm (16 candidates x 2 captions per pair)", len(pairs) * 16, "images",
              lambda: colorswap_itm(pairs, settings))

        posters = [
            ItemInput(i, {"id": str(i)}, {"/image": draw_poster("SAVE WATER", "circle", (40, 80, 220), i)},
                      {"visargs.premises": {"visual_premises": ["The words SAVE WATER", "A blue circle"]}})
            for i in range(max(1, args.items // 8))
        ]
        timed("visargs.boxes (OCR, 480x360 posters)", len(posters), "images", lambda: visargs_boxes(posters, settings))

        words = "church nave tower painting river bridge market museum statue garden palace harbour".split()
        captions = [
            ItemInput(i, {"caption": " ".join(rnd.choices(words, k=22)) + ".", "orig_cap": " ".join(rnd.choices(words, k=40)) + "."}, {}, {})
            for i in range(args.items)
        ]
        timed("wikido.unsupported (MiniLM, 22-word captions)", len(captions), "items", lambda: wikido_unsupported(captions, settings))


if __name__ == "__main__":
    main()
