"""The decision after an answer equals a straightforward reference over random stages and answer sets."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.decision import Situation, StageSettings, decide
from app.lifecycle import IllegalTransition

CHOICE, RECAPTION, EXPLANATION, SECTIONS = "generic.choice", "colorswap.recaption", "artwork.explanation", "artwork.sections"
ANSWERS = [{"choice": "a"}, {"choice": "b"}, {"choice": "a", "discard": True}]


def _required(stage: StageSettings) -> int:
    return stage.overlap if stage.sample_size is None or stage.sampled else 1


def _applies(stage: StageSettings, data, results) -> bool:
    """The three workflows' routing rules, written out."""
    if stage.workflow == RECAPTION:
        return (data.get("caption_source") or stage.config.get("missing_source", "unknown")) in stage.config.get("sources", ("rule-based",))
    if stage.workflow == EXPLANATION:
        return (results.get(SECTIONS) or {}).get("decision", "keep") == "keep" and bool(data.get("explanation"))
    return True


def reference(s: Situation) -> tuple:
    """(status, stage, slots, final, discard, routed) after the situation, the long way round."""
    final, discard = s.final, s.discard
    if final is None:
        if len(s.answers) < _required(s.stage):
            return s.status, s.stage.id, s.slots, None, False, ()
        counts = Counter(repr(sorted(a.items())) for a in s.answers)
        top = max(counts.values())
        if top * 2 <= len(s.answers):
            return "review", s.stage.id, s.slots, None, False, ()
        final = next(a for a in s.answers if counts[repr(sorted(a.items()))] == top)
        if s.flagged and s.stage.config.get("gold_route_to_review", False):
            return "review", s.stage.id, s.slots, None, False, tuple(sorted(s.flagged))
        discard = bool(final.get("discard"))
    if discard:
        return "discarded", s.stage.id, 0, final, True, ()
    results = {**s.results, s.stage.workflow: final} if s.shows_own_final else dict(s.results)
    for later in s.later:
        if _applies(later, s.data, results):
            return "active", later.id, _required(later), final, False, ()
    return "done", s.stage.id, 0, final, False, ()


def _stage(id_: int, workflow: str):
    config = st.fixed_dictionaries({"gold_route_to_review": st.booleans()}, optional={
        "sources": st.sampled_from([("rule-based",), ("human",), ("rule-based", "human")]),
        "missing_source": st.sampled_from(["human", "unknown"]),
    })
    return st.builds(StageSettings, st.just(id_), st.just(workflow), config, st.integers(1, 4),
                     st.sampled_from([None, 10]), st.booleans())


@st.composite
def situations(draw):
    stage = draw(_stage(1, CHOICE))
    workflows = draw(st.lists(st.sampled_from([CHOICE, RECAPTION, EXPLANATION]), max_size=3))
    later = [draw(_stage(2 + n, w)) for n, w in enumerate(workflows)]
    data = draw(st.fixed_dictionaries({}, optional={"caption_source": st.sampled_from(["rule-based", "human"]),
                                                    "explanation": st.sampled_from(["", "a text"])}))
    results = draw(st.fixed_dictionaries({}, optional={SECTIONS: st.fixed_dictionaries({"decision": st.sampled_from(["keep", "drop"])})}))
    reviewed = draw(st.none() | st.sampled_from(ANSWERS))
    return Situation(
        stage, later, draw(st.sampled_from(["active", "review"])), draw(st.integers(0, 3)), data, results,
        draw(st.booleans()), draw(st.lists(st.sampled_from(ANSWERS), max_size=5)), draw(st.lists(st.integers(1, 9), max_size=2)),
        final=reviewed, discard=bool(reviewed and reviewed.get("discard")),
    )


@settings(max_examples=500, deadline=None)
@given(situations())
def test_the_decision_equals_the_reference(s):
    d = decide(s)
    assert (d.status, d.stage_id, d.slots, d.final, d.discard, d.routed) == reference(s)


def test_a_move_the_lifecycle_lacks_is_refused():
    done = Situation(StageSettings(1, CHOICE, {}, 1), [], "done", 0, {}, {}, answers=[{"choice": "a"}])
    with pytest.raises(IllegalTransition):
        decide(done)
