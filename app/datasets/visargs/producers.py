"""VisArgs' suggestion producers:

- visargs.regions — for each visual premise, the window of the image (a grid at three scales)
  that an image-text model matches best, `{"boxes": [{"vp", "startX", "startY", "w", "h", "score"}]}`.
- visargs.boxes — OCR text boxes matched to the visual premises that quote text in the image,
  `{"boxes": [{"vp", "startX", "startY", "w", "h", "text"}]}`.
"""

from __future__ import annotations

import re
from functools import partial

from app.datasets.suggest import CLIP_MODULES, Failed, ItemInput, Produced, Producer, image_failure, not_stored
from app.datasets.visargs.schema import BOX_KIND, REGION_KIND, premises_of



def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[^\W_]{2,}", text)}


def visargs_boxes(items: list[ItemInput], settings, backends) -> list[Produced | Failed]:
    """The job's stored images are read by OCR on the thread pool, then matched item by item."""
    name, version = backends.OCR_MODEL
    usable = [i for i in items if "/image" in i.images]
    found, errors = backends.ocr_images([i.images["/image"] for i in usable])
    out = {}
    for k, item in enumerate(usable):
        if k in errors:
            out[item.id] = image_failure(item, "the image", errors[k], (name, version))
            continue
        boxes = []
        for vp, text in enumerate(premises_of(item.results)):
            wanted = _words(text)
            hits = [b for b in found[k] if _words(b.text) and len(_words(b.text) & wanted) / len(_words(b.text)) >= 0.5]
            if not hits:
                continue
            x0, y0 = min(b.x for b in hits), min(b.y for b in hits)
            x1, y1 = max(b.x + b.w for b in hits), max(b.y + b.h for b in hits)
            boxes.append({"vp": vp, "startX": x0, "startY": y0, "w": max(1, x1 - x0), "h": max(1, y1 - y0),
                          "text": " ".join(b.text for b in hits)})
        out[item.id] = Produced(item.id, name, version, {"boxes": boxes, "lines": len(found[k])}, float(len(boxes)))
    return [out.get(i.id) or not_stored(i, "the image", (name, version)) for i in items]


def windows(width: int, height: int) -> list[tuple[int, int, int, int]]:
    """Candidate regions: the whole image, then halves and thirds of each side, overlapping by half."""
    out = []
    for parts in (1, 2, 3):
        w, h = width // parts, height // parts
        step_x, step_y = max(1, w // 2), max(1, h // 2)
        for y in range(0, height - h + 1, step_y):
            for x in range(0, width - w + 1, step_x):
                out.append((x, y, w, h))
    return out


def visargs_regions(items: list[ItemInput], settings, backends) -> list[Produced | Failed]:
    """Each item's image is decoded once (on the thread pool); the windows of all the job's items
    then go to the model in one stream of batches, and each distinct premise is embedded once."""
    model = backends.image_text_for(settings)
    by = (model.name, model.version)
    usable = [i for i in items if "/image" in i.images]
    decoded, errors = backends.prepare.run_all([i.images["/image"] for i in usable], backends.open_image)
    out, plans, crops = {}, [], []
    for k, item in enumerate(usable):
        if k in errors:
            out[item.id] = image_failure(item, "the image", errors[k], by)
            continue
        regions, premises = windows(*decoded[k].size), premises_of(item.results)
        if not premises:
            out[item.id] = Produced(item.id, model.name, model.version, {"boxes": []}, None)
            continue
        plans.append((item, len(crops), regions, premises))
        crops += [partial(decoded[k].crop, (x, y, x + w, y + h)) for x, y, w, h in regions]
    images = model.embed_images(crops)
    texts = model.embed_texts([p for *_, premises in plans for p in premises])
    pairs = [(first + r, p) for item, first, regions, premises in plans for r in range(len(regions)) for p in premises]
    cosines = iter(model.cosines(images, texts, pairs))
    for item, first, regions, premises in plans:
        scores = [[next(cosines) for _ in premises] for _ in regions]
        bad = next((r for r in range(len(regions)) if first + r in images.errors), None)
        if bad is not None:
            out[item.id] = image_failure(item, f"the window {regions[bad]} of the image", images.errors[first + bad], by)
            continue
        boxes = []
        for vp in range(len(premises)):
            best = max(range(len(regions)), key=lambda r, vp=vp: scores[r][vp])
            x, y, w, h = regions[best]
            boxes.append({"vp": vp, "startX": x, "startY": y, "w": w, "h": h, "score": round(scores[best][vp], 5)})
        out[item.id] = Produced(item.id, model.name, model.version, {"boxes": boxes}, None)
    return [out.get(i.id) or not_stored(i, "the image", by) for i in items]


PRODUCERS = (
    Producer(BOX_KIND, True, visargs_boxes, ("rapidocr_onnxruntime",)),
    Producer(REGION_KIND, True, visargs_regions, CLIP_MODULES, needs_clip=True),
)
