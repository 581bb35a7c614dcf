"""Every suggestion kind a screen reads has a payload schema (`Workflow.suggestion_schemas`): what the draft
kinds, the probes and the demo store passes it, and a payload the screen would misread or drop is refused
with the field named. (The worker's producers: tests/worker/test_batching.py; a push: tests/web.)"""

from __future__ import annotations

import pytest

from app.datasets import all_workflows, get_workflow
from app.datasets.visargs import probes as visargs_probes
from app.datasets.visargs.demo import visargs_records, visargs_suggestions
from app.datasets.voldoger import probes as voldoger_probes
from tests.conftest import png_bytes
from tests.datasets.voldoger.release_rows import CAP_ORIGINAL, CAP_STYLISED, VE_ORIGINAL, VE_STYLISED, VQA_ORIGINAL, VQA_STYLISED
from tests.drafting.test_kinds import ARTWORK, KINDS, RESULTS, VISARGS, answer, parsed, voldoger_item


def test_every_kind_a_screen_reads_has_a_payload_schema():
    missing = [(w.name, k) for w in all_workflows() for k in w.suggestion_kinds if k not in w.suggestion_schemas]
    assert missing == []
    for workflow in all_workflows():
        assert set(workflow.suggestion_schemas) <= set(workflow.suggestion_kinds), workflow.name


DRAFTED = [
    ("voldoger.check", lambda: voldoger_item(VQA_ORIGINAL, VQA_STYLISED, "vqa"),
     {"keeps_content": "yes", "label": "no", "paraphrase": "Is the ball painted red?", "reason": "The ball is blue."}),
    ("voldoger.check", lambda: voldoger_item(VE_ORIGINAL, VE_STYLISED, "ve"),
     {"keeps_content": "no", "label": "neutral", "paraphrase": "A dog sleeps.", "reason": ""}),
    ("voldoger.check", lambda: voldoger_item(CAP_ORIGINAL, CAP_STYLISED, "cap"),
     {"keeps_content": "yes", "label": "none", "paraphrase": "A red ball on grass.", "reason": "Kept."}),
    ("artwork.drafted_explanation", lambda: parsed("artwork", ARTWORK), {"explanation": "Anna Berg painted it in oil on canvas."}),
    ("artwork.drafted_explanation", lambda: parsed("artwork", {**ARTWORK, "entities": []}), {"explanation": "A painting."}),
    ("visargs.visual_premises", lambda: parsed("visargs", VISARGS), {"visual_premises": ["A dripping cone", "Text: ONLY $2"]}),
    ("visargs.argument", lambda: parsed("visargs", VISARGS, RESULTS),
     {"commonsense_premises": ["Heat melts ice cream"], "conclusion": "Buy our freezer.",
      "reasoning_steps": ["(vp1, VP2 -> ic1): It melts", "(IC1, CP1 -> C) Buy our freezer."]}),
    ("visargs.premise_boxes", lambda: parsed("visargs", VISARGS, RESULTS, images={"/image": png_bytes(size=(200, 100))}),
     {"boxes": [{"premise": 2, "x_min": 0.5, "y_min": 0.0, "x_max": 1.0, "y_max": 0.5},
                {"premise": 1, "x_min": 0.0, "y_min": 0.9, "x_max": 1.0, "y_max": 1.0}]}),
]


@pytest.mark.parametrize(("name", "item", "model"), DRAFTED, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(DRAFTED)])
def test_what_a_draft_kind_stores_passes_its_schema(name, item, model):
    kind = KINDS[name]
    payload = kind.to_payload(answer(kind, model), item())
    for workflow in kind.workflows:
        assert get_workflow(workflow).check_suggestion(kind.suggestion_kind, payload) == []


def test_what_the_probes_plant_and_the_demo_pushes_passes():
    item = voldoger_item(VQA_ORIGINAL, VQA_STYLISED, "vqa").data
    verify = get_workflow("voldoger.verify")
    for truth in ({"image": "keep", "label": "yes", "paraphrase": "keep"}, {"image": "discard", "label": None},
                  {"image": "keep", "label": "no", "paraphrase": "edit", "text": "Is the ball painted?"}):
        planted = voldoger_probes.plant(truth, item)
        assert planted and verify.check_suggestion("voldoger.check", planted) == [], truth
    truth = {"visual_premises": ["The words SAVE WATER", "A blue drop"], "discard": False}
    for draft in ({"visual_premises": ["A drop"]}, {"visual_premises": [f"p{n}" for n in range(40)]}):  # the last: no room left
        planted = visargs_probes.into_draft(visargs_probes.plant(truth, {}), draft, {})
        assert get_workflow("visargs.premises").check_suggestion("visargs.visual_premises", planted) == []
        assert planted["visual_premises"][-1] == visargs_probes.planted_premise(truth, {})


def test_the_demo_suggestions_pass(tmp_path):
    demo = visargs_suggestions(visargs_records(tmp_path))
    assert demo and {s.kind for s in demo} == {"visargs.regions"}
    grounding = get_workflow("visargs.grounding")
    assert [grounding.check_suggestion(s.kind, s.payload) for s in demo] == [[] for _ in demo]


BOX = {"vp": 0, "startX": 5, "startY": 6, "w": 7, "h": 8}
MALFORMED = [
    ("voldoger.verify", "voldoger.check", {"image": "maybe", "paraphrase": "p"}, "field 'image': Input should be 'keep' or 'discard'"),
    ("voldoger.verify", "voldoger.check", {"image": "keep"}, "field 'paraphrase': Field required"),
    ("voldoger.verify", "voldoger.check", {"image": "keep", "paraphrase": "p", "reason": "r" * 5001}, "field 'reason': String should have at most 5000"),
    ("artwork.explanation", "artwork.drafted_explanation", {"explanation": ""}, "field 'explanation': String should have at least 1"),
    ("artwork.explanation", "artwork.drafted_explanation", {"explanation": "x", "metrics": {"entity_f1": "high"}},
     "field 'metrics.entity_f1': Input should be a valid number"),
    ("artwork.explanation", "artwork.drafted_explanation", {"explanation": "x", "metrics": {"entity_f1": float("nan")}},
     "field 'metrics.entity_f1': Input should be a finite number"),
    ("visargs.premises", "visargs.visual_premises", {"visual_premises": "all"}, "field 'visual_premises': Input should be a valid list"),
    ("visargs.premises", "visargs.visual_premises", {"visual_premises": ["p"] * 41}, "field 'visual_premises': List should have at most 40"),
    ("visargs.structure", "visargs.argument", {"conclusion": "c", "reasoning_steps": ["IC1 => C"]}, "field 'reasoning_steps': Value error, Step 1:"),
    ("visargs.structure", "visargs.argument", {"conclusion": ["c"]}, "field 'conclusion': Input should be a valid string"),
    ("visargs.grounding", "visargs.boxes", {"boxes": "all"}, "field 'boxes': Input should be a valid list"),
    ("visargs.grounding", "visargs.premise_boxes", {"boxes": [{**BOX, "w": 0}]}, "field 'boxes.0.w': Input should be greater than or equal to 1"),
    ("visargs.grounding", "visargs.regions", {"boxes": [{**BOX, "startX": "5"}]}, "field 'boxes.0.startX': Input should be a valid integer"),
    ("visargs.grounding", "visargs.regions", {"boxes": [{**BOX, "score": float("inf")}]}, "field 'boxes.0.score': Input should be a finite number"),
    ("visargs.grounding", "visargs.regions", {"boxes": [{k: v for k, v in BOX.items() if k != "vp"}]}, "field 'boxes.0.vp': Field required"),
    ("visargs.grounding", "visargs.boxes", {"boxes": [BOX, BOX]}, "field 'boxes': Value error, one box per visual premise, more than one for VP1"),
]


@pytest.mark.parametrize(("workflow", "kind", "payload", "message"), MALFORMED)
def test_a_payload_the_screen_would_misread_is_refused_naming_the_field(workflow, kind, payload, message):
    problems = get_workflow(workflow).check_suggestion(kind, payload, prefix="suggestions[0].")
    assert len(problems) == 1 and problems[0].startswith(f"suggestions[0].payload: {message}"), problems
