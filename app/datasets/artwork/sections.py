"""artwork.sections: keep a section text that explains the artwork, or drop it with a reason.

The paper dropped sections by name (References, See also, ...); that list is a rule here, computed
when the screen is shown: it pre-selects "drop: not about the artwork" and says so on screen.
No suggestion rows are stored for it, so there is no suggestion outcome to record.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from app.datasets.artwork.schema import SECTIONS, section_path, section_view, segments
from app.datasets.workflow import Consolidation, Workflow, image_urls

# (value, digit key, label) of the reasons to drop a section.
REASONS = (
    ("not_about_artwork", "1", "not about the artwork"),
    ("too_short", "2", "too short or empty"),
    ("broken_text", "3", "broken text (markup, tables, lists)"),
    ("wrong_article", "4", "text or image of another artwork"),
    ("other", "5", "other"),
)
REASON_VALUES = tuple(r[0] for r in REASONS)
DECISIONS = ("keep", "drop")

# The paper's omitted section names (lower case), Bibliography's language variants included.
OMITTED = frozenset({
    "references", "see also", "external links", "sources", "further reading", "bibliography",
    "bibliographie", "bibliografia", "bibliografía", "bibliografie", "gallery", "footnotes", "notes",
    "notes and references", "images", "links", "list", "list by location",
})


def omitted_name(item: dict[str, Any]) -> str | None:
    """The first name on the item's section path that the paper's rule omits, or None."""
    for name in section_path(item):
        if " ".join(name.split()).lower() in OMITTED:
            return name
    return None


class SectionAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: Literal["keep", "drop"]
    reason: Literal[REASON_VALUES] | None = None  # type: ignore[valid-type]


class ArtworkSections(Workflow):
    name = SECTIONS
    title = "ExpArt: keep the sections that explain the artwork"
    description = "Keep a section text that explains its artwork, or drop it with a reason."
    annotation_schema = SectionAnnotation
    template = "datasets/artwork/sections.html"
    view_template = "datasets/artwork/sections_view.html"
    keys_help = "K keep · D drop · 1–5 the reason to drop · Enter submits · S skips"
    facets = {"decision": "nominal", "reason": "nominal"}

    def validate_annotation(self, ctx, payload):
        clean = super().validate_annotation(ctx, payload)
        if clean["decision"] == "keep":
            clean["reason"] = None
        return clean

    def check(self, ctx, payload):
        if payload.decision == "drop" and not payload.reason:
            return ["Say why the section is dropped: choose a reason (keys 1–5)."]
        return []

    def form_to_payload(self, form):
        payload = {k: form.get(k) for k in ("decision", "reason") if form.get(k) not in (None, "")}
        if isinstance(payload.get("decision"), str):
            payload["decision"] = payload["decision"].strip().lower()
        if payload.get("decision") == "keep":
            payload.pop("reason", None)
        return payload

    def payload_values(self, ctx, payload):
        return {k: payload[k] for k in ("decision", "reason") if payload.get(k) is not None}

    def is_discard(self, payload):
        return payload.get("decision") == "drop"

    def facet_values(self, payload):
        return {"decision": payload.get("decision"), "reason": payload.get("reason") if payload.get("decision") == "drop" else None}

    def consolidate(self, ctx, payloads):
        """Majority on keep / drop, then on the reason among those who dropped; a tie goes to review."""
        if not payloads:
            return Consolidation(final=None, needs_review=True)
        winner = _majority([p["decision"] for p in payloads])
        if winner is None:
            return Consolidation(final=None, needs_review=True)
        if winner == "keep":
            return Consolidation(final={"decision": "keep", "reason": None})
        reason = _majority([p.get("reason") for p in payloads if p["decision"] == "drop"])
        if reason is None:
            return Consolidation(final=None, needs_review=True)
        return Consolidation(final={"decision": "drop", "reason": reason}, discard=True)

    def screen_context(self, ctx, values):
        rule = omitted_name(ctx.item)
        return {
            "image": image_urls(ctx.item.get("image"), ctx.assets.get("/image")),
            "path": section_path(ctx.item),
            "segments": segments(ctx.item.get("text") or "", ctx.item.get("entities") or [], lambda e: "entity"),
            "reasons": REASONS,
            "rule": rule,
        }

    def view_item(self, ctx):
        return section_view(ctx.item, ctx.assets)

    def view_answer(self, ctx, payload, kind=None):
        reasons = {value: label for value, _, label in REASONS}
        reason = payload.get("reason")
        return {"decision": payload.get("decision"), "reason": reasons.get(reason, reason) if payload.get("decision") == "drop" else None}

    def initial_values(self, ctx):
        if omitted_name(ctx.item):
            return {"decision": "drop", "reason": "not_about_artwork"}
        return {}


def _majority(values: list[Any]) -> Any:
    ranked = Counter(values).most_common(2)
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]
