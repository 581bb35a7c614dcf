"""Scoring answers against gold truth with each workflow's own comparison, and the accuracy interval."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.agreement.gold import accuracy, answer_score
from app.datasets import get_workflow

PLANTED = (1.0, 0.8, 0.5)


def planted(truths, right, wrong, p):
    """Answers to the truths: right(t) on an evenly spread share p of them, wrong(t) on the rest."""
    return [right(t) if int((k + 1) * p + 1e-9) > int(k * p + 1e-9) else wrong(t) for k, t in enumerate(truths)]


def measured(name, truths, answers):
    workflow = get_workflow(name)
    return [answer_score(workflow.facets, workflow.facet_values(t), workflow.facet_values(a)) for t, a in zip(truths, answers)]


def box(x, y, w=40.0, h=30.0):
    return {"startX": x, "startY": y, "w": w, "h": h}


CASES = {
    # VisArgs premises by Jaccard over the visual-premise set (a wrong answer shares none).
    "visargs.premises": (
        lambda k: {"visual_premises": [f"a red sign {k}", f"a dog {k}"], "discard": False},
        lambda t: {"visual_premises": list(reversed(t["visual_premises"])), "discard": False},
        lambda t: {"visual_premises": ["something else entirely"], "discard": False},
    ),
    # Boxes by IoU >= 0.5 with optimal matching: a right answer is a slightly moved box in any order.
    "visargs.grounding": (
        lambda k: {"b_box": [box(10 + k, 10), box(200, 100 + k)]},
        lambda t: {"b_box": [box(b["startX"] + 3, b["startY"] - 2) for b in reversed(t["b_box"])]},
        lambda t: {"b_box": [box(500, 500), box(700, 10)]},
    ),
    "generic.choice": (lambda k: {"choice": "a"}, lambda t: dict(t), lambda t: {"choice": "b"}),
    "wikido.verify": (
        lambda k: {"verdict": "correct", "caption": None},
        lambda t: dict(t),
        lambda t: {"verdict": "wrong", "caption": None},
    ),
}


@pytest.mark.parametrize("workflow", list(CASES))
@pytest.mark.parametrize("p", PLANTED)
def test_planted_accuracy_on_40_gold_items_is_measured_with_an_interval_containing_it(workflow, p):
    truth, right, wrong = CASES[workflow]
    truths = [truth(k) for k in range(40)]
    scores = measured(workflow, truths, planted(truths, right, wrong, p))
    ci = accuracy(scores, samples=1000, seed=1)
    assert ci.estimate == pytest.approx(p)
    assert ci.low <= p <= ci.high
    if p < 1:
        assert ci.high - ci.low > 0.05  # 40 answers leave real uncertainty


def test_a_box_under_half_overlap_is_wrong_and_the_matching_is_one_to_one():
    facets = get_workflow("visargs.grounding").facets
    truth = {"boxes": [box(0, 0), box(100, 0)]}
    assert answer_score(facets, truth, {"boxes": [box(100, 0), box(0, 0)]}) == 1.0
    assert answer_score(facets, truth, {"boxes": [box(0, 0), box(0, 0)]}) == 0.5
    assert answer_score(facets, truth, {"boxes": [box(30, 0), box(100, 0)]}) == 0.5  # IoU 10/70 < 0.5


@given(st.lists(st.floats(0, 1), min_size=1, max_size=60), st.integers(0, 1000))
def test_the_interval_brackets_the_estimate_within_the_scores(scores, seed):
    ci = accuracy(scores, samples=200, seed=seed)
    assert min(scores) - 1e-9 <= ci.low <= ci.estimate + 1e-9 <= ci.high + 2e-9 <= max(scores) + 3e-9
