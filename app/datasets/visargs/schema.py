"""The VisArgs record (an image with drafted premises, conclusion, steps and boxes), the workflow names,
and the form helpers the VisArgs screens share."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.datasets.dataset import ItemBase
from app.datasets.visargs.argtree import parse_steps

PREMISES = "visargs.premises"
STRUCTURE = "visargs.structure"
GROUNDING = "visargs.grounding"
EQUIVALENCE = "visargs.equivalence"
# Suggestion kind the grounding screen reads: payload {"boxes": [{"vp": index, "startX", "startY", "w", "h"}]}.
BOX_KIND = "visargs.boxes"
# The same payload from an image-text model: the best-matching region per premise, with its score.
REGION_KIND = "visargs.regions"
# Drafted by a vision-language model (app.datasets.visargs.drafts): the premises screen's visual premises
# {"visual_premises": [...]}, the structure screen's {"commonsense_premises", "conclusion", "reasoning_steps"},
# and the grounding screen's boxes in BOX_KIND's payload.
PREMISES_KIND = "visargs.visual_premises"
ARGUMENT_KIND = "visargs.argument"
DRAFTED_BOX_KIND = "visargs.premise_boxes"
MAX_PREMISES = 40
SPARE_ROWS = 2  # empty rows a form without JavaScript offers for additions


class Box(BaseModel):
    model_config = ConfigDict(extra="forbid")

    startX: int = Field(ge=0)  # noqa: N815 - the published field names
    startY: int = Field(ge=0)  # noqa: N815
    w: int = Field(ge=1)
    h: int = Field(ge=1)


def steps_that_parse(value: list[str]) -> list[str]:
    """Reasoning steps in the release's syntax, as given; a step that does not parse is refused."""
    _, errors = parse_steps(value)
    if errors:
        raise ValueError("; ".join(errors))
    return value


# The suggestion payloads the VisArgs screens read (`Workflow.suggestion_schemas`): what the worker's
# producers and drafts store, and what a push from outside must be. Extra keys are kept and ignored.
PremiseText = Annotated[str, Field(max_length=5000)]


class PremisesSuggestion(BaseModel):
    """PREMISES_KIND: the visual premises that fill the premises screen's rows."""

    visual_premises: list[PremiseText] = Field(max_length=MAX_PREMISES)


class ArgumentSuggestion(BaseModel):
    """ARGUMENT_KIND: the structure screen's commonsense premises, conclusion and reasoning steps, each step in
    the release's syntax (a step that does not parse would vanish from the screen, so it is refused)."""

    commonsense_premises: list[PremiseText] = Field(default_factory=list, max_length=MAX_PREMISES)
    conclusion: str = Field(default="", max_length=2000)
    reasoning_steps: list[PremiseText] = Field(default_factory=list, max_length=MAX_PREMISES)

    _steps_parse = field_validator("reasoning_steps")(steps_that_parse)


Pixels = Annotated[int, Field(ge=0, strict=True)]


class SuggestedBox(BaseModel):
    """One suggested box: the visual premise's index (0 is VP1) and the box in pixels of the stored image; an
    OCR box carries its text, an image-text match its score."""

    vp: int = Field(ge=0, lt=MAX_PREMISES, strict=True)
    startX: Pixels  # noqa: N815 - the published field names
    startY: Pixels  # noqa: N815
    w: int = Field(ge=1, strict=True)
    h: int = Field(ge=1, strict=True)
    score: float | None = Field(default=None, allow_inf_nan=False)
    text: str | None = Field(default=None, max_length=5000)


class BoxesSuggestion(BaseModel):
    """BOX_KIND, DRAFTED_BOX_KIND and REGION_KIND: boxes for the grounding screen, at most one per premise."""

    boxes: list[SuggestedBox] = Field(max_length=MAX_PREMISES)

    @field_validator("boxes")
    @classmethod
    def _one_per_premise(cls, value: list[SuggestedBox]) -> list[SuggestedBox]:
        vps = [b.vp for b in value]
        if twice := sorted({vp + 1 for vp in vps if vps.count(vp) > 1}):
            raise ValueError("one box per visual premise, more than one for " + ", ".join(f"VP{n}" for n in twice))
        return value


class VisArgsItem(ItemBase):
    image: str = Field(min_length=1)
    url: str | None = None
    candidate_premises: list[str] = Field(default_factory=list, max_length=MAX_PREMISES)
    candidate_commonsense: list[str] = Field(default_factory=list, max_length=MAX_PREMISES)
    candidate_conclusion: str = ""
    candidate_steps: list[str] = Field(default_factory=list, max_length=MAX_PREMISES)
    candidate_boxes: list[Box] = Field(default_factory=list, max_length=MAX_PREMISES)

    @model_validator(mode="before")
    @classmethod
    def _published_record(cls, data: Any) -> Any:
        """A record of the published annotation.json: its fields become the drafts to re-annotate."""
        if not isinstance(data, dict) or "visual_premises" not in data:
            return data
        data = dict(data)
        renames = {
            "visual_premises": "candidate_premises",
            "commonsense_premises": "candidate_commonsense",
            "conclusion": "candidate_conclusion",
            "reasoning_steps": "candidate_steps",
            "b_box": "candidate_boxes",
        }
        for old, new in renames.items():
            if old in data:
                data.setdefault(new, data.pop(old))
        if data.get("url"):
            data.setdefault("image", data["url"])
            data.setdefault("id", PurePosixPath(str(data["url"]).split("?")[0]).stem)
        return data

    _steps_parse = field_validator("candidate_steps")(steps_that_parse)


def clean(text: Any) -> str:
    return " ".join(str(text or "").split())


def row_indices(form: Mapping[str, Any], prefix: str) -> list[int]:
    found = set()
    for key in form:
        m = re.fullmatch(re.escape(prefix) + r"(\d+)", key)
        if m:
            found.add(int(m.group(1)))
    return sorted(found)


def as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def truthy(value: Any) -> bool:
    return str(value).lower() in ("on", "true", "1", "yes")


def final_of(results: Mapping[str, Any], name: str) -> dict[str, Any]:
    return results.get(name) or {}


def premises_of(results: Mapping[str, Any]) -> list[str]:
    """The visual premises the premises stage finalised."""
    return final_of(results, PREMISES).get("visual_premises") or []
