"""Agreement metrics: equal to scikit-learn, statsmodels and krippendorff on fixed cases, and their laws."""

from __future__ import annotations

import itertools

import krippendorff
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from app.agreement import boxes, categorical, sets
from app.agreement.bootstrap import bootstrap, mean_from, mean_stats, resample_weights

# Five items, three raters, labels 0..2, no missing ratings.
FIXED = np.array([[0, 0, 0], [0, 1, 0], [1, 1, 1], [2, 2, 1], [2, 0, 2]])
WITH_MISSING = np.array([[0, 0, -1], [0, 1, 0], [1, 1, 1], [2, -1, -1], [2, 0, 2], [1, 1, -1]])


def test_cohen_equals_scikit_learn():
    a, b = FIXED[:, 0], FIXED[:, 1]
    assert categorical.cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    a, b = [0, 1, 1, 2, 2, 0, 1, 2], [0, 1, 2, 2, 1, 0, 1, 2]
    assert categorical.cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))


def test_fleiss_equals_statsmodels():
    table, _ = aggregate_raters(FIXED)
    assert categorical.fleiss_kappa(FIXED) == pytest.approx(sm_fleiss(table, method="fleiss"))


def test_alpha_equals_krippendorff_with_missing_data():
    reliability = np.where(WITH_MISSING.T < 0, np.nan, WITH_MISSING.T).astype(float)
    expected = krippendorff.alpha(reliability_data=reliability, level_of_measurement="nominal")
    assert categorical.krippendorff_alpha(WITH_MISSING) == pytest.approx(expected)
    expected = krippendorff.alpha(reliability_data=FIXED.T.astype(float), level_of_measurement="nominal")
    assert categorical.krippendorff_alpha(FIXED) == pytest.approx(expected)


def test_percent_agreement_counts_agreeing_pairs():
    pairs = [(r[i], r[j]) for r in WITH_MISSING for i, j in itertools.combinations(range(3), 2) if r[i] >= 0 and r[j] >= 0]
    expected = sum(x == y for x, y in pairs) / len(pairs)
    assert categorical.percent_agreement(WITH_MISSING) == pytest.approx(expected)


def test_labels_become_codes_by_name():
    arr, labels = categorical.codes([["yes", "no"], ["no", None]])
    assert labels == ["no", "yes"] and arr.tolist() == [[1, 0], [0, -1]]


ratings = st.integers(2, 4).flatmap(
    lambda k: st.lists(st.lists(st.integers(0, k - 1), min_size=3, max_size=3), min_size=4, max_size=30)
).map(np.array)


@settings(max_examples=60)
@given(ratings)
def test_bounds_and_reference_agreement_on_random_data(r):
    assume(len(np.unique(r)) >= 2)
    k = categorical.fleiss_kappa(r)
    a = categorical.krippendorff_alpha(r)
    assert k <= 1 + 1e-9 and a <= 1 + 1e-9 and 0 <= categorical.percent_agreement(r) <= 1
    table, _ = aggregate_raters(r)
    assert k == pytest.approx(sm_fleiss(table), abs=1e-9)
    assert a == pytest.approx(krippendorff.alpha(reliability_data=r.T.astype(float), level_of_measurement="nominal"), abs=1e-9)
    a0, a1 = r[:, 0], r[:, 1]
    assume(len(np.unique(np.concatenate([a0, a1]))) >= 2)
    assert categorical.cohen_kappa(a0, a1) == pytest.approx(categorical.cohen_kappa(a1, a0))
    assert categorical.cohen_kappa(a0, a1) == pytest.approx(cohen_kappa_score(a0, a1), abs=1e-9)


@given(ratings, st.randoms(use_true_random=False))
def test_identical_raters_give_one_and_permutations_change_nothing(r, rnd):
    assume(len(np.unique(r[:, 0])) >= 2)
    same = np.repeat(r[:, :1], 3, axis=1)
    assert categorical.fleiss_kappa(same) == pytest.approx(1)
    assert categorical.krippendorff_alpha(same) == pytest.approx(1)
    assert categorical.cohen_kappa(same[:, 0], same[:, 1]) == pytest.approx(1)
    assert categorical.percent_agreement(same) == 1
    order = list(range(len(r)))
    rnd.shuffle(order)
    labels = list(range(int(r.max()) + 1))
    rnd.shuffle(labels)
    relabelled = np.array(labels)[r][order]
    for metric in (categorical.fleiss_kappa, categorical.krippendorff_alpha, categorical.percent_agreement):
        assert metric(relabelled) == pytest.approx(metric(r), nan_ok=True)


texts = st.lists(st.sampled_from(["A tap", "a TAP.", "the sun", "A child", "water drops", "a bike"]), max_size=5)


@given(texts, texts)
def test_jaccard_laws(a, b):
    j = sets.jaccard(a, b)
    assert 0 <= j <= 1 and j == sets.jaccard(b, a)
    assert sets.jaccard(a, a) == 1


def test_jaccard_normalises_and_soft_matching_pairs_paraphrases():
    assert sets.jaccard(["A tap!", "The sun"], ["a tap", "A child"]) == pytest.approx(1 / 3)

    def similarity(xs, ys):  # word overlap as a stand-in for a sentence model
        return np.array([[len(set(x.split()) & set(y.split())) / len(set(x.split()) | set(y.split())) for y in ys] for x in xs])

    a, b = ["a dripping tap", "the hot sun"], ["a tap dripping water", "a child"]
    assert sets.soft_jaccard(a, b, similarity, 0.5) == pytest.approx(1 / 3)
    assert sets.soft_jaccard(a, b, similarity, 0.9) == 0
    assert sets.token_set_jaccard([(1, 3)], [(2, 4)]) == pytest.approx(1 / 3)


box_st = st.builds(lambda x, y, w, h: {"startX": x, "startY": y, "w": w, "h": h},
                   st.integers(0, 50), st.integers(0, 50), st.integers(1, 40), st.integers(1, 40))


@given(box_st, box_st)
def test_iou_laws(a, b):
    assert boxes.iou(a, a) == pytest.approx(1)
    assert 0 <= boxes.iou(a, b) <= 1 and boxes.iou(a, b) == pytest.approx(boxes.iou(b, a))


@given(st.lists(box_st, min_size=1, max_size=5), st.randoms(use_true_random=False))
def test_hungarian_matching_finds_a_shuffled_copy(bs, rnd):
    shuffled = list(bs)
    rnd.shuffle(shuffled)
    assert boxes.mean_iou(bs, shuffled) == pytest.approx(1)
    assert boxes.accuracy_at(bs, shuffled) == 1


def test_matching_counts_missing_boxes_as_misses():
    a = [{"startX": 0, "startY": 0, "w": 10, "h": 10}, {"startX": 50, "startY": 50, "w": 10, "h": 10}]
    assert boxes.matched_ious(a, a[:1]) == [1.0, 0.0]
    assert boxes.accuracy_at(a, a[:1]) == 0.5


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 3, 400)
    noisy = np.where(rng.random((400, 3)) < 0.8, truth[:, None], rng.integers(0, 3, (400, 3)))
    stats = categorical.alpha_stats(noisy)
    first = bootstrap(stats, categorical.alpha_from, samples=300, seed=7)
    again = bootstrap(stats, categorical.alpha_from, samples=300, seed=7)
    other = bootstrap(stats, categorical.alpha_from, samples=300, seed=8)
    assert first == again and first != other
    assert first.low < first.estimate < first.high and first.high - first.low < 0.2
    assert first.estimate == pytest.approx(categorical.krippendorff_alpha(noisy))
    w = resample_weights(10, 5, seed=1)
    assert w.shape == (5, 10) and (w.sum(axis=1) == 10).all()
    flat = bootstrap(mean_stats(np.ones(50)), mean_from, samples=100, seed=0)
    assert (flat.low, flat.estimate, flat.high) == (1, 1, 1)


def test_set_normalisation_keeps_words_whole():
    from app.agreement.sets import jaccard, normalize

    assert normalize("  The DOG's  well-known bone, — rock'n'roll! ") == "the dog's well-known bone rock'n'roll"
    assert normalize("A dog’s bone.") == normalize("a dog's BONE")  # a curly apostrophe is a straight one
    assert normalize("dogs bone") != normalize("dog's bone") and normalize("well known") != normalize("well-known")
    assert jaccard(["The dog's bone."], ["the dog’s bone"]) == 1.0
    assert jaccard(["a well-known tower"], ["a well known tower"]) == 0.0
