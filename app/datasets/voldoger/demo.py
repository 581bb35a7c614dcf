"""The VOLDOGER demo: drawn "photos" and their "stylised" redrawings (cartoon, pencil, oil) made
with Pillow, where some redrawings really change a label-relevant detail."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter, ImageOps

from app.datasets.dataset import DemoProject, DemoStage
from app.datasets.drawing import COLOURS, paint, png
from app.datasets.voldoger.release import DOMAIN_IDS, STYLE_NAMES, join

GUIDELINES = """An image model redrew each photo in a style; an LLM checked that the drawing keeps the photo's
content, re-labelled it where the label no longer holds, and paraphrased the text. Check its work:

* **K** the stylised image keeps the photo's content · **D** discard it (the item leaves the release).
* **L** the LLM's label is right · **O** the original label is right · a **digit** for a given label.
  A changed label is marked *changed by the LLM*.
* **P** the paraphrase keeps the meaning · **E** edit it in place (Esc leaves the text field).
* **+** / **−** zoom both images, **0** resets. **Enter** submits.
"""


def _photo(objects: list[tuple[str, str, int, int, int]], size: int = 320) -> Image.Image:
    img = Image.new("RGB", (size, size))
    d = ImageDraw.Draw(img)
    for y in range(size):  # sky and grass
        d.line((0, y, size, y), fill=(150 + y // 8, 190 + y // 16, 240) if y < size * 0.6 else (70, 150 - y // 10, 60))
    for shape, colour, cx, cy, r in objects:
        paint(d, shape, cx, cy, r, COLOURS[colour])
    return img


def _stylise(img: Image.Image, style: str) -> Image.Image:
    if style == "cartoon":
        flat = ImageOps.posterize(img, 2)
        edges = img.convert("L").filter(ImageFilter.FIND_EDGES).point(lambda v: 0 if v > 40 else 255)
        return Image.composite(flat, Image.new("RGB", img.size, (0, 0, 0)), edges)
    if style == "pencil":
        return ImageOps.grayscale(img).filter(ImageFilter.CONTOUR).convert("RGB")
    return img.filter(ImageFilter.ModeFilter(9)).filter(ImageFilter.SMOOTH_MORE)


# (task, style, photo objects, objects in the drawing, original row fields, stylised row fields)
SCENES = [
    ("vqa", "cartoon", [("circle", "red", 160, 220, 40)], [("circle", "blue", 160, 220, 40)],
     {"question": "Is the ball red?", "answer": "yes"},
     {"question": "Is the ball coloured red?", "answer": "no", "full_answer": "No, the ball is blue."}),
    ("vqa", "oil", [("square", "yellow", 120, 200, 50), ("circle", "green", 230, 90, 30)],
     [("square", "yellow", 120, 200, 50), ("circle", "green", 230, 90, 30)],
     {"question": "Is there a yellow box?", "answer": "yes"},
     {"question": "Can you see a yellow box?", "answer": "yes", "full_answer": "Yes, there is a yellow box."}),
    ("vqa", "pencil", [("triangle", "red", 160, 200, 60)], [("triangle", "red", 160, 200, 60)],
     {"question": "Is the tent red?", "answer": "yes"},
     {"question": "Is the tent red in colour?", "answer": "no", "full_answer": "No, the drawing is grey."}),
    ("ve", "cartoon", [("circle", "yellow", 250, 60, 35), ("square", "blue", 110, 220, 45)],
     [("circle", "yellow", 250, 60, 35), ("square", "blue", 110, 220, 45)],
     {"premise": "A blue box lies on the grass under the sun.", "hypothesis": " The sun is shining.", "label": 0},
     {"hypothesis": "The sun shines.", "label": 0}),
    ("ve", "oil", [("circle", "yellow", 250, 60, 35), ("square", "green", 110, 220, 45)],
     [("square", "green", 110, 220, 45)],
     {"premise": "A green box lies on the grass under the sun.", "hypothesis": "The sun is in the sky.", "label": 0},
     {"hypothesis": "The sun can be seen in the sky.", "label": 1}),
    ("cap", "pencil", [("circle", "red", 100, 210, 30), ("circle", "blue", 220, 210, 30)],
     [("circle", "red", 100, 210, 30), ("circle", "blue", 220, 210, 30)],
     {"captions": ["Two balls on a lawn.", "A red ball and a blue ball  on the grass.", "Two balls in a field ",
                   "Balls lying on green grass.", "A pair of balls outdoors."]},
     {"caption": "Two balls are lying on a lawn.", "caption_number": 0}),
    ("cap", "cartoon", [("triangle", "green", 160, 190, 70)], [("triangle", "green", 160, 190, 70)],
     {"captions": ["A green tent in a meadow.", "A tent pitched on grass.", "Camping in a field.",
                   "A green tent under a blue sky.", "A small tent outside."]},
     {"caption": "A tent in a park with people.", "caption_number": 0}),
]


def demo_records(folder: Path) -> list[dict]:
    records = []
    for n, (task, style, photo, drawn, orig, styl) in enumerate(SCENES):
        image_id = f"{100000 + n}.jpg" if task != "cap" else f"COCO_train2014_{n:012d}.jpg"
        for sub in ("original", style):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        (folder / "original" / image_id).write_bytes(png(_photo(photo)))
        (folder / style / image_id).write_bytes(png(_stylise(_photo(drawn), style)))
        original = {"image_id": image_id, **orig, "split": "train"}
        stylised = {"image_id": image_id, "domain_id": DOMAIN_IDS[style],
                    "original_prompt": "A photo.", "style_prompt": f"Redraw this photo as a {STYLE_NAMES[style]}."}
        if task == "vqa":
            original = {"image_id": image_id, "question_id": 5000 + n, **orig, "split": "train"}
            stylised = {**stylised, "question_id": 5000 + n, **styl, "question_type": "is the", "answer_type": "yes/no"}
        elif task == "cap":
            stylised = {**stylised, **styl, "all_captions": orig["captions"]}
        else:
            stylised = {**stylised, "premise": orig["premise"], **styl}
        stylised["split"] = "train"
        records.extend(join([original], [stylised], task, style))
    for i, record in enumerate(records):
        record["id"] = f"demo-{i:02d}-{record['task']}-{record['style']}"
    return records


DEMOS = (
    DemoProject(
        "Demo: VOLDOGER",
        "Drawn photos re-drawn as cartoon, pencil or oil: keep or discard each drawing, check the LLM's label "
        "(one drawing turned the red ball blue) and its paraphrase.",
        (DemoStage("voldoger.verify", "verify", GUIDELINES),),
        demo_records,
    ),
)
