"""ColorSwap's suggestion producer: `colorswap.itm`, image-text scores of every candidate with both
captions, `{"scores": [[c1, c2], ...]}`; the row's score is the margin between the best and
second-best image for caption 1.

Every candidate image of the job's items goes to the model in one stream of batches, and each
distinct caption is embedded once; an item with an unreadable candidate fails alone."""

from __future__ import annotations

from app.datasets.colorswap.schema import ITM_KIND, candidate_pointer
from app.datasets.suggest import CLIP_MODULES, Failed, ItemInput, Produced, Producer, image_failure, not_stored


def colorswap_itm(items: list[ItemInput], settings, backends) -> list[Produced | Failed]:
    model = backends.image_text_for(settings)
    plans, failed, sources = [], {}, []
    for item in items:
        pointers = [candidate_pointer(i) for i in range(len(item.data["candidates"]))]
        missing = [p for p in pointers if p not in item.images]
        if missing:
            failed[item.id] = not_stored(item, f"the image {missing[0]}", (model.name, model.version))
            continue
        plans.append((item, len(sources), pointers))
        sources += [item.images[p] for p in pointers]
    images = model.embed_images(sources)
    texts = model.embed_texts([c for item, *_ in plans for c in (item.data["caption_1"], item.data["caption_2"])])
    pairs = [(first + k, caption) for item, first, pointers in plans for k in range(len(pointers))
             for caption in (item.data["caption_1"], item.data["caption_2"])]
    cosines = iter(model.cosines(images, texts, pairs))
    produced = {}
    for item, first, pointers in plans:
        scores = [(next(cosines), next(cosines)) for _ in pointers]
        bad = next((k for k in range(len(pointers)) if first + k in images.errors), None)
        if bad is not None:
            failed[item.id] = image_failure(item, f"the image {pointers[bad]}", images.errors[first + bad], (model.name, model.version))
            continue
        ranked = sorted((s[0] for s in scores), reverse=True)
        margin = ranked[0] - ranked[1] if len(ranked) > 1 else None
        produced[item.id] = Produced(item.id, model.name, model.version, {"scores": [[round(a, 5), round(b, 5)] for a, b in scores]}, margin)
    return [produced.get(item.id) or failed[item.id] for item in items]


PRODUCERS = (Producer(ITM_KIND, True, colorswap_itm, CLIP_MODULES, needs_clip=True),)
