"""The workflow plugin shape: default consolidation and the generic.choice workflow."""

from __future__ import annotations

import pytest

from app.errors import Invalid
from app.workflows import all_workflows, get_workflow


def test_majority_consolidation():
    wf = get_workflow("generic.choice")
    assert wf.consolidate([{"choice": "a"}], {}).final == {"choice": "a"}
    out = wf.consolidate([{"choice": "a"}, {"choice": "b"}, {"choice": "a"}], {})
    assert out.final == {"choice": "a"} and not out.needs_review
    tie = wf.consolidate([{"choice": "a"}, {"choice": "b"}], {})
    assert tie.final is None and tie.needs_review


def test_generic_choice_validation_uses_item_then_stage_choices():
    wf = get_workflow("generic.choice")
    assert wf.validate_annotation({"choices": ["x", "y"]}, {"choice": "y"}, {}) == {"choice": "y"}
    assert wf.validate_annotation({}, {"choice": "b"}, {"choices": ["a", "b"]}) == {"choice": "b"}
    with pytest.raises(Invalid) as err:
        wf.validate_annotation({}, {}, {"choices": ["a"]})
    assert err.value.errors == ["field 'choice': Field required"]


def test_unknown_workflow_names_the_known_ones():
    names = [w.name for w in all_workflows()]
    assert names == sorted(names)
    assert {"generic.choice", "colorswap.filter", "wikido.verify", "visargs.premises"} <= set(names)
    with pytest.raises(Invalid) as err:
        get_workflow("colorswap.nope")
    assert err.value.message == f"Unknown workflow 'colorswap.nope'. Known workflows: {', '.join(names)}."
