"""Demo data: accounts and projects whose images are drawn here with Pillow, so demos run offline."""

from __future__ import annotations

import io
import json
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from PIL import Image, ImageDraw
from sqlalchemy.orm import Session

from app import security
from app.models import Project, User
from app.services import imports, projects
from app.services import users as users_service
from app.settings import Settings
from app.storage import Storage

DEMO_USERS = [("demo-admin", "admin"), ("alice", "annotator"), ("bob", "annotator"), ("rita", "reviewer")]
SHAPES = ["circle", "square", "triangle"]
COLOURS = {"red": (220, 40, 40), "green": (40, 160, 60), "blue": (40, 80, 220), "yellow": (240, 200, 30)}

GUIDELINES = """Look at the image and choose **the shape** you see.

* Press the number of your answer, then **Enter**.
* Press **S** to skip an item you are unsure about; it comes back later.
"""


@dataclass
class DemoResult:
    accounts: list[tuple[str, str, str]]
    projects: list[str]


def draw_shape(shape: str, colour: tuple[int, int, int], seed: int, size: int = 320) -> bytes:
    rnd = random.Random(seed)
    bg = tuple(rnd.randint(200, 255) for _ in range(3))
    img = Image.new("RGB", (size, size), bg)
    d = ImageDraw.Draw(img)
    r = rnd.randint(size // 5, size // 3)
    cx, cy = rnd.randint(r + 5, size - r - 5), rnd.randint(r + 5, size - r - 5)
    if shape == "circle":
        d.ellipse((cx - r, cy - r, cx + r, cy + r), fill=colour)
    elif shape == "square":
        d.rectangle((cx - r, cy - r, cx + r, cy + r), fill=colour)
    else:
        d.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=colour)
    out = io.BytesIO()
    img.save(out, "PNG")
    return out.getvalue()


def _shape_records(folder: Path, n: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    records = []
    for i in range(n):
        shape, colour = rnd.choice(SHAPES), rnd.choice(list(COLOURS))
        name = f"shape_{seed}_{i:03d}.png"
        (folder / name).write_bytes(draw_shape(shape, COLOURS[colour], seed * 1000 + i))
        records.append({"id": f"shape-{i:03d}", "image": name, "truth": shape, "colour": colour})
    return records


def _ensure_project(
    session: Session,
    settings: Settings,
    storage: Storage,
    name: str,
    description: str,
    spec: projects.StageSpec,
    records: list[dict],
    folder: Path,
) -> bool:
    if session.scalar(sa.select(Project.id).where(Project.name == name)):
        return False
    project = projects.create_project(session, name, [spec], description=description)
    data = "\n".join(json.dumps(r) for r in records).encode()
    source = imports.ImageSource(settings, storage, base=folder)
    imports.import_items(session, project.id, data, "demo.jsonl", settings=settings, storage=storage, images=source)
    return True


def load_demo(session: Session, settings: Settings, storage: Storage) -> DemoResult:
    accounts = []
    for username, role in DEMO_USERS:
        password = security.new_password()
        user = session.scalar(sa.select(User).where(User.username == username))
        if user is None:
            users_service.create_user(session, username, role, password)
        else:
            users_service.set_password(session, user, password)
        accounts.append((username, role, password))

    created = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shape_spec = projects.StageSpec(
            workflow="generic.choice",
            name="shape",
            config={"choices": SHAPES, "question": "Which shape is in the picture?"},
            guidelines=GUIDELINES,
        )
        if _ensure_project(
            session, settings, storage, "Demo: shapes",
            "Thirty drawn shapes, one annotator each: the quickest way to try the annotation screen.",
            shape_spec, _shape_records(folder, 30, seed=1), folder,
        ):
            created.append("Demo: shapes")
        overlap_spec = shape_spec.model_copy(update={"overlap": 3, "name": "shape (3 annotators)"})
        if _ensure_project(
            session, settings, storage, "Demo: shapes, three annotators",
            "Each item goes to three annotators; their answers then wait for review.",
            overlap_spec, _shape_records(folder, 20, seed=2), folder,
        ):
            created.append("Demo: shapes, three annotators")
    return DemoResult(accounts=accounts, projects=created)
