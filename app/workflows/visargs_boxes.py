"""VisArgs boxes: one tight box per visual premise (`visargs.grounding`), and the equivalence
judgement of two conclusions used for agreement studies (`visargs.equivalence`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.agreement.boxes import iou
from app.errors import Invalid
from app.workflows.base import ItemBase, Workflow, image_urls
from app.workflows.registry import register
from app.workflows.visargs import (
    BOX_KIND,
    EQUIVALENCE,
    GROUNDING,
    MAX_PREMISES,
    PREMISES,
    REGION_KIND,
    Box,
    VisArgsExport,
    VisArgsItem,
    final_of,
    row_indices,
)

# -- grounding ---------------------------------------------------------------------------------


class GroundingAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    b_box: list[Box] = Field(max_length=MAX_PREMISES)


def _int(value: Any) -> int | None:
    try:
        return int(round(float(str(value).strip())))
    except (TypeError, ValueError):
        return None


@register
class VisArgsGrounding(VisArgsExport, Workflow):
    name = GROUNDING
    title = "VisArgs: one box per visual premise"
    description = "Draw one tight box around what each visual premise describes."
    item_schema = VisArgsItem
    annotation_schema = GroundingAnnotation
    template = "workflows/visargs_grounding.html"
    requires = PREMISES
    suggestion_kinds = (BOX_KIND, REGION_KIND)
    keys_help = (
        "1–9 pick a premise · drag on the image to draw its box, drag the box to move it, its corner to resize · "
        "arrows move (Alt: 10 px), Shift+arrows resize · A accepts the suggested box · + / − zoom · Enter submits"
    )

    def form_to_payload(self, form):
        boxes = []
        for i in row_indices(form, "x_"):
            boxes.append({k: _int(form.get(f"{f}_{i}")) for k, f in (("startX", "x"), ("startY", "y"), ("w", "w"), ("h", "h"))})
        return {"b_box": boxes}

    def payload_values(self, payload, item, config, results):
        return box_values(payload.get("b_box") or [])

    def validate_annotation(self, item, payload, config, results=None):
        boxes = payload.get("b_box")
        if isinstance(boxes, list):
            missing = [n for n, b in enumerate(boxes, 1) if not isinstance(b, dict) or None in b.values()]
            if missing:
                raise Invalid(
                    "The annotation is not complete.",
                    [f"Visual premise {n} has no box yet: pick it and drag on the image." for n in missing],
                )
        return super().validate_annotation(item, payload, config, results)

    def check(self, item, payload, config, results):
        vps = final_of(results, PREMISES).get("visual_premises") or []
        if len(payload.b_box) != len(vps):
            return [f"Give exactly one box per visual premise: {len(vps)} premises, {len(payload.b_box)} boxes."]
        return []

    def suggestion_outcome(self, kind, suggestion, payload, item):
        """Suggested boxes: all taken as they were is accepted; some kept or adjusted (IoU >= 0.5) is edited."""
        if kind not in (BOX_KIND, REGION_KIND):
            return None
        final = payload.get("b_box") or []
        verdicts = []
        for box in suggestion.get("boxes") or []:
            vp = box.get("vp")
            if not isinstance(vp, int) or vp >= len(final):
                continue
            proposed = {k: box[k] for k in ("startX", "startY", "w", "h")}
            verdicts.append("accepted" if final[vp] == proposed else "edited" if iou(final[vp], proposed) >= 0.5 else "rejected")
        if not verdicts:
            return None
        if all(v == "accepted" for v in verdicts):
            return "accepted"
        return "rejected" if all(v == "rejected" for v in verdicts) else "edited"

    def compare(self, a, b):
        pairs = list(zip(a.get("b_box") or [], b.get("b_box") or [], strict=False))
        return sum(iou(x, y) >= 0.5 for x, y in pairs) / len(pairs) if pairs else 1.0

    def agreement_facets(self):
        return {"boxes": "boxes"}

    def facet_values(self, payload):
        return {"boxes": payload.get("b_box")}

    def screen_context(self, item, config, *, assets, results, suggestions, values):
        vps = final_of(results, PREMISES).get("visual_premises") or []
        suggested: dict[int, dict] = {}
        models = []
        # OCR boxes first (they are exact for quoted text), then image-text region matches.
        for kind in (BOX_KIND, REGION_KIND):
            hint = suggestions.get(kind)
            before = len(suggested)
            for box in (hint.payload.get("boxes") if hint else None) or []:
                try:
                    vp = int(box["vp"])
                    if vp not in suggested:
                        suggested[vp] = Box.model_validate({k: box[k] for k in ("startX", "startY", "w", "h")}).model_dump()
                except (KeyError, TypeError, ValueError):
                    continue
            if hint and len(suggested) > before:
                models.append(f"{hint.model} {hint.model_version}".strip())
        return {
            "image": image_urls(item.get("image"), assets.get("/image")),
            "premises": [
                {
                    "index": i,
                    "number": i + 1,
                    "text": text,
                    "box": {f: values.get(f"{f}_{i}", "") for f in ("x", "y", "w", "h")},
                    "suggested": suggested.get(i),
                }
                for i, text in enumerate(vps)
            ],
            "suggestion_model": ", ".join(models) or None,
        }

    def initial_values(self, item, config, *, results, suggestions):
        # Boxes drafted with the record (a published annotation being re-checked) start in place.
        vps = final_of(results, PREMISES).get("visual_premises") or []
        drafts = item.get("candidate_boxes") or []
        values = {}
        if len(drafts) == len(vps) and final_of(results, PREMISES).get("visual_premises") == item.get("candidate_premises"):
            values = box_values(drafts)
        return values



def box_values(boxes: list[dict[str, Any]]) -> dict[str, Any]:
    """Form values x_<i>, y_<i>, w_<i>, h_<i> of boxes in the published form."""
    values: dict[str, Any] = {}
    for i, b in enumerate(boxes):
        values.update({f"x_{i}": b["startX"], f"y_{i}": b["startY"], f"w_{i}": b["w"], f"h_{i}": b["h"]})
    return values


# -- equivalence (for agreement on conclusions) -------------------------------------------------


class EquivalenceItem(ItemBase):
    conclusion_a: str = Field(min_length=1)
    conclusion_b: str = Field(min_length=1)
    image: str | None = None


class EquivalenceAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    equivalent: bool


@register
class VisArgsEquivalence(Workflow):
    name = EQUIVALENCE
    title = "VisArgs: do two conclusions say the same?"
    description = "Judge whether two annotators' conclusions are equivalent (for agreement studies)."
    item_schema = EquivalenceItem
    annotation_schema = EquivalenceAnnotation
    template = "workflows/visargs_equivalence.html"
    keys_help = "Y equivalent · N not equivalent · Enter submits · S skips"

    def agreement_facets(self):
        return {"equivalent": "nominal"}

    def facet_values(self, payload):
        return {"equivalent": payload.get("equivalent")}

    def form_to_payload(self, form):
        value = str(form.get("equivalent", "")).lower()
        return {"equivalent": value in ("yes", "true", "on", "1")} if value else {}

    def payload_values(self, payload, item, config, results):
        return {"equivalent": "yes" if payload["equivalent"] else "no"} if "equivalent" in payload else {}

    def screen_context(self, item, config, *, assets, results, suggestions, values):
        return {"image": image_urls(item.get("image"), assets.get("/image")) if item.get("image") else None}
