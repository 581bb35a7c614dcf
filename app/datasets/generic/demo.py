"""The generic dataset's demos: drawn shapes to name, with one annotator or three."""

from __future__ import annotations

import random
from pathlib import Path

from app.datasets.dataset import DemoProject, DemoStage
from app.datasets.drawing import COLOURS, SHAPES, draw_shape

GUIDELINES = """Look at the image and choose **the shape** you see.

* Press the number of your answer, then **Enter**.
* Press **S** to skip an item you are unsure about; it comes back later.
"""


def shape_records(folder: Path, n: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    records = []
    for i in range(n):
        shape, colour = rnd.choice(SHAPES), rnd.choice(list(COLOURS))
        name = f"shape_{seed}_{i:03d}.png"
        (folder / name).write_bytes(draw_shape(shape, COLOURS[colour], seed * 1000 + i))
        records.append({"id": f"shape-{i:03d}", "image": name, "truth": shape, "colour": colour})
    return records


STAGE = DemoStage("generic.choice", "shape", GUIDELINES, config={"choices": SHAPES, "question": "Which shape is in the picture?"})
DEMOS = (
    DemoProject(
        "Demo: shapes", "Thirty drawn shapes, one annotator each: the quickest way to try the annotation screen.",
        (STAGE,), lambda folder: shape_records(folder, 30, seed=1),
    ),
    DemoProject(
        "Demo: shapes, three annotators", "Each item goes to three annotators; their answers then wait for review.",
        (DemoStage("generic.choice", "shape (3 annotators)", GUIDELINES, config=STAGE.config, overlap=3),),
        lambda folder: shape_records(folder, 20, seed=2),
    ),
)
