"""ColorSwap's probes. Recaptioning: a phrase the images do not show (one of PHRASES, drawn per gold item)
inserted in both captions of the item's real drafted pair (the colour swap stays intact); caught when
neither caption of the answer keeps it. Filtering: image-text scores that preselect the gold answer's two
images the wrong way round (each caption's label flipped to the other's image); caught when neither
caption keeps its planted image."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.bias.probes import Probe, pick
from app.datasets.colorswap.schema import FILTER, ITM_KIND, PAIR_KIND, RECAPTION

# Scenery a caption could plausibly mention, without a colour word (the swap check must not see a new one).
PHRASES = (
    "beside a tall wooden lamp", "next to an open window", "on a crowded beach", "under a leafy tree",
    "near a sleeping cat", "beside a stack of old books", "on a rainy afternoon", "next to a small dog",
    "under a hanging lantern", "in a busy kitchen", "beside a folded newspaper", "near a parked bicycle",
    "at the edge of a pier", "beside a glass vase", "in a walled garden", "under a wooden shelf",
    "next to a sleeping child", "on a narrow balcony", "beside a ceramic teapot", "near a flickering candle",
    "in a dimly lit hallway", "beside an empty chair", "under a cloudy sky", "next to a wicker basket",
    "on a marble countertop", "beside a potted fern", "near an open suitcase", "in a crowded market",
    "beside a wall clock", "under a wide archway", "next to a pair of boots", "on a sandy path",
    "beside a tall bookcase", "near a small fountain", "in a quiet library", "beside a steaming kettle",
)
# The planted scores: a preselected image's score for its caption, and every other score. Within the
# range a CLIP-like model gives (cosines of about 0.15 to 0.35), and apart by far more than any margin.
HIGH, LOW = 0.3125, 0.1875


def _folded(text: Any) -> str:
    return " ".join(str(text or "").lower().split())


def planted_phrase(truth: Mapping[str, Any], item: Mapping[str, Any]) -> str:
    """The phrase planted on this gold item (none the gold captions already contain)."""
    gold = f"{_folded(truth.get('caption_1'))} | {_folded(truth.get('caption_2'))}"
    return pick(PHRASES, truth, item, lambda p: p in gold)


def inserted(caption: str, phrase: str) -> str:
    """The caption with the phrase before its closing punctuation."""
    text = caption.rstrip()
    end = text[-1] if text and text[-1] in ".!?" else ""
    return f"{text[:len(text) - len(end)]} {phrase}{end}"


def plant(truth: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any] | None:
    """The phrase to plant ({"phrase"}); None when the gold answer has no caption pair."""
    if not truth.get("caption_1") or not truth.get("caption_2"):
        return None
    return {"phrase": planted_phrase(truth, item)}


def into_draft(planted: Mapping[str, Any], draft: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any]:
    """The real drafted pair (its other keys kept) with the phrase in both captions."""
    return {**draft, **{k: inserted(str(draft.get(k) or ""), str(planted["phrase"])) for k in ("caption_1", "caption_2")}}


def caught(truth: Mapping[str, Any], answer: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    phrase = planted_phrase(truth, item)
    return not any(phrase in _folded(answer.get(k)) for k in ("caption_1", "caption_2"))


PROBE = Probe(workflow=RECAPTION, kind=PAIR_KIND, error="an unsupported phrase inserted in both captions", plant=plant, caught=caught,
              into_draft=into_draft)


def plant_filter(truth: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any] | None:
    """Scores under which `preselect` picks the gold answer's image for caption 2 under caption 1 and
    the other way round; None when the gold answer discards the pair (no image to swap)."""
    first, second = truth.get("choice_1"), truth.get("choice_2")
    n = len(item.get("candidates") or [])
    if not isinstance(first, int) or not isinstance(second, int) or first == second or not (0 <= first < n and 0 <= second < n):
        return None
    return {"scores": [[HIGH if i == second else LOW, HIGH if i == first else LOW] for i in range(n)]}


def caught_filter(truth: Mapping[str, Any], answer: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    # The planted image of caption 1 is the gold one of caption 2, and the other way round.
    return answer.get("choice_1") != truth.get("choice_2") and answer.get("choice_2") != truth.get("choice_1")


FILTER_PROBE = Probe(workflow=FILTER, kind=ITM_KIND, error="each caption's image flipped to the other caption's",
                     plant=plant_filter, caught=caught_filter)
