"""Demo data for quality control: a project with a gold set served as honeypots, and a finished,
split project with planted duplicates whose leak report is ready on its export page."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import numpy as np
import sqlalchemy as sa
from PIL import Image
from sqlalchemy.orm import Session

from app.datasets.drawing import SHAPES
from app.datasets.generic.demo import GUIDELINES, shape_records
from app.models import Item, Project, Stage
from app.services.annotation.pipeline import finalize
from app.services.exports import splits
from app.services.imports import imports
from app.services.leaks import leaks
from app.services.projects import projects
from app.services.quality import gold

GOLD_DEMO = "Demo: gold items"
LEAK_DEMO = "Demo: leaky splits"
WORDS = ("red blue green small large old wooden stone glass river mountain city street market boat bridge tower "
         "garden dog cat horse bird child table window door lamp book tree flower").split()


def _project(session: Session, name: str, description: str, config: dict, records: list[dict], settings, storage, folder: Path) -> Project | None:
    if session.scalar(sa.select(Project.id).where(Project.name == name)):
        return None
    spec = projects.StageSpec(workflow="generic.choice", name="choose", guidelines=GUIDELINES, config=config)
    project = projects.create_project(session, name, [spec], description=description)
    source = imports.ImageSource(settings, storage, base=folder)
    imports.import_items(session, project.id, "\n".join(json.dumps(r) for r in records).encode(), "demo.jsonl",
                         settings=settings, storage=storage, images=source)
    return project


def gold_demo(session: Session, settings, storage, folder: Path) -> str | None:
    """Forty shapes, eight of them gold (their truth known): one claim in five serves one, and an
    annotator below 0.7 over three gold answers is flagged and their work goes to review."""
    records = shape_records(folder, 40, seed=7)
    golden = records[::5]
    config = {"choices": SHAPES, "question": "Which shape is in the picture?", "gold_share": 0.2,
              "gold_min_items": 3, "gold_threshold": 0.7, "gold_route_to_review": True}
    # Said in the page's own terms: gold items are no part of the data, so the project counts the others.
    description = (f"{len(records) - len(golden)} items to annotate, and {len(golden)} gold items (their answers known) served among them: "
                   "the agreement page shows each annotator's accuracy on the gold ones.")
    project = _project(session, GOLD_DEMO, description, config, records, settings, storage, folder)
    if project is None:
        return None
    stage_id = projects.stages_of(session, project.id)[0].id
    answers = "\n".join(json.dumps({"id": r["id"], "answer": {"choice": r["truth"]}}) for r in golden)
    gold.import_answers(session, stage_id, answers.encode(), actor_id=None)
    return GOLD_DEMO


def texture(seed: int, size=(240, 180)) -> Image.Image:
    """A distinct smooth random picture (drawn shapes are too alike for a perceptual hash)."""
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (6, 8, 3), dtype=np.uint8), "RGB").resize(size, Image.BICUBIC)


def _save(image: Image.Image, path: Path, fmt: str = "PNG", **kw) -> str:
    out = io.BytesIO()
    image.save(out, fmt, **kw)
    path.write_bytes(out.getvalue())
    return path.name


def leak_demo(session: Session, settings, storage, folder: Path) -> str | None:
    """Sixty finished items split train / test, with eight planted duplicates: the same file, a
    re-encoded JPEG, a resized copy, and a caption differing only in case and punctuation."""
    rnd = random.Random(11)
    records = []
    for i in range(52):
        name = _save(texture(i), folder / f"leak_{i:03d}.png")
        records.append({"id": f"pic-{i:03d}", "image": name, "caption": " ".join(rnd.sample(WORDS, 8)).capitalize() + "."})
    planted = [("same file", 0), ("same file", 1), ("jpeg", 2), ("jpeg", 3), ("resized", 4), ("resized", 5), ("caption", 6), ("caption", 7)]
    for n, (kind, k) in enumerate(planted):
        original = records[k]
        image, caption = original["image"], " ".join(rnd.sample(WORDS, 8)).capitalize() + "."
        if kind == "jpeg":
            image = _save(texture(k), folder / f"leak_copy_{n}.jpg", "JPEG", quality=80)
        elif kind == "resized":
            image = _save(texture(k).resize((192, 144), Image.LANCZOS), folder / f"leak_copy_{n}.png")
        elif kind == "caption":
            image = _save(texture(5000 + n), folder / f"leak_other_{n}.png")
            caption = original["caption"].upper().rstrip(".") + "!"
        records.append({"id": f"copy-{n}", "image": image, "caption": caption})
    config = {"choices": ["warm", "cool"], "question": "Are the colours warm or cool?"}
    project = _project(session, LEAK_DEMO, "Finished items split 70 / 30 with planted duplicates: the export page shows the leaks and fixes them.",
                       config, records, settings, storage, folder)
    if project is None:
        return None
    stage = session.scalar(sa.select(Stage).where(Stage.project_id == project.id))
    for item in session.scalars(sa.select(Item).where(Item.project_id == project.id).order_by(Item.id)):
        finalize(session, item, stage, {"choice": "warm" if item.id % 2 else "cool"}, discard=False, source="demo")
    session.flush()
    splits.save_definition(session, project.id, {"ratios": {"train": 0.7, "test": 0.3}, "seed": 3})
    # The report is made here, with no worker: the images are hashed first, as its job would.
    leaks.hash_images(session, storage, leaks.missing_hashes(session, project.id))
    leaks.store(session, project.id, leaks.compute(session, storage, project.id))
    return LEAK_DEMO


def load(session: Session, settings, storage, folder: Path) -> list[str]:
    """The quality-control demo projects that are not there yet."""
    return [name for make in (gold_demo, leak_demo) if (name := make(session, settings, storage, folder))]
