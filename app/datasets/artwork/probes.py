"""ExpArt explanation's probe: the drafted explanation beside the judged one vouches for a phrase the gold
answer strikes as unsupported.

The answer judges the item's own explanation (its struck words and score); the drafted explanation is a
second model's, shown for comparison, and the answer cannot touch it. A phrase planted in the draft alone
could never be corrected, and planting one in the judged text would change the item on every path (its
tokens, the struck indices, their validation, gold scoring, the histories). So the probe plants the error
where a draft can do harm here: the gold answer's first struck run with a content word (a phrase the
section does not support) is inserted into the item's real draft, at the end of its first sentence, so
that a second model seems to say the same. Caught when the answer still strikes a content word of that
phrase in the judged explanation; an annotator who anchors on the draft keeps it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from app.bias.probes import Probe
from app.datasets.artwork.drafts import metrics
from app.datasets.artwork.explanation import content_word, indices_of
from app.datasets.artwork.schema import DRAFTED_KIND, EXPLANATION
from app.datasets.wikido.tokenedits import tokenize

_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def _run(truth: Mapping[str, Any], item: Mapping[str, Any]) -> tuple[int, int] | None:
    """The gold answer's first struck run of the explanation's tokens with a content word."""
    toks = tokenize(str(item.get("explanation") or ""))
    for a, b in truth.get("struck") or []:
        b = min(int(b), len(toks))
        if any(content_word(toks[i].text) for i in range(int(a), b)):
            return int(a), b
    return None


def plant(truth: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any] | None:
    """The phrase to plant ({"phrase"}); None when the gold answer strikes no content word."""
    run = _run(truth, item)
    if run is None:
        return None
    explanation = str(item.get("explanation") or "")
    toks = tokenize(explanation)
    return {"phrase": " ".join(explanation[toks[run[0]].start:toks[run[1] - 1].end].split())}


def inserted(draft: str, phrase: str) -> str:
    """The draft with the phrase at the end of its first sentence (before its full stop)."""
    end = _SENTENCE_END.search(draft)
    if end is None:
        return f"{draft.rstrip()} {phrase}"
    return f"{draft[:end.start()].rstrip()} {phrase}{draft[end.start():]}"


def into_draft(planted: Mapping[str, Any], draft: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any]:
    """The real draft's payload (its other keys kept) with the phrase inserted and its metrics recomputed,
    as the drafter would have stored that text."""
    text = inserted(str(draft.get("explanation") or ""), str(planted["phrase"]))
    return {**draft, "explanation": text, "metrics": metrics(item, text)}


def caught(truth: Mapping[str, Any], answer: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    run = _run(truth, item)
    if run is None:
        return True
    toks = tokenize(str(item.get("explanation") or ""))
    return any(i in indices_of(answer.get("struck")) for i in range(*run) if content_word(toks[i].text))


PROBE = Probe(workflow=EXPLANATION, kind=DRAFTED_KIND, error="a phrase the gold answer strikes, repeated by the drafted explanation",
              plant=plant, caught=caught, into_draft=into_draft)
