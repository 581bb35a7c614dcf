"""VOLDOGER's probe: a drafted check that gets one decision wrong, planted on a gold item.

Where the gold answer keeps the image and the task has labels (VQA, visual entailment), the check
carries another label than the true one (a flipped label); otherwise it flips the keep / discard
decision. The answer caught it when it does not repeat the planted decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.bias.probes import Probe
from app.datasets.voldoger.release import LABELS
from app.datasets.voldoger.verify import CHECK_KIND, VERIFY, llm_text


def _flipped_label(task: str, label: Any) -> str | None:
    """Another label of the task than `label`: the next one in the task's order."""
    values = [v for v, _ in LABELS.get(task, ())]
    if label not in values:
        return None
    return values[(values.index(label) + 1) % len(values)]


def plant(truth: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any] | None:
    text = truth.get("text") if truth.get("paraphrase") == "edit" and truth.get("text") else llm_text(dict(item))
    keeps = truth.get("image") == "keep"
    wrong_label = _flipped_label(str(item.get("task")), truth.get("label")) if keeps else None
    if wrong_label is not None:
        return {"image": "keep", "label": wrong_label, "paraphrase": text, "reason": ""}
    return {"image": "discard" if keeps else "keep", "label": truth.get("label"), "paraphrase": text, "reason": ""}


def caught(truth: Mapping[str, Any], answer: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    planted = plant(truth, item)
    if planted is None:
        return True
    if planted["image"] != truth.get("image"):
        return answer.get("image") != planted["image"]
    return answer.get("image") == "discard" or answer.get("label") != planted["label"]


PROBE = Probe(workflow=VERIFY, kind=CHECK_KIND, error="a flipped label (or keep / discard decision)", plant=plant, caught=caught)
