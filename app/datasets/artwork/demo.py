"""The ExpArt demos: drawn "paintings" with section texts and their linked entities (some sections
are References / See also, which the rule drops), and two models' explanations to judge."""

from __future__ import annotations

import random
from pathlib import Path

from PIL import Image, ImageDraw

from app.datasets.dataset import DemoProject, DemoStage
from app.datasets.drawing import COLOURS, paint, png

SECTIONS_GUIDELINES = """Does this text explain the artwork (its subject, history, style, reception)?

* **K** keep it.
* **D** drop it, and say why with a digit: **1** not about the artwork, **2** too short, **3** broken text,
  **4** another artwork, **5** other.

Sections the paper omitted by name (References, See also, External links, ...) start as
"drop: not about the artwork", marked **rule**: check them, and keep one if it does explain the work.
"""
EXPLANATION_GUIDELINES = """Read the reference section, then the model's explanation.

* Strike every word the reference does not support or that is wrong (click, or ←/→ and **X**; **Z** undoes).
* Score it **1–5** on the rubric under the text.

Entities are highlighted: green in both texts, red only in the reference (missing), amber only in the
explanation (extra).
"""

ARTWORKS = [
    ("The Red Circle", "Anna Berg", "Oslo", "National Museum", "oil on canvas"),
    ("Blue Square at Dusk", "Marco Levi", "Venice", "Galleria Nova", "tempera"),
    ("Yellow Triangle", "Jun Sato", "Kyoto", "Kyoto City Museum", "woodblock print"),
    ("Green Orbit", "Lena Roth", "Vienna", "Belvedere", "oil on panel"),
]


def draw_painting(shape: str, colour: tuple[int, int, int], seed: int, size: int = 320) -> bytes:
    """A framed canvas with a shape on it."""
    rnd = random.Random(seed)
    img = Image.new("RGB", (size, size), (120, 80, 40))
    d = ImageDraw.Draw(img)
    d.rectangle((16, 16, size - 16, size - 16), fill=tuple(rnd.randint(215, 250) for _ in range(3)))
    paint(d, shape, size // 2 + rnd.randint(-30, 30), size // 2 + rnd.randint(-30, 30), rnd.randint(50, 90), colour)
    return png(img)


def _sections(title, artist, city, museum, medium):
    return [
        ("Description", None, f"{title} is a painting in {medium} by {artist}. It shows a single bright form on a pale ground.",
         [artist, medium]),
        ("History", None, f"{artist} painted it in {city}. It was bought by the {museum} and has hung there since.",
         [artist, city, museum]),
        ("History", "Reception", f"Critics in {city} praised the work. The {museum} lent it to exhibitions abroad.",
         [city, museum]),
        ("References", None, f"Smith, J. A history of {city} painting. {museum} catalogue.", [city, museum]),
        ("See also", None, f"List of works by {artist}.", [artist]),
    ]


def section_records(folder: Path, *, with_explanations: bool = True) -> list[dict]:
    """Every section of the four artworks; with a model's explanation on the first artwork's first two."""
    records = []
    shapes = ["circle", "square", "triangle", "circle"]
    for n, (art, shape, colour) in enumerate(zip(ARTWORKS, shapes, COLOURS.values()), 1):
        name = f"artwork_{n:04d}.png"
        (folder / name).write_bytes(draw_painting(shape, colour, n))
        for k, (section, sub, text, ents) in enumerate(_sections(*art), 1):
            rec = {"id": f"{n:04d}_{k:02d}", "title": art[0], "image": name, "section": section}
            if sub:
                rec["subsection"] = sub
            rec.update({"text": text, "entities": ents})
            if with_explanations and n == 1 and k <= 2:
                rec.update({"model": "llava-demo", "explanation": text.replace("It ", "The work ") + f" It is famous in {art[2]}."})
            records.append(rec)
    return records


def explanation_records(folder: Path) -> list[dict]:
    """Two models' explanations of the first artworks' Description and History sections."""
    records = []
    for rec in section_records(folder, with_explanations=False):
        if rec["section"] not in ("Description", "History") or "subsection" in rec or rec["id"][:4] > "0003":
            continue
        title = rec["title"]
        art = next(a for a in ARTWORKS if a[0] == title)
        good = rec["text"]
        bad = f"{title} is a famous fresco by Pablo Picasso in Madrid. {art[1]} may have seen it in {art[2]}."
        for model, explanation in (("llava-demo", good.replace("It ", "The work ")), ("mini-vlm", bad)):
            records.append({**rec, "id": f"{rec['id']}:{model}", "model": model, "explanation": explanation})
    return records


DEMOS = (
    DemoProject(
        "Demo: ExpArt sections",
        "Sections of four drawn artworks' articles: keep the ones that explain the artwork (References and "
        "See also start as dropped by the paper's rule); kept sections with a model's explanation go on to be judged.",
        (DemoStage("artwork.sections", "sections", SECTIONS_GUIDELINES),
         DemoStage("artwork.explanation", "explanation", EXPLANATION_GUIDELINES)),
        section_records,
    ),
    DemoProject(
        "Demo: ExpArt explanations",
        "Two models' explanations of six sections of three drawn artworks: strike unsupported words and score each 1–5.",
        (DemoStage("artwork.explanation", "explanation", EXPLANATION_GUIDELINES),),
        explanation_records,
    ),
)
