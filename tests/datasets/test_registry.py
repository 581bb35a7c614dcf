"""The dataset and workflow plugin shapes: the registry, default consolidation, the generic.choice workflow, editors."""

from __future__ import annotations

import pytest

from app.datasets import all_datasets, all_workflows, dataset_of, get_workflow
from app.datasets.workflow import ItemContext
from app.errors import Invalid


def test_majority_consolidation():
    wf = get_workflow("generic.choice")
    assert wf.consolidate(ItemContext({}), [{"choice": "a"}]).final == {"choice": "a"}
    out = wf.consolidate(ItemContext({}), [{"choice": "a"}, {"choice": "b"}, {"choice": "a"}])
    assert out.final == {"choice": "a"} and not out.needs_review
    tie = wf.consolidate(ItemContext({}), [{"choice": "a"}, {"choice": "b"}])
    assert tie.final is None and tie.needs_review


def test_generic_choice_validation_uses_item_then_stage_choices():
    wf = get_workflow("generic.choice")
    assert wf.validate_annotation(ItemContext({"choices": ["x", "y"]}), {"choice": "y"}) == {"choice": "y"}
    assert wf.validate_annotation(ItemContext({}, {"choices": ["a", "b"]}), {"choice": "b"}) == {"choice": "b"}
    with pytest.raises(Invalid) as err:
        wf.validate_annotation(ItemContext({}, {"choices": ["a"]}), {})
    assert err.value.errors == ["field 'choice': Field required"]


def test_unknown_workflow_names_the_known_ones():
    names = [w.name for w in all_workflows()]
    assert names == sorted(names)
    assert {"generic.choice", "colorswap.filter", "wikido.verify", "visargs.premises"} <= set(names)
    with pytest.raises(Invalid) as err:
        get_workflow("colorswap.nope")
    assert err.value.message == f"Unknown workflow 'colorswap.nope'. Known workflows: {', '.join(names)}."


# Stored payloads of every workflow, in the shapes annotators and reviewers give: the editors
# start from payload_values(payload) and must give the same payload back.
STORED = {
    "generic.choice": [{"choice": "b"}],
    "colorswap.filter": [{"choice_1": 3, "choice_2": 0}, {"choice_1": None, "choice_2": 12}, {"choice_1": None, "choice_2": None}],
    "colorswap.recaption": [{"caption_1": "a red cup on a blue mat", "caption_2": "a blue cup on a red mat"}],
    "wikido.verify": [{"verdict": "correct"}, {"verdict": "wrong"}, {"verdict": "hallucinated", "caption": "A church in Paris."}],
    "visargs.premises": [
        {"visual_premises": ["A melting cone", "The sun, low in the corner", "Text: -> buy now"], "discard": False},
        {"visual_premises": [], "discard": True},
    ],
    "visargs.structure": [
        {"commonsense_premises": ["Heat melts ice", "Freezers keep things cold"], "conclusion": "Buy our freezer.",
         "reasoning_steps": ["(VP1, VP2, CP1 -> IC1): The heat melts it", "(IC1, CP2 -> C): Buy our freezer (now)."], "discard": False},
        {"commonsense_premises": [], "conclusion": "", "reasoning_steps": [], "discard": True},
    ],
    "visargs.grounding": [{"b_box": [{"startX": 0, "startY": 5, "w": 10, "h": 20}, {"startX": 33, "startY": 1, "w": 2, "h": 2}]}],
    "visargs.equivalence": [{"equivalent": True}, {"equivalent": False}],
    "artwork.sections": [{"decision": "keep", "reason": None}, {"decision": "drop", "reason": "not_about_artwork"}],
    "artwork.explanation": [{"score": 4, "struck": [[0, 2], [5, 6]]}, {"score": 1, "struck": []}],
    "voldoger.verify": [
        {"image": "keep", "label": "no", "paraphrase": "keep", "note": ""},
        {"image": "keep", "label": "2", "paraphrase": "edit", "text": "A man climbs a hill.", "note": "hill, not mountain"},
        {"image": "keep", "paraphrase": "keep"},
        {"image": "discard", "note": "the ball is gone"},
    ],
}


@pytest.mark.parametrize("workflow", [t.name for t in all_workflows()])
def test_editors_show_a_stored_payload_and_give_it_back(workflow):
    w = get_workflow(workflow)
    assert workflow in STORED, f"add stored payloads of {workflow} to STORED"
    for payload in STORED[workflow]:
        stored = w.annotation_schema.model_validate(payload).model_dump(mode="json")
        values = w.payload_values(ItemContext({}), stored)
        # The browser posts strings: numbers in inputs come back as text.
        posted = {k: ([str(x) for x in v] if isinstance(v, list) else str(v)) for k, v in values.items()}
        again = w.annotation_schema.model_validate(w.form_to_payload(posted)).model_dump(mode="json")
        assert again == stored


def test_every_task_belongs_to_exactly_one_dataset_in_pipeline_order():
    owned = [t.name for d in all_datasets() for t in d.workflows]
    assert sorted(owned) == sorted(t.name for t in all_workflows()) and len(owned) == len(set(owned))
    for dataset in all_datasets():
        names = [t.name for t in dataset.workflows]
        for position, workflow in enumerate(dataset.workflows):
            assert dataset_of(workflow.name) is dataset
            # A workflow that builds on another comes after it in its own dataset's pipeline.
            assert workflow.requires is None or workflow.requires in names[:position], workflow.name


def test_compare_is_the_mean_over_facets():
    wikido = get_workflow("wikido.verify")
    same = {"verdict": "correct"}
    assert wikido.compare(same, dict(same)) == 1.0
    # Both hallucinated, same verdict, struck words overlapping in 1 of 3 positions.
    a = {"verdict": "hallucinated", "edits": {"ops": [{"op": "delete", "i1": 0, "i2": 2}]}}
    b = {"verdict": "hallucinated", "edits": {"ops": [{"op": "delete", "i1": 1, "i2": 3}]}}
    assert wikido.compare(a, b) == pytest.approx((1 + 1 / 3) / 2)
    # A verdict that differs and deletions only one of them speaks to both count against.
    assert wikido.compare(same, a) == 0.0
