"""The VisArgs dataset's demo: drawn posters with a slogan, and a model's flawed draft of their argument."""

from __future__ import annotations

import random
from pathlib import Path

from PIL import Image, ImageDraw

from app.datasets.dataset import DemoProject, DemoStage, DemoSuggestion
from app.datasets.drawing import COLOURS, paint, png
from app.datasets.visargs.schema import REGION_KIND

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


POSTER_SIZE = (480, 360)


def _layout(slogan: str, seed: int, size: tuple[int, int]):
    """A poster's background, font, and where its slogan and its shape go: (x, y, w, h) boxes."""
    from PIL import ImageFont

    rnd = random.Random(seed)
    background = tuple(rnd.randint(225, 250) for _ in range(3))
    font = ImageFont.load_default(size=44)
    x0, y0, x1, y1 = ImageDraw.Draw(Image.new("RGB", size)).textbbox((24, 24), slogan, font=font)
    cx, cy, r = size[0] // 2 + rnd.randint(-60, 60), size[1] // 2 + 60, 70
    return background, font, (x0, y0, x1 - x0, y1 - y0), (cx - r, cy - r, 2 * r, 2 * r)


def draw_poster(slogan: str, shape: str, colour: tuple[int, int, int], seed: int, size: tuple[int, int] = POSTER_SIZE) -> bytes:
    """A poster: a slogan in large letters at the top and one shape below it."""
    background, font, _, (x, y, w, _h) = _layout(slogan, seed, size)
    img = Image.new("RGB", size, background)
    d = ImageDraw.Draw(img)
    d.text((24, 24), slogan, fill=(20, 20, 20), font=font)
    paint(d, shape, x + w // 2, y + w // 2, w // 2, colour)
    return png(img)


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


def visargs_suggestions(records: list[dict]) -> list[DemoSuggestion]:
    """Boxes for the grounding stage where the demo drew them: the slogan's for the first visual
    premise, the shape's for the second, the premises the drafts become once the merged one is
    split at its semicolon and the made-up one dropped. Stored ahead of the items' arrival, as a push
    may; a premise list that ends up different still gets boxes, to be moved."""
    out = []
    for r in records:
        k, i = (int(n) for n in r["id"].split("-")[1:])
        _, _, text, shape = _layout(VISARGS_POSTERS[i][0], k * 10 + i, POSTER_SIZE)
        boxes = [{"vp": vp, "startX": x, "startY": y, "w": w, "h": h, "score": 0.3}
                 for vp, (x, y, w, h) in enumerate((text, shape))]
        out.append(DemoSuggestion("grounding", r["id"], REGION_KIND, {"boxes": boxes}))
    return out


DEMOS = (
    DemoProject(
        "Demo: VisArgs",
        "Six drawn posters with a slogan and shapes, and a model's draft of their argument: fix the visual "
        "premises, build the reasoning tree, then box each premise.",
        tuple(DemoStage(workflow, name, text) for workflow, name, text in zip(
            ("visargs.premises", "visargs.structure", "visargs.grounding"), ("premises", "structure", "grounding"), VISARGS_GUIDELINES
        )),
        lambda folder: visargs_records(folder),
        visargs_suggestions,
    ),
)
