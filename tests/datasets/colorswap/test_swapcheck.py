"""The swap-constraint checker: laws over generated captions, and the cases annotators meet."""

from __future__ import annotations

import string

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from app.datasets.colorswap.swapcheck import (
    DEFAULT_VOCABULARY,
    Vocabulary,
    check_swap,
    highlight,
    tokenize,
)

COLOURS = sorted({"red", "blue", "green", "yellow", "grey", "pink", "purple", "orange", "light blue", "dark green"})
PLAIN = st.text(alphabet=string.ascii_lowercase, min_size=2, max_size=8).filter(
    lambda w: w not in DEFAULT_VOCABULARY.colours and w not in DEFAULT_VOCABULARY.modifiers
)


@st.composite
def captions(draw):
    """A caption as a list of words and colour terms, with at least two different colours."""
    words = draw(st.lists(PLAIN, min_size=2, max_size=10))
    colours = draw(st.lists(st.sampled_from(COLOURS), min_size=2, max_size=4))
    assume(len(set(colours)) >= 2)
    slots = sorted(draw(st.lists(st.integers(0, len(words)), min_size=len(colours), max_size=len(colours))))
    return words, colours, slots


def render(words, colours, slots) -> str:
    out = list(words)
    for offset, (slot, colour) in enumerate(zip(slots, colours, strict=True)):
        out.insert(slot + offset, colour)
    return " ".join(out)


@given(captions(), st.randoms(use_true_random=False))
def test_exchanging_colour_words_gives_a_valid_pair(caption, rnd):
    words, colours, slots = caption
    swapped = list(colours)
    while swapped == colours:
        rnd.shuffle(swapped)
    result = check_swap(render(words, colours, slots), render(words, swapped, slots))
    assert result.ok, result.problems
    assert sorted(result.colours_1) == sorted(result.colours_2)
    assert [m.before for m in result.moves] == [a for a, b in zip(colours, swapped, strict=True) if a != b]


@given(captions(), st.data())
def test_changing_a_non_colour_word_breaks_the_pair(caption, data):
    words, colours, slots = caption
    swapped = colours[1:] + colours[:1]
    assume(swapped != colours)
    k = data.draw(st.integers(0, len(words) - 1))
    other = data.draw(PLAIN.filter(lambda w: w != words[k]))
    changed = words[:k] + [other] + words[k + 1 :]
    result = check_swap(render(words, colours, slots), render(changed, swapped, slots))
    assert not result.ok
    assert other in result.changed_2
    assert any("more than colour words" in p for p in result.problems)


@given(captions(), st.data())
def test_case_and_punctuation_do_not_matter(caption, data):
    words, colours, slots = caption
    swapped = colours[::-1]
    assume(swapped != colours)
    plain = render(words, swapped, slots)
    noisy = "".join(c.upper() if data.draw(st.booleans()) else c for c in plain)
    noisy = noisy.replace(" ", data.draw(st.sampled_from([" ", ", ", " - ", ";  "])), 1)
    noisy = data.draw(st.sampled_from(["", "“", "("])) + noisy + data.draw(st.sampled_from([".", "!", "?", "”.", ""]))
    assert check_swap(render(words, colours, slots), noisy).ok


@given(captions())
def test_the_check_is_symmetric_and_a_caption_is_not_its_own_pair(caption):
    words, colours, slots = caption
    a, b = render(words, colours, slots), render(words, colours[::-1], slots)
    assert check_swap(a, b).ok == check_swap(b, a).ok
    assert not check_swap(a, a).ok


def test_the_classic_pair_and_its_moves():
    result = check_swap("A red cat in a grey jacket.", "a grey cat in a red jacket")
    assert result.ok
    assert [(m.before, m.after, m.near) for m in result.moves] == [("red", "grey", "cat"), ("grey", "red", "jacket")]


def test_a_new_colour_is_named():
    result = check_swap("a red cat in a grey jacket", "a grey cat in a blue jacket")
    assert not result.ok
    assert any("only in caption 1: red" in p for p in result.problems)
    assert any("only in caption 2: blue" in p for p in result.problems)


def test_modifiers_bind_to_colours_and_hyphens_split():
    tokens = [t.norm for t in tokenize("a light-blue car next to a Dark Green tree", DEFAULT_VOCABULARY) if t.colour]
    assert tokens == ["light blue", "dark green"]
    assert check_swap("a light blue car and a red bike", "a red car and a light-blue bike").ok
    # "light" alone is an ordinary word and must stay where it is.
    assert not check_swap("a light red lamp and a blue bag", "a red lamp and a light blue bag").ok


def test_an_insertion_is_reported():
    result = check_swap("a red cat on a blue mat", "a blue fluffy cat on a red mat")
    assert not result.ok
    assert result.changed_2 == ["fluffy"]


def test_a_configured_vocabulary_is_used():
    vocab = Vocabulary.build(colours=["vermilion", "ochre"], modifiers=[])
    # The article follows the colour's sound, so a/an may change with the swap.
    assert check_swap("a vermilion door, an ochre wall", "an ochre door, a vermilion wall", vocab).ok
    assert check_swap("the vermilion door and ochre wall", "the ochre door and vermilion wall", vocab).ok
    assert not check_swap("the red door and blue wall", "the blue door and red wall", vocab).ok


def test_highlight_keeps_the_text():
    caption = "A RED cat, in a light-blue jacket!"
    runs = highlight(caption)
    assert "".join(text for text, _ in runs) == caption
    assert [c for _, c in runs if c] == ["red", "light blue"]


@st.composite
def described(draw):
    """A caption where each colour directly precedes the distinct thing it describes."""
    n = draw(st.integers(2, 4))
    things = draw(st.lists(PLAIN, min_size=n, max_size=n, unique=True))
    colours = draw(st.lists(st.sampled_from(COLOURS), min_size=n, max_size=n))
    assume(len(set(colours)) >= 2)
    glue = draw(st.lists(PLAIN, min_size=n + 1, max_size=n + 1))
    return things, colours, glue


def phrase(things, colours, glue) -> str:
    out = [glue[0]]
    for thing, colour, word in zip(things, colours, glue[1:], strict=True):
        out += [colour, thing, word]
    return " ".join(out)


@given(described())
def test_moving_the_things_described_is_a_swap_too(caption):
    things, colours, glue = caption
    # A rotation is one cycle: with two colours or more, some thing gets another colour.
    moved = things[1:] + things[:1]
    result = check_swap(phrase(things, colours, glue), phrase(moved, colours, glue))
    assert result.ok and result.kind == "objects", result.problems
    # Every thing whose colour changed is named with its colour before and after.
    expected = {t: (c, dict(zip(moved, colours))[t]) for t, c in zip(things, colours) if dict(zip(moved, colours))[t] != c}
    assert {m.near: (m.before, m.after) for m in result.moves} == expected


@given(described(), st.data())
def test_moving_things_while_changing_a_word_is_no_swap(caption, data):
    things, colours, glue = caption
    moved = things[1:] + things[:1]
    k = data.draw(st.integers(0, len(glue) - 1))
    other = data.draw(PLAIN.filter(lambda w: w not in glue and w not in things))
    changed = glue[:k] + [other] + glue[k + 1 :]
    result = check_swap(phrase(things, colours, glue), phrase(moved, colours, changed))
    assert not result.ok and other in result.changed_2


def test_object_swaps_from_the_release():
    result = check_swap("a black penguin with a white bear", "a black bear with a white penguin")
    assert result.ok and result.kind == "objects"
    assert [(m.near, m.before, m.after) for m in result.moves] == [("penguin", "black", "white"), ("bear", "white", "black")]


def test_moving_words_without_changing_what_colours_describe_is_refused():
    result = check_swap("a red cat and a blue dog", "a blue dog and a red cat")
    assert not result.ok and "still describes the same thing" in result.problems[0]


@pytest.mark.parametrize(
    "colour",
    ["whiteish", "fuchsia", "ruby", "emerald", "sage", "mustard", "raspberry", "burnt orange", "electric blue", "pitch black", "rose pink"],
)
def test_the_default_vocabulary_knows_the_release_colours(colour):
    assert [t.norm for t in tokenize(f"a {colour} vase on a grey table") if t.colour] == [colour, "grey"]
    assert check_swap(f"a {colour} vase on a grey table", f"a grey vase on a {colour} table").ok


def test_a_stage_extends_the_vocabulary():
    vocab = Vocabulary.from_config({"extra_colour_words": ["glaucous"], "extra_colour_modifiers": ["smoky"]})
    assert {"glaucous", "red"} <= vocab.colours and {"smoky", "light"} <= vocab.modifiers
    assert check_swap("a glaucous jug by a smoky red cup", "a smoky red jug by a glaucous cup", vocab).ok
    # `colour_words` replaces the defaults.
    assert Vocabulary.from_config({"colour_words": ["glaucous"]}).colours == {"glaucous"}
