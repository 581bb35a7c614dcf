"""A suggestion pushed from outside is checked against its kind's payload schema, as the worker's drafts
are: a payload the screen would misread gets a 422 naming the field and nothing of the batch is stored;
the payloads the producers store are taken."""

from __future__ import annotations

import sqlalchemy as sa

from app.db import transaction
from app.models import Item, Suggestion
from tests import factories

BOX = {"vp": 0, "startX": 5, "startY": 6, "w": 7, "h": 8}
# Per stage: the rows refused (kind, payload) with the message of each, then rows a producer would store.
CASES = {
    "voldoger.verify": (
        [("voldoger.check", {"image": "keep", "label": None}), ("voldoger.check", {"image": 1, "paraphrase": "p"})],
        ["suggestions[0].payload: field 'paraphrase': Field required",
         "suggestions[1].payload: field 'image': Input should be 'keep' or 'discard'"],
        [("voldoger.check", {"image": "keep", "label": "no", "paraphrase": "Is the ball blue?", "reason": "It is."})],
    ),
    "artwork.explanation": (
        [("artwork.drafted_explanation", {"explanation": "x", "metrics": {"entity_f1": "high"}})],
        ["suggestions[0].payload: field 'metrics.entity_f1': Input should be a valid number, unable to parse string as a number"],
        [("artwork.drafted_explanation", {"explanation": "Oil on canvas.", "metrics": {"entity_f1": 0.5, "entity_recall": None}})],
    ),
    "visargs.premises": (
        [("visargs.visual_premises", {"visual_premises": "all"})],
        ["suggestions[0].payload: field 'visual_premises': Input should be a valid list"],
        [("visargs.visual_premises", {"visual_premises": ["A blue drop"]})],
    ),
    "visargs.structure": (
        [("visargs.argument", {"conclusion": "Save water.", "reasoning_steps": ["VP1 => C"]})],
        ["suggestions[0].payload: field 'reasoning_steps': Value error, Step 1: "],
        [("visargs.argument", {"commonsense_premises": ["Water is scarce"], "conclusion": "Save water.",
                               "reasoning_steps": ["(VP1, CP1 -> C): Save water."]})],
    ),
    "visargs.grounding": (
        [("visargs.boxes", {"boxes": [{**BOX, "w": "wide"}]}), ("visargs.regions", {"spans": "all"}),
         ("visargs.premise_boxes", {"boxes": [BOX, BOX]})],
        ["suggestions[0].payload: field 'boxes.0.w': Input should be a valid integer",
         "suggestions[1].payload: field 'boxes': Field required",
         "suggestions[2].payload: field 'boxes': Value error, one box per visual premise, more than one for VP1"],
        [("visargs.boxes", {"boxes": [{**BOX, "text": "SAVE WATER"}], "lines": 1}),
         ("visargs.regions", {"boxes": [{**BOX, "score": 0.31}]}), ("visargs.premise_boxes", {"boxes": [BOX]})],
    ),
}


def _stage(app, workflow: str) -> int:
    workflows = [workflow] if workflow in ("voldoger.verify", "artwork.explanation", "visargs.premises") else ["visargs.premises", workflow]
    with transaction(app.state.sessions) as s:
        pid, stages = factories.project(s, workflows)
        s.add(Item(project_id=pid, external_id="x1", data={}))
    return stages[-1]


def _stored(app, stage_id: int) -> int:
    with transaction(app.state.sessions) as s:
        return s.scalar(sa.select(sa.func.count()).select_from(Suggestion).where(Suggestion.stage_id == stage_id))


def test_a_malformed_pushed_payload_is_refused_naming_the_field_and_stores_nothing(client, app, api, subtests):
    for workflow, (bad, messages, good) in CASES.items():
        with subtests.test(workflow=workflow):
            stage_id = _stage(app, workflow)
            url = f"/api/v1/stages/{stage_id}/suggestions"
            # The good rows first: a batch with one bad row stores none of it.
            refused = client.post(url, headers=api["admin"], json={"suggestions": rows(good) + rows(bad)})
            assert refused.status_code == 422 and refused.json()["detail"] == "Nothing was stored."
            errors = refused.json()["errors"]
            assert len(errors) == len(messages)
            for error, message in zip(errors, messages, strict=True):
                assert error.startswith(_shifted(message, len(good))), errors
            assert _stored(app, stage_id) == 0
            taken = client.post(url, headers=api["admin"], json={"suggestions": rows(good)})
            assert taken.json() == {"stored": len(good), "unchanged": 0}, taken.text
            assert _stored(app, stage_id) == len(good)


def rows(pairs: list[tuple[str, dict]]) -> list[dict]:
    return [{"external_id": "x1", "kind": k, "model": "outside", "model_version": "v1", "payload": p} for k, p in pairs]


def _shifted(message: str, by: int) -> str:
    """The message of a refused row that follows `by` good rows in the batch."""
    n = int(message.split("[", 1)[1].split("]", 1)[0])
    return message.replace(f"suggestions[{n}]", f"suggestions[{n + by}]", 1)
