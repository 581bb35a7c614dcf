"""VisArgs' draft kinds: what a vision-language model writes for the three VisArgs screens.

- visargs.visual_premises (premises stage) — the visual premises of a visual argument, as GPT-4o drafted
  them for the VisArgs annotators; `{"visual_premises": [...]}` fills the screen's rows, kept.
- visargs.argument (structure stage) — commonsense premises, the conclusion and a reasoning tree in the
  release's step syntax over the item's final visual premises; the tree must pass `argtree` (a premise
  it leaves out is only a warning: the screen's A adds it in one key). Steps are stored as the screen
  prints them, so taking the draft unchanged stores exactly the draft.
- visargs.premise_boxes (grounding stage) — a box per visual premise where the model finds one, answered
  in coordinates normalised to [0, 1] (the schema says so) and stored in pixels of the stored image, in
  the payload the grounding screen reads from the OCR producer: `{"boxes": [{"vp", "startX", "startY", "w", "h"}]}`.

The VisArgs code repository states what visual premises, commonsense premises and reasoning steps are;
the prompts quote those definitions. The paper's own drafting prompt could not be read here: the
instructions around the definitions are ours.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from PIL import Image, UnidentifiedImageError

from app.datasets.draft import DraftInvalid, DraftKind, answer_schema, json_instruction, within
from app.datasets.suggest import ItemInput
from app.datasets.visargs.argtree import parse_steps, print_step, validate_tree
from app.datasets.visargs.schema import (
    ARGUMENT_KIND,
    DRAFTED_BOX_KIND,
    GROUNDING,
    MAX_PREMISES,
    PREMISES,
    PREMISES_KIND,
    STRUCTURE,
    clean,
    premises_of,
)

SOURCE = (
    "Definitions of visual premises, commonsense premises and reasoning steps from the VisArgs code repository "
    "(JiwanChung/VisArgs, src/visarg/others/prompt_styles.py, style 0; Chung et al., EMNLP 2024). The instructions "
    "around them and the system text asking for JSON are ours."
)
VP_DEFINITION = '"Visual Premises (VP)" are the important features presented in the images.'
CP_DEFINITION = '"Commonsense Premises (CP)" are not visually depicted in the image but are commonly understood by people.'
RS_DEFINITION = (
    '"Reasoning Steps" are the structure of explanation of how we came up to the "Intermediate Conclusion (IC)" and "Conclusion".'
)
MAX_TEXT, MAX_CONCLUSION, MAX_STEP = 1000, 2000, 2000  # characters of a premise, the conclusion, a reasoning step
TEXT = {"type": "string"}


def numbered(prefix: str, texts: list[str]) -> str:
    return "\n".join(f"{prefix}{n}: {t}" for n, t in enumerate(texts, 1)) or "(none)"


def _texts(values: Any, what: str) -> list[str]:
    """Texts with their spacing collapsed; an empty one, or the same one twice, is refused."""
    out: list[str] = []
    seen: dict[str, int] = {}
    for n, value in enumerate(values or [], 1):
        text = clean(value)
        if not text:
            raise DraftInvalid(f"{what} {n} is empty.")
        within(text, f"{what} {n}", MAX_TEXT)
        if text.lower() in seen:
            raise DraftInvalid(f"{what}s {seen[text.lower()]} and {n} are the same.")
        seen[text.lower()] = n
        out.append(text)
    return out


# -- visual premises ---------------------------------------------------------------------------------
PREMISES_SCHEMA = answer_schema({
    "visual_premises": {
        "type": "array", "minItems": 1, "maxItems": MAX_PREMISES, "items": TEXT,
        "description": "a list of the visual premises, one short sentence each",
    },
})


def premises_fields(item: ItemInput) -> dict[str, str]:
    return {"candidate_premises": numbered("", list(item.data.get("candidate_premises") or []))}


def premises_payload(answer: dict[str, Any], item: ItemInput) -> dict[str, Any]:
    premises = _texts(answer.get("visual_premises"), "Visual premise")
    if not premises:
        raise DraftInvalid("The answer has no visual premise.")
    return {"visual_premises": premises}


def premises_answer(payload: Mapping[str, Any], item: ItemInput) -> dict[str, Any] | None:
    return {"visual_premises": list(payload.get("visual_premises") or []), "discard": False}


VISUAL_PREMISES = DraftKind(
    name=PREMISES_KIND,
    title="Visual premises of a visual argument (VisArgs' definition)",
    workflows=(PREMISES,),
    suggestion_kind=PREMISES_KIND,
    schema=PREMISES_SCHEMA,
    template=(
        "This image is a visual argument: it wants to persuade its viewer to do or believe something. "
        f"{VP_DEFINITION} List the visual premises the argument rests on. Make each one atomic: one visible object, "
        "action or piece of text, in a short sentence; quote any text in the image exactly. Leave out what the "
        "argument does not need."
    ),
    system=json_instruction(PREMISES_SCHEMA),
    fields=premises_fields,
    placeholders=("candidate_premises",),
    to_payload=premises_payload,
    as_answer=premises_answer,
    source=SOURCE,
    settings={"max_tokens": 512, "temperature": 0.0},
)


# -- commonsense premises, conclusion and reasoning tree ---------------------------------------------------
ARGUMENT_SCHEMA = answer_schema({
    "commonsense_premises": {
        "type": "array", "maxItems": MAX_PREMISES, "items": TEXT,
        "description": "a list of the commonsense premises, CP1 first",
    },
    "conclusion": {"type": "string", "description": "what the image wants to say, one sentence"},
    "reasoning_steps": {
        "type": "array", "minItems": 1, "maxItems": MAX_PREMISES,
        "items": {"type": "string"},
        "description": 'a list of the reasoning steps, each written "(VP1, CP1 -> IC1): text", the last one concluding C',
    },
})


def visual_premises(item: ItemInput) -> dict[str, str]:
    return {"visual_premises": numbered("VP", premises_of(item.results))}


def argument_payload(answer: dict[str, Any], item: ItemInput) -> dict[str, Any]:
    """The structure screen's fields; the tree checked over the item's final visual premises."""
    vps = premises_of(item.results)
    if not vps:
        raise DraftInvalid("The item has no final visual premises to reason from.")
    cps = _texts(answer.get("commonsense_premises"), "Commonsense premise")
    conclusion = clean(answer.get("conclusion"))
    if not conclusion:
        raise DraftInvalid("The conclusion is empty.")
    within(conclusion, "The conclusion", MAX_CONCLUSION)
    lines = [within(str(s), f"Reasoning step {n}", MAX_STEP) for n, s in enumerate(answer.get("reasoning_steps") or [], 1)]
    steps, syntax = parse_steps(lines)
    if syntax:
        raise DraftInvalid("The reasoning steps do not parse: " + " ".join(syntax))
    tree = validate_tree(steps, len(vps), len(cps), unused="warning")
    if not tree.ok:
        raise DraftInvalid("The reasoning tree is not valid: " + " ".join(tree.errors))
    return {"commonsense_premises": cps, "conclusion": conclusion, "reasoning_steps": [print_step(s) for s in steps]}


def argument_answer(payload: Mapping[str, Any], item: ItemInput) -> dict[str, Any] | None:
    return {
        "commonsense_premises": list(payload.get("commonsense_premises") or []),
        "conclusion": str(payload.get("conclusion") or ""),
        "reasoning_steps": list(payload.get("reasoning_steps") or []),
        "discard": False,
    }


ARGUMENT = DraftKind(
    name=ARGUMENT_KIND,
    title="Commonsense premises, conclusion and reasoning tree (VisArgs' definitions and step syntax)",
    workflows=(STRUCTURE,),
    suggestion_kind=ARGUMENT_KIND,
    schema=ARGUMENT_SCHEMA,
    template=(
        "This image is a visual argument: it wants to persuade its viewer to do or believe something. "
        f"{VP_DEFINITION} This image's visual premises:\n{{visual_premises}}\n\n{CP_DEFINITION} {RS_DEFINITION}\n\n"
        "Write the commonsense premises the argument needs, the conclusion (what the image wants to say, in one "
        'sentence), and the reasoning steps. Write each step as "(VP1, CP2 -> IC1): what follows", its inputs '
        "being visual premises, commonsense premises (numbered CP1, CP2, ... in your order) and intermediate "
        "conclusions of earlier steps. Exactly one step, the last, concludes C; every premise is used by a step."
    ),
    system=json_instruction(ARGUMENT_SCHEMA),
    fields=visual_premises,
    placeholders=("visual_premises",),
    to_payload=argument_payload,
    as_answer=argument_answer,
    source=SOURCE,
    settings={"max_tokens": 1024, "temperature": 0.0},
)


# -- a box per visual premise -----------------------------------------------------------------------
FRACTION = {"type": "number", "minimum": 0, "maximum": 1}
BOXES_SCHEMA = answer_schema({
    "boxes": {
        "type": "array", "maxItems": MAX_PREMISES,
        "items": answer_schema({
            "premise": {"type": "integer", "minimum": 1, "description": "the visual premise's number"},
            "x_min": FRACTION, "y_min": FRACTION, "x_max": FRACTION, "y_max": FRACTION,
        }),
        "description": (
            "a list of boxes, one per visual premise found in the image, each with the premise's number and its corners "
            "x_min, y_min, x_max, y_max normalised to the image: fractions of its width and height from 0 (left, top) to 1 "
            "(right, bottom)"
        ),
    },
})


def image_size(item: ItemInput) -> tuple[int, int]:
    data = item.images.get("/image")
    if not data:
        raise DraftInvalid("The item's image is not stored, so normalised coordinates cannot become pixels.")
    try:
        with Image.open(io.BytesIO(data)) as img:
            return img.size
    except (UnidentifiedImageError, OSError):
        raise DraftInvalid("The item's stored image cannot be read.") from None


def boxes_payload(answer: dict[str, Any], item: ItemInput) -> dict[str, Any]:
    """Normalised corners to the screen's pixel boxes (at least 1 pixel each way, inside the image)."""
    vps = premises_of(item.results)
    width, height = image_size(item)
    boxes: dict[int, dict[str, int]] = {}
    for box in answer.get("boxes") or []:
        n = box["premise"]
        if not 1 <= n <= len(vps):
            raise DraftInvalid(f"Box for premise {n}: the item has {len(vps)} visual premises.")
        if n - 1 in boxes:
            raise DraftInvalid(f"Premise {n} has two boxes.")
        if box["x_max"] <= box["x_min"] or box["y_max"] <= box["y_min"]:
            raise DraftInvalid(f"The box of premise {n} ends before it starts (x_max <= x_min or y_max <= y_min).")
        x, y = min(round(box["x_min"] * width), width - 1), min(round(box["y_min"] * height), height - 1)
        boxes[n - 1] = {
            "vp": n - 1, "startX": x, "startY": y,
            "w": max(1, min(round(box["x_max"] * width), width) - x), "h": max(1, min(round(box["y_max"] * height), height) - y),
        }
    if not boxes:
        raise DraftInvalid("The answer has no box.")
    return {"boxes": [boxes[k] for k in sorted(boxes)]}


def boxes_answer(payload: Mapping[str, Any], item: ItemInput) -> dict[str, Any] | None:
    """A grounding answer when there is a box for every premise; else none (the draft cannot be one)."""
    boxes = {b["vp"]: {k: b[k] for k in ("startX", "startY", "w", "h")} for b in payload.get("boxes") or []}
    n = len(premises_of(item.results))
    if not n or set(boxes) != set(range(n)):
        return None
    return {"b_box": [boxes[k] for k in range(n)]}


PREMISE_BOXES = DraftKind(
    name=DRAFTED_BOX_KIND,
    title="A box per visual premise (normalised coordinates)",
    workflows=(GROUNDING,),
    suggestion_kind=DRAFTED_BOX_KIND,
    schema=BOXES_SCHEMA,
    template=(
        "Visual premises of this image:\n{visual_premises}\n\nFor each visual premise you can find in the image, give "
        "one tight box around what it describes: the premise's number and the box's corners as fractions of the "
        "image's width and height (0 is the left or top edge, 1 the right or bottom edge). Leave out a premise you "
        "cannot find."
    ),
    system=json_instruction(BOXES_SCHEMA),
    fields=visual_premises,
    placeholders=("visual_premises",),
    to_payload=boxes_payload,
    as_answer=boxes_answer,
    source="Ours (VisArgs' annotators drew one tight box per visual premise; Chung et al., EMNLP 2024).",
    settings={"max_tokens": 512, "temperature": 0.0},
)

DRAFTS = (VISUAL_PREMISES, ARGUMENT, PREMISE_BOXES)
