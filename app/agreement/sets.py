"""Agreement between sets of texts (VisArgs visual premises): Jaccard, exact after normalisation or soft-matched."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

import numpy as np


# A word: letters and digits, with apostrophes and hyphens inside it ("dog's", "well-known").
_WORD = re.compile(r"[^\W_]+(?:['’\-‐][^\W_]+)*")


def normalize(text: str) -> str:
    """Case, spacing and punctuation do not make two premises different: the words, lower-cased,
    one space apart (punctuation inside a word, as in "dog's" or "well-known", stays; a curly
    apostrophe counts as a straight one)."""
    return " ".join(w.replace("’", "'").replace("‐", "-") for w in _WORD.findall(text.lower()))


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """|A ∩ B| / |A ∪ B| after normalisation; two empty sets agree fully."""
    sa, sb = {normalize(t) for t in a} - {""}, {normalize(t) for t in b} - {""}
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def soft_jaccard(a: Sequence[str], b: Sequence[str], similarity: Callable[[Sequence[str], Sequence[str]], np.ndarray], threshold: float) -> float:
    """Jaccard where two texts count as the same when an optimal one-to-one matching pairs them
    with similarity >= threshold: matched / (|A| + |B| - matched)."""
    from scipy.optimize import linear_sum_assignment  # imported when used, as in boxes.matched_ious

    a, b = list(dict.fromkeys(a)), list(dict.fromkeys(b))
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    sim = np.asarray(similarity(a, b), dtype=float)
    rows, cols = linear_sum_assignment(-sim)
    matched = int((sim[rows, cols] >= threshold).sum())
    return matched / (len(a) + len(b) - matched)


def token_set_jaccard(a: Iterable[tuple[int, int]], b: Iterable[tuple[int, int]]) -> float:
    """Agreement of deleted tokens: Jaccard of the token positions two correctors struck."""
    sa = {i for start, end in a for i in range(start, end)}
    sb = {i for start, end in b for i in range(start, end)}
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)
