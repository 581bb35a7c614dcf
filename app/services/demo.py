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


COLORSWAP_FILTER_GUIDELINES = """Each pair has two captions whose colour words are swapped. Look at **all** images:
an image drawn from caption 1 may fit caption 2 better.

* Type the image's number to choose it for the focused caption; caption 2 comes next.
* **Tab** switches caption, **N** says no image fits (the pair is discarded), **Z** undoes.
* Click an image to see it at full size. **Enter** submits, **S** skips.
"""
COLORSWAP_RECAPTION_GUIDELINES = """Rewrite both captions so that they read naturally and describe the
images more specifically, e.g. *a red circle inside a blue square* → *a small red disc sits in the middle
of a blue tile*. Keep the same words in both captions with the colour words exchanged: the check under
the captions tells you when the pair is valid.
"""
WIKIDO_GUIDELINES = """Is there any made-up / hallucinated content in the caption that is not supported by
the image or the reference text?

* **C** Correct: everything in the caption is in the image or the reference text.
* **H** Hallucinated: strike the made-up words (click, or ←/→ and **X**; shift-click strikes a span).
  Type in the text field only when a word must be replaced or added.
* **W** Wrong: the caption does not describe this image at all.
"""
# WikiDO demo: (made-up addition, where it goes) pairs, and captions about other things for "Wrong".
WIKIDO_ADDITIONS = ["painted by a famous artist in 1913", "beside a tall stone tower", "that glows in the dark"]
WIKIDO_WRONG = ["A bowl of ramen with a boiled egg.", "A portrait of a bearded man in a black coat.",
                "A medieval map of the river delta."]

VISARGS_GUIDELINES = [
    """Keep the visual premises the poster's argument rests on: things you can **see**, one fact each.
Edit a wrong one, split one that says two things (**Ctrl+Enter** at the caret), add what is missing (**N**).
Discard (**D**) an image that makes no argument.""",
    """Write the commonsense premises (knowledge the image does not show), check the conclusion (mark it
wrong to discard the image), and build the tree: each step takes premises or earlier conclusions (ICs)
and concludes an IC or, in the last step, C. The check below the steps says what is missing.""",
    """Draw one tight box around what each visual premise describes: pick the premise (**1**–**9**), drag on
the image; drag a box to move it and its corner to resize; arrows nudge (Alt: 10 px), Shift+arrows resize.""",
]
# VisArgs demo posters: slogan, shape, colour, and the argument a model drafted for them.
VISARGS_POSTERS = [
    ("SAVE WATER", "circle", "blue", "a blue drop", "Every drop of water counts", "Turn off the tap to save water."),
    ("RIDE A BIKE", "square", "green", "a green square", "Cars pollute the air", "Cycle instead of driving."),
    ("STOP FIRES", "triangle", "red", "a red triangle", "Forest fires destroy habitats", "Be careful with fire in forests."),
]


def draw_poster(slogan: str, shape: str, colour: tuple[int, int, int], seed: int, size: tuple[int, int] = (480, 360)) -> bytes:
    """A poster: a slogan in large letters at the top and one shape below it."""
    from PIL import ImageFont

    rnd = random.Random(seed)
    img = Image.new("RGB", size, tuple(rnd.randint(225, 250) for _ in range(3)))
    d = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=44)
    d.text((24, 24), slogan, fill=(20, 20, 20), font=font)
    _shape(d, shape, size[0] // 2 + rnd.randint(-60, 60), size[1] // 2 + 60, 70, colour)
    return _png(img)


def visargs_records(folder: Path, copies: int = 2) -> list[dict]:
    """Posters with a model's draft argument: two right premises merged into one, a wrong one, steps to fix."""
    records = []
    for k in range(copies):
        for i, (slogan, shape, colour, thing, common, conclusion) in enumerate(VISARGS_POSTERS):
            name = f"poster_{k}_{i}.png"
            (folder / name).write_bytes(draw_poster(slogan, shape, COLOURS.get(colour, (40, 80, 220)), k * 10 + i))
            records.append(
                {
                    "id": f"poster-{k}-{i}",
                    "image": name,
                    "url": f"https://example.org/visargs/{name}",
                    "candidate_premises": [f"The words {slogan}; {thing}", "A person holding an umbrella"],
                    "candidate_commonsense": [common],
                    "candidate_conclusion": conclusion,
                    "candidate_steps": [f"(VP1, CP1 -> C): {conclusion}"],
                }
            )
    return records


# Scenes for the ColorSwap demo: a caption template over colours A and B, and how to draw it.
SCENES = [
    "a {a} circle inside a {b} square",
    "a {a} triangle above a {b} bar",
    "a {a} square to the left of a {b} circle",
]


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
    _shape(d, shape, rnd.randint(r + 5, size - r - 5), rnd.randint(r + 5, size - r - 5), r, colour)
    return _png(img)


def _shape(d: ImageDraw.ImageDraw, shape: str, cx: int, cy: int, r: int, colour: tuple[int, int, int]) -> None:
    if shape == "circle":
        d.ellipse((cx - r, cy - r, cx + r, cy + r), fill=colour)
    elif shape == "square":
        d.rectangle((cx - r, cy - r, cx + r, cy + r), fill=colour)
    else:
        d.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=colour)


def _png(img: Image.Image) -> bytes:
    out = io.BytesIO()
    img.save(out, "PNG")
    return out.getvalue()


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
    return _png(img)


def colorswap_records(folder: Path, n: int, seed: int) -> list[dict]:
    """Caption pairs with candidates drawn from each caption. Like a real image model, the
    painter sometimes swaps the colours (drawing the other caption) or gets one wrong; every
    fourth pair has no image that fits caption 2, so it should be discarded."""
    rnd = random.Random(seed)
    names = list(COLOURS)
    sources = ["rule-based", "handmade", "generated"]
    records = []
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


def wikido_records(folder: Path, n: int, seed: int) -> list[dict]:
    """WikiDO-shaped records over drawn shapes: every third caption is correct, every third
    adds made-up content to the reference, the rest describe something else entirely."""
    rnd = random.Random(seed)
    topics = ["shapes", "paintings", "signs"]
    records = []
    for i in range(n):
        shape, colour = rnd.choice(SHAPES), rnd.choice(list(COLOURS))
        name = f"wikido_{seed}_{i:03d}.png"
        (folder / name).write_bytes(draw_shape(shape, COLOURS[colour], seed * 1000 + i))
        reference = f"A {colour} {shape} on a pale background, from the article on the {shape}."
        kind = i % 3
        if kind == 0:
            caption = f"A {colour} {shape} on a pale background."
        elif kind == 1:
            caption = f"A {colour} {shape} {rnd.choice(WIKIDO_ADDITIONS)}, on a pale background."
        else:
            caption = rnd.choice(WIKIDO_WRONG)
        topic = topics[i % len(topics)]
        records.append(
            {
                "image_id": f"wd-{i:03d}",
                "orig_cap": reference,
                "caption": caption,
                "image": name,
                "page_id": str(1000 + i),
                "page_title": shape.capitalize(),
                "topic": topic,
                "split": "test_ood" if topic == "paintings" else "val",
            }
        )
    return records


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
    specs: list[projects.StageSpec],
    records: list[dict],
    folder: Path,
) -> bool:
    if session.scalar(sa.select(Project.id).where(Project.name == name)):
        return False
    project = projects.create_project(session, name, specs, description=description)
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
            [shape_spec], _shape_records(folder, 30, seed=1), folder,
        ):
            created.append("Demo: shapes")
        overlap_spec = shape_spec.model_copy(update={"overlap": 3, "name": "shape (3 annotators)"})
        if _ensure_project(
            session, settings, storage, "Demo: shapes, three annotators",
            "Each item goes to three annotators; their answers then wait for review.",
            [overlap_spec], _shape_records(folder, 20, seed=2), folder,
        ):
            created.append("Demo: shapes, three annotators")
        colorswap_specs = [
            projects.StageSpec(workflow="colorswap.filter", name="filter", guidelines=COLORSWAP_FILTER_GUIDELINES),
            projects.StageSpec(workflow="colorswap.recaption", name="recaption", guidelines=COLORSWAP_RECAPTION_GUIDELINES),
        ]
        if _ensure_project(
            session, settings, storage, "Demo: ColorSwap",
            "Twelve colour-swap caption pairs with drawn candidate images: choose the image for each "
            "caption (or discard the pair), then rewrite the rule-based captions.",
            colorswap_specs, colorswap_records(folder, 12, seed=3), folder,
        ):
            created.append("Demo: ColorSwap")
        wikido_spec = projects.StageSpec(workflow="wikido.verify", name="verify", guidelines=WIKIDO_GUIDELINES)
        if _ensure_project(
            session, settings, storage, "Demo: WikiDO",
            "Twelve drawn images with a reference text and a model-written caption that may make things up: "
            "say Correct, Hallucinated (and strike the made-up words) or Wrong.",
            [wikido_spec], wikido_records(folder, 12, seed=4), folder,
        ):
            created.append("Demo: WikiDO")
        visargs_specs = [
            projects.StageSpec(workflow="visargs.premises", name="premises", guidelines=VISARGS_GUIDELINES[0]),
            projects.StageSpec(workflow="visargs.structure", name="structure", guidelines=VISARGS_GUIDELINES[1]),
            projects.StageSpec(workflow="visargs.grounding", name="grounding", guidelines=VISARGS_GUIDELINES[2]),
        ]
        if _ensure_project(
            session, settings, storage, "Demo: VisArgs",
            "Six drawn posters with a slogan and shapes, and a model's draft of their argument: fix the visual "
            "premises, build the reasoning tree, then box each premise.",
            visargs_specs, visargs_records(folder), folder,
        ):
            created.append("Demo: VisArgs")
    return DemoResult(accounts=accounts, projects=created)
