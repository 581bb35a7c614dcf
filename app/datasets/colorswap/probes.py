"""ColorSwap's probe: the gold answer's caption pair with a phrase the images do not show inserted in
both captions (the colour swap stays intact). The answer caught it when neither caption keeps it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.bias.probes import Probe
from app.datasets.colorswap.schema import PAIR_KIND, RECAPTION

PLANTED = "beside a tall wooden lamp"


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
