"""ExpArt's item record, the section path, the paper's instruction templates, and entity highlighting."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, Field, field_validator, model_validator

from app.datasets.dataset import ItemBase
from app.datasets.workflow import image_urls

SECTIONS = "artwork.sections"
EXPLANATION = "artwork.explanation"
# An explanation a vision-language model drafted from the image and the title (app.datasets.artwork.drafts):
# payload {"explanation": text, "metrics": its entity metrics against the section's text}.
DRAFTED_KIND = "artwork.drafted_explanation"
MAX_EXPLANATION = 10000  # characters of a drafted explanation


class DraftedSuggestion(BaseModel):
    """DRAFTED_KIND's payload as the explanation screen reads it: the drafted text, and its entity metrics
    (finite numbers, or None where undefined; the screen prints entity_f1 and entity_coverage). Extra keys are
    kept and ignored."""

    explanation: str = Field(min_length=1, max_length=MAX_EXPLANATION)
    metrics: dict[str, Annotated[float, Field(allow_inf_nan=False)] | None] = Field(default_factory=dict)


class ArtworkSection(ItemBase):
    """One section (or subsection, sub-subsection) text of an artwork's article; extra keys kept.
    A record for `artwork.explanation` adds one model's explanation of it."""

    title: str = Field(min_length=1)
    image: str = Field(min_length=1)
    section: str = Field(min_length=1)
    subsection: str | None = None
    subsubsection: str | None = None
    text: str = Field(min_length=1)
    entities: list[str] = Field(default_factory=list)
    model: str | None = None
    explanation: str | None = None
    explanation_entities: list[str] | None = None

    @field_validator("entities", "explanation_entities", mode="before")
    @classmethod
    def _strings(cls, value: Any) -> Any:
        # Entity names are text: a number or an object in the list is a broken record, not a name.
        if isinstance(value, list) and any(not isinstance(v, str) for v in value):
            raise ValueError("entities must be a list of strings")
        return value

    @model_validator(mode="after")
    def _model_with_explanation(self) -> ArtworkSection:
        if (self.model is None) != (self.explanation is None):
            raise ValueError("'model' and 'explanation' come together: give both, or neither")
        if self.subsubsection and not self.subsection:
            raise ValueError("a sub-subsection needs its subsection")
        return self


def section_path(item: Mapping[str, Any]) -> list[str]:
    return [p for p in (item.get("section"), item.get("subsection"), item.get("subsubsection")) if p]


# The paper's instruction templates (with and without the title), by depth of the section path.
TEMPLATES_T = (
    "Explain the {section} of this artwork, {title}.",
    "Explain the {subsection} regarding the {section} of this artwork, {title}.",
    "Explain the {subsubsection} regarding the {subsection} in the {section} of this artwork, {title}.",
)
TEMPLATES_NT = (
    "Explain the {section} of this artwork.",
    "Explain the {subsection} regarding the {section} of this artwork.",
    "Explain the {subsubsection} regarding the {subsection} in the {section} of this artwork.",
)


def section_view(item: Mapping[str, Any], assets: Mapping[str, str]) -> dict[str, Any]:
    """A section as reviewers and histories show it (both workflows): image, title, path, entities marked."""
    return {
        "image": image_urls(item.get("image"), assets.get("/image")),
        "title": item.get("title") or "",
        "path": section_path(item),
        "segments": segments(item.get("text") or "", item.get("entities") or [], lambda e: "entity"),
    }


def instructions(item: Mapping[str, Any]) -> tuple[str, str]:
    """The instruction with the title and the one without it, for the item's section path."""
    depth = len(section_path(item)) - 1
    values = {k: item.get(k) or "" for k in ("title", "section", "subsection", "subsubsection")}
    return TEMPLATES_T[depth].format(**values), TEMPLATES_NT[depth].format(**values)


def entity_spans(text: str, entities: Iterable[str]) -> list[tuple[int, int, str]]:
    """Character spans of entity mentions (case-insensitive, whole words), longest entity first, no overlaps."""
    spans: list[tuple[int, int, str]] = []
    for entity in sorted({e for e in entities if e and e.strip()}, key=len, reverse=True):
        pattern = re.compile(r"(?<!\w)" + re.escape(entity.strip()) + r"(?!\w)", re.IGNORECASE)
        for m in pattern.finditer(text):
            if all(m.end() <= a or m.start() >= b for a, b, _ in spans):
                spans.append((m.start(), m.end(), entity))
    return sorted(spans)


def segments(text: str, entities: Iterable[str], kind_of) -> list[dict[str, Any]]:
    """The text cut into plain runs and entity mentions ({"text", "kind", "entity"}) for a template."""
    out, pos = [], 0
    for a, b, entity in entity_spans(text, entities):
        if a > pos:
            out.append({"text": text[pos:a], "kind": None, "entity": None})
        out.append({"text": text[a:b], "kind": kind_of(entity), "entity": entity})
        pos = b
    if pos < len(text):
        out.append({"text": text[pos:], "kind": None, "entity": None})
    return out
