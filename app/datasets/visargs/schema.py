"""The VisArgs record (an image with drafted premises, conclusion, steps and boxes), the workflow names,
and the form helpers the VisArgs screens share."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

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

    @field_validator("candidate_steps")
    @classmethod
    def _steps_parse(cls, value: list[str]) -> list[str]:
        _, errors = parse_steps(value)
        if errors:
            raise ValueError("; ".join(errors))
        return value


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
