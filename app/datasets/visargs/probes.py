"""VisArgs' probes, one per screen that shows a draft. Premises and structure plant a statement from a
pool (`probe_pool`, one drawn per gold item) into the item's real draft, as if the model had written it.
Premises: a visual premise the image does not show, added; caught when no premise keeps its text.
Structure: a commonsense premise the argument does not need, added and wired into the step that concludes
C; caught when no commonsense premise keeps its text. Grounding: the first premise's box shifted by half
its width and height (IoU 1/7 with the gold box); caught when the answer's box for that premise overlaps
the shifted one by less than CAUGHT_IOU."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.bias.probes import Probe, pick
from app.datasets.visargs.argtree import StepSyntaxError, parse_step, print_step
from app.datasets.visargs.probe_pool import COMMONSENSE, VISUAL
from app.datasets.visargs.schema import (
    ARGUMENT_KIND,
    BOX_KIND,
    DRAFTED_BOX_KIND,
    GROUNDING,
    MAX_PREMISES,
    PREMISES,
    PREMISES_KIND,
    REGION_KIND,
    STRUCTURE,
    clean,
)

CAUGHT_IOU = 0.5  # the IoU at which the screens count a box as kept (VisArgsGrounding.suggestion_outcome)


def _folded(texts: Any) -> set[str]:
    return {clean(t).lower() for t in texts or []}


def _added(texts: Any, phrase: str) -> list[str]:
    """The list with the phrase last; a full list (the screen takes MAX_PREMISES) gives up its last entry."""
    return [*list(texts or [])[:MAX_PREMISES - 1], phrase]


def planted_premise(truth: Mapping[str, Any], item: Mapping[str, Any]) -> str:
    """The visual premise planted on this gold item (none the gold answer itself states)."""
    gold = _folded(truth.get("visual_premises"))
    return pick(VISUAL, truth, item, lambda p: clean(p).lower() in gold)


def plant(truth: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any] | None:
    """The record's drafted premises with the planted one added (`into_draft` adds it to the real draft
    instead); None when the gold answer discards the image or has no premise."""
    if truth.get("discard") or not truth.get("visual_premises"):
        return None
    return {"visual_premises": _added(item.get("candidate_premises"), planted_premise(truth, item))}


def into_draft(planted: Mapping[str, Any], draft: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any]:
    return {**draft, "visual_premises": _added(draft.get("visual_premises"), planted["visual_premises"][-1])}


def caught(truth: Mapping[str, Any], answer: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    kept = set() if answer.get("discard") else _folded(answer.get("visual_premises"))
    return clean(planted_premise(truth, item)).lower() not in kept


PROBE = Probe(workflow=PREMISES, kind=PREMISES_KIND, error="a visual premise the image does not show, added", plant=plant,
              caught=caught, into_draft=into_draft)


def planted_commonsense(truth: Mapping[str, Any], item: Mapping[str, Any]) -> str:
    """The commonsense premise planted on this gold item (none the gold argument itself states)."""
    gold = _folded(truth.get("commonsense_premises"))
    return pick(COMMONSENSE, truth, item, lambda p: clean(p).lower() in gold)


def wired(argument: Mapping[str, Any], phrase: str) -> dict[str, Any]:
    """The argument with the phrase as its last commonsense premise and an input of the step that concludes
    C (a new step concluding C from it alone when none does, or when its steps do not parse)."""
    cps = _added(argument.get("commonsense_premises"), phrase)
    steps, conclusion, cp = list(argument.get("reasoning_steps") or []), str(argument.get("conclusion") or ""), f"CP{len(cps)}"
    for n, line in enumerate(steps):
        try:
            step = parse_step(line)
        except StepSyntaxError:
            break
        if step.output == "C":
            inputs = step.inputs if cp in step.inputs else (*step.inputs, cp)
            steps[n] = print_step(type(step)(inputs, step.output, step.text))
            return {"commonsense_premises": cps, "conclusion": conclusion, "reasoning_steps": steps}
    return {"commonsense_premises": cps, "conclusion": conclusion, "reasoning_steps": [*steps, f"({cp} -> C): {conclusion}"]}


def plant_structure(truth: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any] | None:
    """The record's drafted argument with the planted premise wired in (`into_draft_structure` wires it
    into the real draft instead); None for a discarded image."""
    if truth.get("discard"):
        return None
    record = {"commonsense_premises": item.get("candidate_commonsense"), "conclusion": item.get("candidate_conclusion"),
              "reasoning_steps": item.get("candidate_steps")}
    return wired(record, planted_commonsense(truth, item))


def into_draft_structure(planted: Mapping[str, Any], draft: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any]:
    return {**draft, **wired(draft, planted["commonsense_premises"][-1])}


def caught_structure(truth: Mapping[str, Any], answer: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    kept = set() if answer.get("discard") else _folded(answer.get("commonsense_premises"))
    return clean(planted_commonsense(truth, item)).lower() not in kept


def shifted(box: Mapping[str, Any]) -> dict[str, int]:
    """The box moved by half its width and half its height, towards the image's origin where it has
    room, else away from it (its IoU with the box is 1/7)."""
    dx, dy = max(box["w"] // 2, 1), max(box["h"] // 2, 1)
    x = box["startX"] - dx if box["startX"] >= dx else box["startX"] + dx
    y = box["startY"] - dy if box["startY"] >= dy else box["startY"] + dy
    return {"startX": x, "startY": y, "w": box["w"], "h": box["h"]}


def plant_grounding(truth: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any] | None:
    """The gold boxes as a suggestion (one per premise), the first one shifted."""
    boxes = list(truth.get("b_box") or [])
    if not boxes:
        return None
    return {"boxes": [{"vp": i, **(shifted(b) if i == 0 else {k: b[k] for k in ("startX", "startY", "w", "h")})}
                      for i, b in enumerate(boxes)]}


def caught_grounding(truth: Mapping[str, Any], answer: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    from app.agreement.boxes import iou  # with numpy, which registering the dataset need not load

    given, boxes = answer.get("b_box") or [], truth.get("b_box") or []
    return not given or not boxes or iou(given[0], shifted(boxes[0])) < CAUGHT_IOU


STRUCTURE_PROBE = Probe(workflow=STRUCTURE, kind=ARGUMENT_KIND, error="a commonsense premise the argument does not need, added",
                        plant=plant_structure, caught=caught_structure, into_draft=into_draft_structure)
# The grounding screen merges three kinds of suggested boxes, preferring them in this order: the plant
# replaces the first the item has, and as it carries a box for every premise, the screen shows only its boxes.
GROUNDING_PROBE = Probe(workflow=GROUNDING, kind=BOX_KIND, error="a premise's box shifted by half its size",
                        plant=plant_grounding, caught=caught_grounding, alternatives=(DRAFTED_BOX_KIND, REGION_KIND))
