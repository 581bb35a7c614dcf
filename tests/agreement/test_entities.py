"""Entity metrics of artwork explanations, against values worked out by hand."""

import math

import pytest

from app.agreement.entities import (
    cooccurring_pairs,
    entity_cooccurrence,
    entity_coverage,
    entity_f1,
    lcs_length,
    length_penalty,
    mentions,
    scores,
    tokens,
)

REF = "Mona Lisa was painted by Leonardo da Vinci in Florence. It is kept in the Louvre in Paris."
ENTS = ["Leonardo da Vinci", "Florence", "Louvre", "Paris"]


def test_tokens_mentions_and_lcs():
    assert tokens("Leonardo da Vinci's Louvre.") == ["leonardo", "da", "vinci's", "louvre"]
    assert mentions(["a", "a"], ["a", "a", "a"]) == 1  # non-overlapping
    assert mentions(["paris"], tokens("Paris, and paris again")) == 2
    assert lcs_length(["leonardo", "da", "vinci"], ["leonardo", "painted", "vinci"]) == 2


def test_coverage_exact_and_partial():
    gen = "Leonardo painted it; Vinci lived in Florence."
    # Leonardo da Vinci: 2 of 3 tokens as a subsequence of the sentence; Florence 1; Louvre 0; Paris 0.
    assert entity_coverage(ENTS, gen) == pytest.approx((2 / 3 + 1 + 0 + 0) / 4)
    assert entity_coverage(ENTS, gen, exact=True) == pytest.approx(1 / 4)
    # Partial matches do not span sentences: the best single sentence counts.
    assert entity_coverage(["Leonardo da Vinci"], "Leonardo was there. Da Vinci too.") == pytest.approx(2 / 3)
    assert entity_coverage([], gen) is None
    assert entity_coverage(ENTS + ["paris"], REF) == 1.0  # duplicates count once


def test_f1_clips_repeated_entities():
    # The generation says Paris three times (the reference once) and Louvre once.
    gen = "Paris. Paris. Paris and the Louvre."
    f = entity_f1(ENTS, REF, gen)
    # c_G: Paris 3, Louvre 1 (sum 4); matched min(3,1) + min(1,1) = 2; c_R sums to 4.
    assert f.matched == 2
    assert f.precision == pytest.approx(2 / 4)
    assert f.recall == pytest.approx(2 / 4)
    assert f.f1 == pytest.approx(0.5)


def test_f1_with_the_generation_s_own_entities():
    # Generation entities given: Louvre (in R) and Rome (not in R).
    f = entity_f1(ENTS, REF, "The Louvre, not Rome.", ["Louvre", "Rome"])
    assert (f.matched, f.precision, f.recall) == (1, 0.5, 0.25)
    assert f.f1 == pytest.approx(2 * 0.5 * 0.25 / 0.75)
    assert entity_f1(ENTS, REF, "Nothing here.").f1 == 0.0


def test_length_penalty():
    assert length_penalty("a b c d", "a b") == 1.0
    assert length_penalty("a b c d", "a b c d e f") == pytest.approx(math.exp(-0.5))
    assert length_penalty("a b", "a b c d e f") == pytest.approx(math.exp(-2))


def test_cooccurrence_pairs_and_score():
    key = lambda *names: tuple(sorted(tuple(tokens(n)) for n in names))
    pairs = cooccurring_pairs(ENTS, REF)
    assert pairs == {key("Leonardo da Vinci", "Florence"), key("Louvre", "Paris")}
    # A window of two sentences pairs across them as well: all 6 pairs.
    assert len(cooccurring_pairs(ENTS, REF, window=2)) == 6
    # The generation keeps one of the two pairs, and is 19 tokens against the reference's 18.
    gen = "Leonardo da Vinci worked in Florence for years. The painting was later moved to a big museum in Paris."
    assert len(tokens(REF)) == 18 and len(tokens(gen)) == 19
    assert entity_cooccurrence(ENTS, REF, gen) == pytest.approx(0.5 * math.exp(-(19 / 18 - 1)))
    # Shorter than the reference: no penalty.
    assert entity_cooccurrence(ENTS, REF, "Leonardo da Vinci, Florence. Louvre, Paris.") == 1.0
    assert entity_cooccurrence(["Paris"], REF, "Paris.") is None


def test_scores_names_every_metric():
    out = scores(ENTS, REF, REF)
    assert out["entity_coverage"] == out["entity_f1"] == out["entity_cooccurrence"] == 1.0
    assert set(out) == {"entity_coverage", "entity_coverage_exact", "entity_precision", "entity_recall",
                        "entity_f1", "entity_cooccurrence", "length_penalty"}
