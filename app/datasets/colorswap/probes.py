"""ColorSwap's probes. Recaptioning: the gold answer's caption pair with a phrase the images do not show
inserted in both captions (the colour swap stays intact); caught when neither caption keeps it.
Filtering: image-text scores that preselect the gold answer's two images the wrong way round (each
caption's label flipped to the other's image); caught when neither caption keeps its planted image."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.bias.probes import Probe
from app.datasets.colorswap.schema import FILTER, ITM_KIND, PAIR_KIND, RECAPTION

PLANTED = "beside a tall wooden lamp"
# The planted scores: a preselected image's score for its caption, and every other score. Within the
# range a CLIP-like model gives (cosines of about 0.15 to 0.35), and apart by far more than any margin.
HIGH, LOW = 0.3125, 0.1875


def _inserted(caption: str) -> str:
    text = caption.rstrip()
    end = text[-1] if text and text[-1] in ".!?" else ""
    return f"{text[:len(text) - len(end)]} {PLANTED}{end}"


def plant(truth: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any] | None:
    if not truth.get("caption_1") or not truth.get("caption_2"):
        return None
    return {"caption_1": _inserted(str(truth["caption_1"])), "caption_2": _inserted(str(truth["caption_2"]))}


def caught(truth: Mapping[str, Any], answer: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    return not any(PLANTED in " ".join(str(answer.get(k) or "").lower().split()) for k in ("caption_1", "caption_2"))


PROBE = Probe(workflow=RECAPTION, kind=PAIR_KIND, error="an unsupported phrase inserted in both captions", plant=plant, caught=caught)


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
