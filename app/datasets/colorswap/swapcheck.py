"""The ColorSwap swap constraint: two captions with the same words, their colour words exchanged.

Pure functions over strings, no database or web imports. Captions are compared word by word,
ignoring case and punctuation; colour terms come from a configurable vocabulary, and a
modifier directly before a colour ("light blue", "dark-green") belongs to the colour term.
Hand-written because no library models this constraint; it is a few dozen lines of
tokenising and sequence comparison (difflib does the diff).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

# Berlin & Kay's eleven basic colour terms, the American spelling of grey, and common
# variants that image models draw and annotators write.
BASIC_COLOURS = (
    "black", "white", "red", "green", "yellow", "blue", "brown", "orange", "pink", "purple", "grey", "gray",
)
COLOUR_VARIANTS = (
    "violet", "beige", "gold", "golden", "silver", "turquoise", "teal", "navy", "maroon", "cyan", "magenta",
    "lavender", "tan", "crimson", "scarlet", "cream", "ivory", "khaki", "indigo", "lime", "olive", "peach",
    "burgundy", "bronze", "copper", "coral", "mint", "aqua", "charcoal", "amber", "lilac", "mauve", "rust",
    "reddish", "greenish", "bluish", "yellowish", "pinkish", "purplish", "brownish", "greyish", "grayish",
)
DEFAULT_COLOURS = BASIC_COLOURS + COLOUR_VARIANTS
DEFAULT_MODIFIERS = ("light", "dark", "pale", "bright", "deep", "pastel", "neon", "navy", "sky", "royal", "hot")

# Words (letters and digits) with an inner apostrophe; hyphens and all other punctuation split.
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
# CSS colour of each basic term, for the swatches on the screens.
SWATCHES = {
    "black": "#111", "white": "#fff", "red": "#d22", "green": "#2a2", "yellow": "#ec2", "blue": "#24d",
    "brown": "#853", "orange": "#f80", "pink": "#f8b", "purple": "#829", "grey": "#999", "gray": "#999",
}


@dataclass(frozen=True)
class Vocabulary:
    colours: frozenset[str]
    modifiers: frozenset[str]

    @classmethod
    def build(cls, colours: Iterable[str] | None = None, modifiers: Iterable[str] | None = None) -> Vocabulary:
        return cls(
            frozenset(c.strip().lower() for c in (DEFAULT_COLOURS if colours is None else colours) if c.strip()),
            frozenset(m.strip().lower() for m in (DEFAULT_MODIFIERS if modifiers is None else modifiers) if m.strip()),
        )

    @classmethod
    def from_config(cls, config: dict) -> Vocabulary:
        return cls.build(config.get("colour_words"), config.get("colour_modifiers"))


DEFAULT_VOCABULARY = Vocabulary.build()


@dataclass(frozen=True)
class Token:
    """One unit of a caption: a word, or a colour term of one or two words."""

    text: str  # as written, for display
    norm: str  # lower case, words joined by one space
    start: int  # character offsets in the caption
    end: int
    colour: bool


def tokenize(caption: str, vocab: Vocabulary = DEFAULT_VOCABULARY) -> list[Token]:
    words = list(_WORD.finditer(caption))
    out: list[Token] = []
    i = 0
    while i < len(words):
        w = words[i]
        low = _fold(w.group())
        if low in vocab.modifiers and i + 1 < len(words) and _fold(words[i + 1].group()) in vocab.colours:
            nxt = words[i + 1]
            out.append(Token(caption[w.start() : nxt.end()], f"{low} {_fold(nxt.group())}", w.start(), nxt.end(), True))
            i += 2
            continue
        out.append(Token(w.group(), low, w.start(), w.end(), low in vocab.colours))
        i += 1
    return out


def _fold(word: str) -> str:
    return word.lower().replace("’", "'")


@dataclass(frozen=True)
class Move:
    """A colour slot that changed: the colour of caption 1, of caption 2, and the word it describes."""

    before: str
    after: str
    near: str


@dataclass
class SwapCheck:
    ok: bool
    problems: list[str] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    # Words of caption 1 and 2 that differ outside the colour slots.
    changed_1: list[str] = field(default_factory=list)
    changed_2: list[str] = field(default_factory=list)
    colours_1: list[str] = field(default_factory=list)
    colours_2: list[str] = field(default_factory=list)


def check_swap(caption_1: str, caption_2: str, vocab: Vocabulary = DEFAULT_VOCABULARY) -> SwapCheck:
    """Whether the captions are a colour-swap pair, and if not, what breaks it, in plain words."""
    t1, t2 = tokenize(caption_1, vocab), tokenize(caption_2, vocab)
    c1 = [t.norm for t in t1 if t.colour]
    c2 = [t.norm for t in t2 if t.colour]
    result = SwapCheck(ok=False, colours_1=c1, colours_2=c2)
    if not t1 or not t2:
        result.problems.append("Both captions need words.")
        return result
    s1, s2 = _skeleton(t1), _skeleton(t2)
    if s1 != s2:
        for tag, a0, a1, b0, b1 in difflib.SequenceMatcher(a=s1, b=s2, autojunk=False).get_opcodes():
            if tag == "equal":
                continue
            result.changed_1 += [t1[k].text for k in range(a0, a1) if not t1[k].colour]
            result.changed_2 += [t2[k].text for k in range(b0, b1) if not t2[k].colour]
            left = " ".join(t1[k].text for k in range(a0, a1)) or "(nothing)"
            right = " ".join(t2[k].text for k in range(b0, b1)) or "(nothing)"
            result.problems.append(f"The captions differ in more than colour words: “{left}” in caption 1, “{right}” in caption 2.")
    if not c1:
        result.problems.append("Caption 1 has no colour word.")
    if Counter(c1) != Counter(c2):
        only_1 = sorted((Counter(c1) - Counter(c2)).elements())
        only_2 = sorted((Counter(c2) - Counter(c1)).elements())
        if only_1:
            result.problems.append(f"Colour words only in caption 1: {', '.join(only_1)}. A swap pair uses the same colours.")
        if only_2:
            result.problems.append(f"Colour words only in caption 2: {', '.join(only_2)}. A swap pair uses the same colours.")
    elif c1 == c2 and s1 == s2:
        result.problems.append("The captions are the same; exchange colour words between objects.")
    if s1 == s2:
        slots_1 = [k for k, t in enumerate(t1) if t.colour]
        for k, a, b in zip(slots_1, c1, c2, strict=False):
            if a != b:
                result.moves.append(Move(a, b, _described(t1, k)))
    result.ok = not result.problems
    return result


def _skeleton(tokens: list[Token]) -> list[str]:
    """The caption with each colour term replaced by one slot marker. The article before a
    colour follows its sound ("an orange cat" / "a red cat"), so "a" and "an" are one word."""
    return ["\0" if t.colour else ("a" if t.norm == "an" else t.norm) for t in tokens]


def _described(tokens: list[Token], k: int) -> str:
    """The word a colour term describes: the next non-colour word, else the previous one."""
    for t in tokens[k + 1 :]:
        if not t.colour:
            return t.text
    for t in reversed(tokens[:k]):
        if not t.colour:
            return t.text
    return ""


def highlight(caption: str, vocab: Vocabulary = DEFAULT_VOCABULARY) -> list[tuple[str, str | None]]:
    """Split a caption into (text, colour-or-None) runs, for templates to mark the colour terms."""
    runs: list[tuple[str, str | None]] = []
    pos = 0
    for t in tokenize(caption, vocab):
        if not t.colour:
            continue
        if t.start > pos:
            runs.append((caption[pos : t.start], None))
        runs.append((t.text, t.norm))
        pos = t.end
    if pos < len(caption):
        runs.append((caption[pos:], None))
    return runs


def swatch(colour: str) -> str | None:
    """A CSS colour for a colour term's head word, when it is a basic term."""
    return SWATCHES.get(colour.split()[-1])


def caption_runs(caption: str, vocab: Vocabulary = DEFAULT_VOCABULARY) -> list[dict]:
    """A caption as runs of text for a screen, colour terms marked with their swatch."""
    return [{"text": text, "colour": colour, "swatch": swatch(colour) if colour else None} for text, colour in highlight(caption, vocab)]
