"""A VOLDOGER VQA stage for the draft-bias tests: items whose true answer is known, a drafted check on
each that says "yes" far more often than the truth does, and gold items with the truth as their answer."""

from __future__ import annotations

import json
import random

from app.datasets.voldoger.verify import CHECK_KIND
from app.models import Item, Stage
from app.services.annotation import suggestions
from app.services.quality import gold
from tests import factories

DRAFT_MODEL, DRAFT_VERSION = "tiny-vlm", "voldoger.check v1"


def record(i: int, truth: str) -> dict:
    question = f"Is the ball in picture {i} red?"
    return {
        "id": f"v{i}", "task": "vqa", "style": "oil",
        "original": {"image_id": f"{i}.jpg", "question_id": i, "question": question, "answer": truth, "split": "test"},
        "stylised": {"image_id": f"{i}.jpg", "question_id": i, "question": question, "answer": truth},
        "original_image": f"https://example.org/o{i}.jpg", "stylised_image": f"https://example.org/s{i}.jpg",
    }


def truth_answer(truth: str) -> dict:
    return {"image": "keep", "label": truth, "paraphrase": "keep", "note": ""}


def stage(session, settings, storage, folder, *, n: int, n_gold: int, seed: int = 1, overlap: int = 2, yes_draft: float = 0.85,
          model: str = DRAFT_MODEL, **config) -> tuple[int, dict[int, str], dict[int, dict]]:
    """The stage; returns (stage id, item id -> true label, item id -> drafted check payload)."""
    rng = random.Random(seed)
    truths = [rng.choice(("yes", "no")) for _ in range(n + n_gold)]
    _, (stage_id,) = factories.project(session, "voldoger.verify", overlap=overlap, config=config)
    project_id = session.get_one(Stage, stage_id).project_id
    factories.items(session, settings, storage, project_id, [record(i, t) for i, t in enumerate(truths)], {}, folder)
    ids = {item.external_id: item.id for item in session.query(Item).filter(Item.project_id == project_id)}
    labels, drafts = {}, {}
    for i, t in enumerate(truths):
        item_id = ids[f"v{i}"]
        labels[item_id] = t
        drafts[item_id] = {"image": "keep", "label": "yes" if rng.random() < yes_draft else "no",
                           "paraphrase": f"Is the ball in picture {i} red?", "reason": "The ball looks red."}
        suggestions.store(session, item_id, stage_id, CHECK_KIND, model, drafts[item_id], model_version=DRAFT_VERSION)
    if n_gold:
        lines = [json.dumps({"id": f"v{i}", "answer": truth_answer(truths[i])}) for i in range(n, n + n_gold)]
        gold.import_answers(session, stage_id, "\n".join(lines).encode(), actor_id=None)
    session.flush()
    return stage_id, labels, drafts
