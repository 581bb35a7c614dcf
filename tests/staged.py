"""An item of any registered workflow, ready where a test needs it: waiting for annotators in that
workflow's stage, or for review there, carried through the dataset's earlier stages by two annotators."""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa

from app.datasets import dataset_of
from app.db import transaction
from app.models import Item
from app.services.imports import imports
from app.services.projects import projects
from tests import factories

# An item of each workflow that isn't in a demo project: (record, the text its view shows, its image URL).
EQUIVALENCE_RECORD = {
    "id": "pair-1", "conclusion_a": "Turn off the tap to save water.", "conclusion_b": "Save water by closing taps.",
    "image": "https://example.org/visargs/poster.png",
}

# Two differing annotations of each workflow (on its demo's first record); the first one is also
# what both annotators give in the stages before it. Each with a text only the view of that answer shows.
ANSWERS: dict[str, tuple[dict, dict, str]] = {
    "generic.choice": ({"choice": "circle"}, {"choice": "square"}, "square"),
    "colorswap.filter": ({"choice_1": 0, "choice_2": 2}, {"choice_1": 1, "choice_2": None}, "none fits"),
    "colorswap.recaption": (
        {"caption_1": "a small green circle inside a blue square", "caption_2": "a small blue circle inside a green square"},
        {"caption_1": "a green circle sits inside a blue square", "caption_2": "a blue circle sits inside a green square"},
        "sits inside",
    ),
    "wikido.verify": ({"verdict": "correct"}, {"verdict": "hallucinated", "caption": "A blue circle."}, "<del"),
    "visargs.premises": (
        {"visual_premises": ["The words SAVE WATER; a blue drop"], "discard": False},
        {"visual_premises": ["The words SAVE WATER", "A blue drop"], "discard": False},
        "A blue drop",
    ),
    "visargs.structure": (
        {"commonsense_premises": ["Every drop of water counts"], "conclusion": "Turn off the tap to save water.",
         "reasoning_steps": ["(VP1, CP1 -> C): Turn off the tap to save water."], "discard": False},
        {"commonsense_premises": ["Water is scarce"], "conclusion": "Save water.",
         "reasoning_steps": ["(VP1, CP1 -> C): Save water."], "discard": False},
        "Water is scarce",
    ),
    "visargs.grounding": (
        {"b_box": [{"startX": 10, "startY": 10, "w": 100, "h": 50}]},
        {"b_box": [{"startX": 200, "startY": 120, "w": 60, "h": 40}]},
        "60 × 40",
    ),
    "visargs.equivalence": ({"equivalent": True}, {"equivalent": False}, "Not equivalent"),
    "voldoger.verify": (
        {"image": "keep", "label": "no", "paraphrase": "keep", "note": ""},
        {"image": "keep", "label": "yes", "paraphrase": "edit", "text": "Is the ball red in colour?", "note": "close call"},
        "Is the ball red in colour?",
    ),
    "artwork.sections": ({"decision": "keep"}, {"decision": "drop", "reason": "too_short"}, "too short or empty"),
    "artwork.explanation": ({"score": 4, "struck": []}, {"score": 2, "struck": [[0, 2]]}, "poor"),
}


def text_shown(record: dict) -> str:
    """A text of the item that its view shows, whatever the workflow."""
    for key in ("caption", "caption_1", "question", "conclusion_a", "text"):
        if isinstance(record.get(key), str):
            return record[key]
    if record.get("candidate_premises"):
        return record["candidate_premises"][0]
    return record["stylised"]["question"]


def _demo(name: str):
    dataset = dataset_of(name)
    return next((d for d in dataset.demos if name in [s.workflow for s in d.stages]), None)


def demo_record(name: str, folder: Path) -> dict:
    """The first record of the workflow's demo (its images written to `folder`)."""
    demo = _demo(name)
    return dict(demo.records(folder)[0]) if demo else dict(EQUIVALENCE_RECORD)


def item_at(sessions, settings, storage, folder: Path, name: str, *, review: bool = True, record: dict | None = None,
            answers: dict[str, dict] | None = None, annotators: tuple[int, int] | None = None):
    """A project of the workflow's dataset up to workflow `name` with one item (the demo's first record),
    which two annotators carried through the stages before (both giving `answers[workflow]` where
    given, else the first of ANSWERS); in the last stage the two differ and the item waits for
    review, or with `review=False` it waits for annotators. The two annotators are new users unless
    `annotators` names them (users are slow to make: their passwords are hashed).
    Returns (the last stage's id, the item's id, the item's assets)."""
    dataset = dataset_of(name)
    chain = [t.name for t in dataset.workflows]
    chain = chain[: chain.index(name) + 1]
    demo = _demo(name)
    configs = {s.workflow: dict(s.config) for s in demo.stages} if demo else {}
    if record is None:
        record = demo_record(name, folder)
    with transaction(sessions) as s:
        specs = [projects.StageSpec(workflow=w, overlap=2, config=configs.get(w, {})) for w in chain]
        project = projects.create_project(s, f"views {name}", specs)
        source = imports.ImageSource(settings, storage, base=folder)
        try:
            made = imports.import_items(s, project.id, json.dumps(record).encode(), "items.jsonl",
                                        settings=settings, storage=storage, images=source)
        finally:
            source.close()
        assert made.created == 1
        stage_ids = [st.id for st in projects.stages_of(s, project.id)]
        if annotators is None and (review or len(chain) > 1):
            annotators = (factories.user(s, f"ann-a-{name}"), factories.user(s, f"ann-b-{name}"))
        users = list(annotators or ())
    for workflow, stage_id in zip(chain if review else chain[:-1], stage_ids, strict=False):
        first, second, _ = ANSWERS[workflow]
        if workflow != name and answers and workflow in answers:
            first = answers[workflow]
        with transaction(sessions) as s:
            factories.annotation(s, stage_id, users[0], first)
            factories.annotation(s, stage_id, users[1], second if workflow == name else first)
    with transaction(sessions) as s:
        item = s.scalar(sa.select(Item).where(Item.project_id == project.id))
        assert (item.status, item.stage_id) == ("review" if review else "active", stage_ids[-1])
        return stage_ids[-1], item.id, item.assets


