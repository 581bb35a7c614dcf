"""Token edit operations: they rebuild the correction, and pure deletions are deletions only."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.datasets.wikido.tokenedits import (
    apply_ops,
    detokenize,
    edit_ops,
    levenshtein,
    summarize,
    words,
)

TOKENS = st.lists(st.sampled_from(["the", "a", "red", "church", "in", "Paris", ",", ".", "built", "1850", "tall"]), max_size=25)


@given(TOKENS, TOKENS)
def test_applying_the_operations_gives_the_correction(original, corrected):
    ops = edit_ops(original, corrected)
    assert apply_ops(original, ops) == corrected
    # Operations never touch the same tokens twice and never describe "no change".
    spans = sorted((op.i1, op.i2) for op in ops)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
    assert all(op.old != op.new for op in ops)


@given(TOKENS, st.data())
def test_pure_deletions_are_counted_as_deletions_only(original, data):
    keep = data.draw(st.lists(st.booleans(), min_size=len(original), max_size=len(original)))
    corrected = [t for t, k in zip(original, keep, strict=True) if k]
    ops = edit_ops(original, corrected)
    assert {op.op for op in ops} <= {"delete"}
    assert sum(len(op.old) for op in ops) == len(original) - len(corrected)


@given(TOKENS, TOKENS)
def test_levenshtein_is_a_distance(a, b):
    assert levenshtein(a, b) == levenshtein(b, a)
    assert (levenshtein(a, b) == 0) == (a == b)
    assert abs(len(a) - len(b)) <= levenshtein(a, b) <= max(len(a), len(b))


def test_a_typical_wikido_correction():
    original = "The Gothic church of Saint Paul, built in 1850 by monks, stands in Paris."
    corrected = "The church of Saint Paul stands in Paris."
    s = summarize(original, corrected)
    assert s.kind == "deletion"
    assert [op.old for op in s.ops] == [("Gothic",), (",", "built", "in", "1850", "by", "monks", ",")]
    assert (s.deleted, s.inserted, s.substituted, s.distance) == (8, 0, 0, 8)


def test_substitutions_and_insertions_are_told_apart():
    s = summarize("a red car near a tall tower", "a blue car near a tower at night")
    assert sorted(op.op for op in s.ops) == ["delete", "insert", "replace"]
    assert s.kind == "mixed" and s.substituted == 1 and s.deleted == 1 and s.inserted == 2
    assert summarize("a red car", "a blue car").kind == "substitution"
    assert summarize("a car", "a car").kind == "none"


def test_tokens_and_their_join():
    assert words("St. Mary's well-known U.S. church, (1850).") == [
        "St", ".", "Mary's", "well-known", "U.S", ".", "church", ",", "(", "1850", ")", ".",
    ]
    assert detokenize(words("A church, built in 1850 (restored).")) == "A church, built in 1850 (restored)."


def test_pointed_and_vowelled_words_stay_whole():
    """Hebrew points and Arabic vowel signs belong to their word: striking one word strikes it whole."""
    assert words("שָׁלוֹם עוֹלָם, مُحَمَّد، café") == ["שָׁלוֹם", "עוֹלָם", ",", "مُحَمَّد", "،", "café"]
    s = summarize("הַיֶּלֶד הַקָּטָן רָץ.", "הַיֶּלֶד רָץ.")
    assert [(op.op, op.i1, op.old) for op in s.ops] == [("delete", 1, ("הַקָּטָן",))]
    assert detokenize(["قطة", "،", "كلب", "؟"]) == "قطة، كلب؟"
