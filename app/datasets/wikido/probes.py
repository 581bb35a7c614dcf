"""WikiDO's probe: an underline over words the gold answer keeps, as if a model called them made up.

Planted on a gold item whose answer is Correct or Hallucinated: two neighbouring words the gold
answer keeps (the first pair of words, not punctuation) are underlined as unsupported. The answer
caught it when it strikes none of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.bias.probes import Probe
from app.datasets.wikido.tokenedits import tokenize
from app.datasets.wikido.verify import UNSUPPORTED_KIND, VERIFY

PLANTED_WORDS = 2


def struck(answer: Mapping[str, Any]) -> set[int]:
    """The caption's token indices an answer strikes (deleted or replaced)."""
    if answer.get("verdict") != "hallucinated":
        return set()
    ops = (answer.get("edits") or {}).get("ops", [])
    return {i for op in ops if op["op"] != "insert" for i in range(op["i1"], op["i2"])}


def _span(truth: Mapping[str, Any], item: Mapping[str, Any]) -> tuple[int, int] | None:
    if truth.get("verdict") not in ("correct", "hallucinated"):
        return None
    kept = [i for i, t in enumerate(tokenize(str(item.get("caption") or ""))) if i not in struck(truth) and t.text.isalnum()]
    for i in kept:
        if all(i + k in kept for k in range(PLANTED_WORDS)):
            return i, i + PLANTED_WORDS
    return None


def plant(truth: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any] | None:
    span = _span(truth, item)
    return None if span is None else {"spans": [list(span)]}


def caught(truth: Mapping[str, Any], answer: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    span = _span(truth, item)
    return span is None or not (struck(answer) & set(range(*span)))


PROBE = Probe(workflow=VERIFY, kind=UNSUPPORTED_KIND, error="supported words underlined as made up", plant=plant, caught=caught)
