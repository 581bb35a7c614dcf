"""Token-level edit operations between a model's caption and its human correction.

Pure functions over strings. Tokens are words and punctuation marks. The operations come
from a longest-common-subsequence alignment (not difflib's heuristic matcher), so a
correction made only by deleting tokens always yields deletions only. Captions are short
(tens of tokens), so the O(n·m) table costs microseconds. Hand-written because the
guarantee above is what the WikiDO edit analysis rests on and no small library states it.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cache


@cache
def _token_pattern() -> re.Pattern[str]:
    """Words are letters and digits with the combining marks written on them (Hebrew points, Arabic
    vowel signs, Indic vowel signs, accents written apart), which `re`'s \\w leaves out: without them a
    pointed or vowelled word fell apart into letters and marks. The screen's script (wikido.js) uses
    the same classes ([\\p{L}\\p{N}] then [\\p{L}\\p{N}\\p{M}]). Built on first use: the scan of the
    planes where marks live takes tens of milliseconds."""
    ranges, start, last = [], None, None
    for code in itertools.chain(range(0x300, 0x20000), range(0xE0100, 0xE01F0)):
        if unicodedata.category(chr(code))[0] == "M":
            if start is None or code != last + 1:
                if start is not None:
                    ranges.append((start, last))
                start = code
            last = code
    ranges.append((start, last))
    marks = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)
    word = rf"[^\W_](?:[^\W_]|[{marks}])*"
    return re.compile(rf"{word}(?:['’.-]{word})*|[^\w\s]|_")


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    """Words (with inner apostrophes, hyphens and dots: "don't", "well-known", "U.S") and single punctuation marks."""
    return [Token(m.group(), m.start(), m.end()) for m in _token_pattern().finditer(text)]


def words(text: str) -> list[str]:
    return [t.text for t in tokenize(text)]


@dataclass(frozen=True)
class EditOp:
    """Tokens a[i1:i2] of the original become b[j1:j2] of the correction."""

    op: str  # "delete", "insert" or "replace" (a substitution)
    i1: int
    i2: int
    j1: int
    j2: int
    old: tuple[str, ...]
    new: tuple[str, ...]

    def as_dict(self) -> dict:
        d = asdict(self)
        d["old"], d["new"] = list(self.old), list(self.new)
        return d


def _lcs_table(a: Sequence[str], b: Sequence[str]) -> list[list[int]]:
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = table[i], table[i + 1]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if a[i] == b[j] else max(below[j], row[j + 1])
    return table


def edit_ops(original: Sequence[str], corrected: Sequence[str]) -> list[EditOp]:
    """The edit operations turning `original` tokens into `corrected` tokens."""
    a, b = list(original), list(corrected)
    table = _lcs_table(a, b)
    ops: list[EditOp] = []
    i = j = 0
    gap_i, gap_j = 0, 0

    def close(i_end: int, j_end: int) -> None:
        if gap_i == i_end and gap_j == j_end:
            return
        kind = "replace" if gap_i < i_end and gap_j < j_end else ("delete" if gap_i < i_end else "insert")
        ops.append(EditOp(kind, gap_i, i_end, gap_j, j_end, tuple(a[gap_i:i_end]), tuple(b[gap_j:j_end])))

    while i < len(a) and j < len(b):
        if a[i] == b[j] and table[i][j] == table[i + 1][j + 1] + 1:
            close(i, j)
            i, j = i + 1, j + 1
            gap_i, gap_j = i, j
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1  # prefer deleting from the original: corrections are mostly deletions
        else:
            j += 1
    close(len(a), len(b))
    return ops


def apply_ops(original: Sequence[str], ops: Sequence[EditOp]) -> list[str]:
    out: list[str] = []
    pos = 0
    for op in sorted(ops, key=lambda o: o.i1):
        out.extend(original[pos : op.i1])
        out.extend(op.new)
        pos = op.i2
    out.extend(original[pos:])
    return out


def levenshtein(a: Sequence[str], b: Sequence[str]) -> int:
    """Token-level edit distance (insert, delete, substitute one token: cost 1 each)."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


@dataclass(frozen=True)
class EditSummary:
    ops: list[EditOp]
    distance: int
    deleted: int
    inserted: int
    substituted: int

    @property
    def kind(self) -> str:
        """"none", "deletion", "insertion", "substitution", or "mixed" when several kinds occur."""
        kinds = {op.op for op in self.ops}
        if not kinds:
            return "none"
        if len(kinds) > 1:
            return "mixed"
        return {"delete": "deletion", "insert": "insertion", "replace": "substitution"}[kinds.pop()]

    def as_dict(self) -> dict:
        return {
            "ops": [op.as_dict() for op in self.ops],
            "distance": self.distance,
            "deleted": self.deleted,
            "inserted": self.inserted,
            "substituted": self.substituted,
            "kind": self.kind,
        }


def summarize(original: str, corrected: str) -> EditSummary:
    a, b = words(original), words(corrected)
    ops = edit_ops(a, b)
    return EditSummary(
        ops=ops,
        distance=levenshtein(a, b),
        deleted=sum(len(op.old) for op in ops if op.op == "delete"),
        inserted=sum(len(op.new) for op in ops if op.op == "insert"),
        substituted=sum(max(len(op.old), len(op.new)) for op in ops if op.op == "replace"),
    )


def detokenize(tokens: Sequence[str]) -> str:
    """Join tokens as a caption: no space before closing punctuation or after opening marks."""
    out = ""
    for t in tokens:
        if out and not (t in ",.;:!?)]}%'’”،؛؟" or out[-1] in "([{“$"):
            out += " "
        out += t
    return out
