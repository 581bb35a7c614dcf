"""The ColorSwap swap constraint: two captions with the same words in another order, whose colour
terms describe different things.

The dataset's definition (after Winoground): *the two captions have the same words, but the
colour words are rearranged to modify different objects*. Either the colours move ("a red cat in
a grey jacket" / "a grey cat in a red jacket") or the objects do ("a black penguin with a white
bear" / "a black bear with a white penguin"); both are swaps. Captions are compared word by word,
ignoring case and punctuation, with "a" and "an" as one word (the article follows the colour's
sound). Colour terms come from a broad vocabulary that a stage's configuration can extend; a
modifier directly before a colour ("light blue", "burnt orange", "pitch-black") belongs to the
colour term. Pure functions over strings, no database or web imports. Hand-written because no
library models this constraint; it is a few dozen lines of tokenising and sequence comparison
(difflib does the diff).
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
    "fuchsia", "ruby", "emerald", "sage", "mustard", "raspberry", "plum", "salmon", "sapphire", "jade",
    "cobalt", "azure", "vermilion", "ochre", "ocher", "taupe", "periwinkle", "cerulean", "chartreuse",
    "blonde", "blond", "auburn", "multicolored", "multicoloured", "rainbow", "colorless", "colourless",
    "reddish", "greenish", "bluish", "blueish", "yellowish", "pinkish", "purplish", "brownish", "greyish",
    "grayish", "whitish", "whiteish", "blackish", "orangish", "orangey", "goldish",
)
DEFAULT_COLOURS = BASIC_COLOURS + COLOUR_VARIANTS
DEFAULT_MODIFIERS = (
    "light", "dark", "pale", "bright", "deep", "pastel", "neon", "navy", "sky", "royal", "hot", "baby", "burnt",
    "electric", "pitch", "rose", "forest", "blood", "jet", "snow", "off", "dusty", "muted", "vivid", "lime",
    "olive", "mint", "sea", "powder", "midnight", "hunter", "brick", "cherry", "lemon",
)

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
        """The stage's vocabulary: `colour_words` / `colour_modifiers` replace the defaults,
        `extra_colour_words` / `extra_colour_modifiers` extend them."""
        base = cls.build(config.get("colour_words"), config.get("colour_modifiers"))
        extra = cls.build(config.get("extra_colour_words") or [], config.get("extra_colour_modifiers") or [])
        return cls(base.colours | extra.colours, base.modifiers | extra.modifiers)


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
    """A binding that changed: the thing described (`near`), its colour in caption 1 and in caption 2."""

    before: str
    after: str
    near: str


@dataclass
class SwapCheck:
    ok: bool
    problems: list[str] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    # What was exchanged: "colours" (same words in place, colours moved), "objects" (the things
    # described moved), or "" when the pair is no swap.
    kind: str = ""
    # Words of caption 1 and 2 that are not in the other caption.
    changed_1: list[str] = field(default_factory=list)
    changed_2: list[str] = field(default_factory=list)
    colours_1: list[str] = field(default_factory=list)
    colours_2: list[str] = field(default_factory=list)


def check_swap(caption_1: str, caption_2: str, vocab: Vocabulary = DEFAULT_VOCABULARY) -> SwapCheck:
    """Whether the captions are a swap pair, and if not, what breaks it, in plain words."""
    t1, t2 = tokenize(caption_1, vocab), tokenize(caption_2, vocab)
    c1 = [t.norm for t in t1 if t.colour]
    c2 = [t.norm for t in t2 if t.colour]
    result = SwapCheck(ok=False, colours_1=c1, colours_2=c2)
    if not t1 or not t2:
        result.problems.append("Both captions need words.")
        return result
    w1, w2 = _words(t1), _words(t2)
    if Counter(c1) != Counter(c2):
        only_1 = sorted((Counter(c1) - Counter(c2)).elements())
        only_2 = sorted((Counter(c2) - Counter(c1)).elements())
        if only_1:
            result.problems.append(f"Colour words only in caption 1: {', '.join(only_1)}. A swap pair uses the same colours.")
        if only_2:
            result.problems.append(f"Colour words only in caption 2: {', '.join(only_2)}. A swap pair uses the same colours.")
    if Counter(_skeleton(t1)) != Counter(_skeleton(t2)):
        _report_changed_words(t1, t2, result)
    if not c1:
        result.problems.append("Caption 1 has no colour word.")
    if result.problems:
        return result
    if w1 == w2:
        result.problems.append("The captions are the same; exchange colour words between objects.")
        return result
    if _skeleton(t1) == _skeleton(t2):
        # Every other word in place, the colours in another order: a colour swap.
        result.kind = "colours"
        slots = [k for k, t in enumerate(t1) if t.colour]
        result.moves = [Move(a, b, _described(t1, k)) for k, a, b in zip(slots, c1, c2, strict=True) if a != b]
    else:
        b1, b2 = _bindings(t1), _bindings(t2)
        if Counter(b1) == Counter(b2):
            said = ", ".join(f"{colour} {near}" for colour, near in b1)
            result.problems.append(
                f"The words moved, but each colour still describes the same thing ({said}): "
                "exchange the colours, or the things they describe."
            )
            return result
        result.kind = "objects"
        result.moves = _binding_moves(b1, b2)
    result.ok = True
    return result


def _words(tokens: list[Token]) -> list[str]:
    return ["a" if t.norm == "an" else t.norm for t in tokens]


def _skeleton(tokens: list[Token]) -> list[str]:
    """The caption with each colour term replaced by one slot marker. The article before a
    colour follows its sound ("an orange cat" / "a red cat"), so "a" and "an" are one word."""
    return ["\0" if t.colour else ("a" if t.norm == "an" else t.norm) for t in tokens]


def _report_changed_words(t1: list[Token], t2: list[Token], result: SwapCheck) -> None:
    """Name the words one caption has and the other lacks, where they stand."""
    s1, s2 = _skeleton(t1), _skeleton(t2)
    left_over = Counter(s1) - Counter(s2)
    right_over = Counter(s2) - Counter(s1)
    for tag, a0, a1, b0, b1 in difflib.SequenceMatcher(a=s1, b=s2, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        extra_1 = [t1[k] for k in range(a0, a1) if not t1[k].colour and left_over[s1[k]] > 0]
        extra_2 = [t2[k] for k in range(b0, b1) if not t2[k].colour and right_over[s2[k]] > 0]
        for t in extra_1:
            left_over[_skeleton([t])[0]] -= 1
        for t in extra_2:
            right_over[_skeleton([t])[0]] -= 1
        if not extra_1 and not extra_2:
            continue  # words that only moved
        result.changed_1 += [t.text for t in extra_1]
        result.changed_2 += [t.text for t in extra_2]
        left = " ".join(t.text for t in extra_1) or "(nothing)"
        right = " ".join(t.text for t in extra_2) or "(nothing)"
        result.problems.append(f"The captions differ in more than colour words: “{left}” in caption 1, “{right}” in caption 2.")


def _bindings(tokens: list[Token]) -> list[tuple[str, str]]:
    """(colour, the word it describes) for each colour term, in caption order."""
    return [(t.norm, _described(tokens, k).lower()) for k, t in enumerate(tokens) if t.colour]


def _binding_moves(b1: list[tuple[str, str]], b2: list[tuple[str, str]]) -> list[Move]:
    """For each thing caption 1 colours, its colour there and in caption 2, where they differ."""
    left = list(b2)
    moves = []
    for colour, near in b1:
        match = next((b for b in left if b[1] == near), None)
        if match is None:
            moves.append(Move(colour, "—", near))
            continue
        left.remove(match)
        if match[0] != colour:
            moves.append(Move(colour, match[0], near))
    return moves


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
