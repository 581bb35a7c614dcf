"""VisArgs' suggestion producers:

- visargs.regions — for each visual premise, the window of the image (a grid at three scales)
  that an image-text model matches best, `{"boxes": [{"vp", "startX", "startY", "w", "h", "score"}]}`.
- visargs.boxes — OCR text boxes matched to the visual premises that quote text in the image,
  `{"boxes": [{"vp", "startX", "startY", "w", "h", "text"}]}`.
"""

from __future__ import annotations

import re

from app.datasets.suggest import CLIP_MODULES, ItemInput, Produced, Producer
from app.datasets.visargs.schema import BOX_KIND, REGION_KIND, premises_of


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[^\W_]{2,}", text)}


def visargs_boxes(items: list[ItemInput], settings, backends) -> list[Produced]:
    name, version = backends.OCR_MODEL
    out = []
    for item in items:
        premises = premises_of(item.results)
        if "/image" not in item.images:
            raise backends.ModelUnavailable(f"item {item.data['id']}: the image is named by URL and not stored, so OCR cannot read it")
        found = backends.ocr(backends.open_image(item.images["/image"]))
        boxes = []
        for vp, text in enumerate(premises):
            wanted = _words(text)
            hits = [b for b in found if _words(b.text) and len(_words(b.text) & wanted) / len(_words(b.text)) >= 0.5]
            if not hits:
                continue
            x0, y0 = min(b.x for b in hits), min(b.y for b in hits)
            x1, y1 = max(b.x + b.w for b in hits), max(b.y + b.h for b in hits)
            boxes.append({"vp": vp, "startX": x0, "startY": y0, "w": max(1, x1 - x0), "h": max(1, y1 - y0),
                          "text": " ".join(b.text for b in hits)})
        out.append(Produced(item.id, name, version, {"boxes": boxes, "lines": len(found)}, float(len(boxes))))
    return out


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


def visargs_regions(items: list[ItemInput], settings, backends) -> list[Produced]:
    model = backends.image_text(str(settings.clip_model_dir) if settings.clip_model_dir else None)
    out = []
    for item in items:
        premises = premises_of(item.results)
        if "/image" not in item.images:
            raise backends.ModelUnavailable(f"item {item.data['id']}: the image is named by URL and not stored")
        image = backends.open_image(item.images["/image"])
        regions = windows(*image.size)
        crops = [image.crop((x, y, x + w, y + h)) for x, y, w, h in regions]
        scores = model.scores(crops, premises, batch=settings.worker_batch_size) if premises else []
        boxes = []
        for vp in range(len(premises)):
            best = max(range(len(regions)), key=lambda r, vp=vp: scores[r][vp])
            x, y, w, h = regions[best]
            boxes.append({"vp": vp, "startX": x, "startY": y, "w": w, "h": h, "score": round(scores[best][vp], 5)})
        out.append(Produced(item.id, model.name, model.version, {"boxes": boxes}, None))
    return out


PRODUCERS = (
    Producer(BOX_KIND, True, visargs_boxes, ("rapidocr_onnxruntime",)),
    Producer(REGION_KIND, True, visargs_regions, CLIP_MODULES, needs_clip=True),
)
