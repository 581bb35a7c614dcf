"""VisArgs' probes, one per screen that shows a draft, each planted from a gold answer as if a model had
drafted it. Premises: a visual premise the image does not show, added; caught when no premise keeps its
text. Structure: a commonsense premise the argument does not need, added and wired into the step that
concludes C; caught when no commonsense premise keeps its text. Grounding: the first premise's box
shifted by half its width and height (IoU 1/7 with the gold box); caught when the answer's box for that
premise overlaps the shifted one by less than CAUGHT_IOU."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.bias.probes import Probe
from app.datasets.visargs.argtree import StepSyntaxError, parse_step, print_step
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

PLANTED = "A small brown dog sleeps in the lower left corner"
PLANTED_CP = "Anyone who owns a bicycle distrusts newspapers"
CAUGHT_IOU = 0.5  # the IoU at which the screens count a box as kept (VisArgsGrounding.suggestion_outcome)


def plant(truth: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any] | None:
    premises = list(truth.get("visual_premises") or [])
    if truth.get("discard") or not premises or len(premises) >= MAX_PREMISES:
        return None  # no premise to add to, or no room for one more (the screen takes MAX_PREMISES)
    return {"visual_premises": [*premises, PLANTED]}


def caught(truth: Mapping[str, Any], answer: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    kept = set() if answer.get("discard") else {clean(t).lower() for t in answer.get("visual_premises") or []}
    return clean(PLANTED).lower() not in kept


PROBE = Probe(workflow=PREMISES, kind=PREMISES_KIND, error="a visual premise the image does not show, added", plant=plant,
              caught=caught)


def plant_structure(truth: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any] | None:
    """The gold argument with PLANTED_CP added as the last commonsense premise and as an input of the
    step that concludes C; None for a discarded image, or an argument without such a step."""
    cps = list(truth.get("commonsense_premises") or [])
    steps = list(truth.get("reasoning_steps") or [])
    if truth.get("discard") or len(cps) >= MAX_PREMISES:
        return None
    for n, line in enumerate(steps):
        try:
            step = parse_step(line)
        except StepSyntaxError:
            return None
        if step.output == "C":
            wired = print_step(type(step)((*step.inputs, f"CP{len(cps) + 1}"), step.output, step.text))
            return {"commonsense_premises": [*cps, PLANTED_CP], "conclusion": truth.get("conclusion") or "",
                    "reasoning_steps": [*steps[:n], wired, *steps[n + 1:]]}
    return None


def caught_structure(truth: Mapping[str, Any], answer: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    kept = set() if answer.get("discard") else {clean(t).lower() for t in answer.get("commonsense_premises") or []}
    return clean(PLANTED_CP).lower() not in kept


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
                        plant=plant_structure, caught=caught_structure)
# The grounding screen merges three kinds of suggested boxes, preferring them in this order: the plant
# replaces the first the item has, and as it carries a box for every premise, the screen shows only its boxes.
GROUNDING_PROBE = Probe(workflow=GROUNDING, kind=BOX_KIND, error="a premise's box shifted by half its size",
                        plant=plant_grounding, caught=caught_grounding, alternatives=(DRAFTED_BOX_KIND, REGION_KIND))
