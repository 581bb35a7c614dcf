"""ColorSwap's suggestion producer: `colorswap.itm`, image-text scores of every candidate with both
captions, `{"scores": [[c1, c2], ...]}`; the row's score is the margin between the best and
second-best image for caption 1."""

from __future__ import annotations

from app.datasets.colorswap.schema import ITM_KIND, candidate_pointer
from app.datasets.suggest import CLIP_MODULES, ItemInput, Produced, Producer


def colorswap_itm(items: list[ItemInput], settings, backends) -> list[Produced]:
    model = backends.image_text(str(settings.clip_model_dir) if settings.clip_model_dir else None)
    out = []
    for item in items:
        pointers = [candidate_pointer(i) for i in range(len(item.data["candidates"]))]
        if not all(p in item.images for p in pointers):
            raise backends.ModelUnavailable(f"item {item.data['id']}: candidate images named by URL are not stored, so they cannot be scored")
        images = [backends.open_image(item.images[p]) for p in pointers]
        scores = model.scores(images, [item.data["caption_1"], item.data["caption_2"]], batch=settings.worker_batch_size)
        ranked = sorted((s[0] for s in scores), reverse=True)
        margin = ranked[0] - ranked[1] if len(ranked) > 1 else None
        out.append(Produced(item.id, model.name, model.version, {"scores": [[round(a, 5), round(b, 5)] for a, b in scores]}, margin))
    return out


PRODUCERS = (Producer(ITM_KIND, True, colorswap_itm, CLIP_MODULES, needs_clip=True),)
