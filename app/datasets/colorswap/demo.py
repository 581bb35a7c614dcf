"""The ColorSwap dataset's demo: caption pairs over drawn scenes, with candidates a painter got right or wrong."""

from __future__ import annotations

import random
from pathlib import Path

from PIL import Image, ImageDraw

from app.datasets.colorswap.schema import ITM_KIND
from app.datasets.dataset import DemoProject, DemoStage, DemoSuggestion
from app.datasets.drawing import COLOURS, png

COLORSWAP_FILTER_GUIDELINES = """Each pair has two captions whose colour words are swapped. Look at **all** images:
an image drawn from caption 1 may fit caption 2 better.

* Type the image's number to choose it for the caption marked "choosing"; caption 2 comes next.
  Caption 1's pick is framed blue, caption 2's orange, like their boxes.
* **C** switches caption, **N** says no image fits (the pair is discarded), **Z** undoes.
* The arrows move a dashed frame over the images; **F** (or a click) shows the framed one at full
  size (**+**/**−** zoom, **Esc** closes). **Enter** submits, **S** skips.
"""
COLORSWAP_RECAPTION_GUIDELINES = """Rewrite both captions so that they read naturally and describe the
images more specifically, e.g. *a red circle inside a blue square* → *a small red disc sits in the middle
of a blue tile*. Keep the same words in both captions with the colour words exchanged: the check under
the captions tells you when the pair is valid.
"""

# Scenes for the ColorSwap demo: a caption template over colours A and B, and how to draw it.
SCENES = [
    "a {a} circle inside a {b} square",
    "a {a} triangle above a {b} bar",
    "a {a} square to the left of a {b} circle",
]


def draw_scene(scene: int, a: tuple[int, int, int], b: tuple[int, int, int], seed: int, size: int = 320) -> bytes:
    """Draw SCENES[scene] with colour a for the first object and b for the second."""
    rnd = random.Random(seed)
    img = Image.new("RGB", (size, size), tuple(rnd.randint(215, 250) for _ in range(3)))
    d = ImageDraw.Draw(img)
    j = lambda: rnd.randint(-12, 12)  # noqa: E731 - a little jitter so candidates differ
    if scene == 0:
        d.rectangle((50 + j(), 50 + j(), 270 + j(), 270 + j()), fill=b)
        r = rnd.randint(45, 70)
        d.ellipse((160 - r + j(), 160 - r + j(), 160 + r, 160 + r), fill=a)
    elif scene == 1:
        x = 160 + j()
        d.polygon([(x, 40 + j()), (x - 70, 170), (x + 70, 170)], fill=a)
        d.rectangle((40 + j(), 200 + j(), 280 + j(), 250), fill=b)
    else:
        d.rectangle((30 + j(), 110 + j(), 140 + j(), 220 + j()), fill=a)
        r = rnd.randint(45, 60)
        d.ellipse((230 - r, 165 - r + j(), 230 + r, 165 + r), fill=b)
    return png(img)


def _pairs(n: int, seed: int) -> list[tuple[int, list[str], tuple[str, str], list[tuple[int, tuple[str, str]]]]]:
    """Per pair: its scene, its two captions, caption 1's colours (a, b), and the plan of each
    candidate (the caption it was drawn from, the colours it was painted in). Like a real image
    model, the painter sometimes swaps the colours (drawing the other caption) or gets one wrong;
    every fourth pair has no image that fits caption 2, so it should be discarded."""
    rnd = random.Random(seed)
    names = list(COLOURS)
    pairs = []
    for i in range(n):
        scene = i % len(SCENES)
        a, b = rnd.sample(names, 2)
        other = rnd.choice([c for c in names if c not in (a, b)])
        captions = [SCENES[scene].format(a=a, b=b), SCENES[scene].format(a=b, b=a)]
        fits_2 = (b, a) if i % 4 != 3 else (other, a)
        plans = [
            (1, (a, b)), (1, fits_2), (1, (a, other)),  # drawn from caption 1
            (2, fits_2), (2, (b, other)), (2, (a, b)),  # drawn from caption 2
        ]
        rnd.shuffle(plans)
        pairs.append((scene, captions, (a, b), plans))
    return pairs


def colorswap_records(folder: Path, n: int, seed: int) -> list[dict]:
    """Caption pairs with candidates drawn from each caption (see `_pairs`)."""
    sources = ["rule-based", "handmade", "generated"]
    records = []
    for i, (scene, captions, _, plans) in enumerate(_pairs(n, seed)):
        candidates = []
        for k, (from_caption, (x, y)) in enumerate(plans):
            name = f"colorswap_{seed}_{i:03d}_{k}.png"
            (folder / name).write_bytes(draw_scene(scene, COLOURS[x], COLOURS[y], seed * 10000 + i * 10 + k))
            candidates.append({"image": name, "from_caption": from_caption, "generator": f"painter-{'ab'[k % 2]}"})
        records.append(
            {
                "id": str(i + 1),
                "caption_1": captions[0],
                "caption_2": captions[1],
                "caption_source": sources[i % len(sources)],
                "image_source": f"painter-{'ab'[i % 2]}",
                "candidates": candidates,
            }
        )
    return records


def colorswap_suggestions(records: list[dict], seed: int) -> list[DemoSuggestion]:
    """Image-text scores as a CLIP model gives them (about 0.2 to 0.33), from the colours each
    candidate was painted in: each colour in its caption's place adds to the score, and an image
    drawn from the caption a little more. The preselection is right where an image fits; where
    none fits caption 2 it is a guess between two half-right images, flagged as close."""
    rnd = random.Random(seed + 1)
    out = []
    for record, (_, _, (a, b), plans) in zip(records, _pairs(len(records), seed), strict=True):
        scores = [
            [round(0.2 + 0.05 * (x == p) + 0.05 * (y == q) + 0.02 * (source == n) + rnd.uniform(0, 0.009), 5)
             for n, (p, q) in ((1, (a, b)), (2, (b, a)))]
            for source, (x, y) in plans
        ]
        ranked = sorted((s[0] for s in scores), reverse=True)
        out.append(DemoSuggestion("filter", record["id"], ITM_KIND, {"scores": scores}, round(ranked[0] - ranked[1], 5)))
    return out


DEMOS = (
    DemoProject(
        "Demo: ColorSwap",
        "Twelve colour-swap caption pairs with drawn candidate images: choose the image for each "
        "caption (or discard the pair), then rewrite the rule-based captions.",
        (DemoStage("colorswap.filter", "filter", COLORSWAP_FILTER_GUIDELINES),
         DemoStage("colorswap.recaption", "recaption", COLORSWAP_RECAPTION_GUIDELINES)),
        lambda folder: colorswap_records(folder, 12, seed=3),
        lambda records: colorswap_suggestions(records, seed=3),
    ),
)
