"""visargs.grounding: one tight box per visual premise, in pixels of the stored image; OCR and
image-text region matches are suggested."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.datasets.workflow import Workflow, image_urls
from app.datasets.visargs.schema import (
    BOX_KIND,
    DRAFTED_BOX_KIND,
    GROUNDING,
    MAX_PREMISES,
    PREMISES,
    REGION_KIND,
    Box,
    BoxesSuggestion,
    premises_of,
    row_indices,
)
from app.errors import Invalid


class GroundingAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    b_box: list[Box] = Field(max_length=MAX_PREMISES)


def _int(value: Any) -> int | None:
    try:
        return int(round(float(str(value).strip())))
    except (TypeError, ValueError, OverflowError):  # not a number, NaN, or beyond a float (inf, 1e400)
        return None


class VisArgsGrounding(Workflow):
    name = GROUNDING
    title = "VisArgs: one box per visual premise"
    description = "Draw one tight box around what each visual premise describes."
    annotation_schema = GroundingAnnotation
    template = "datasets/visargs/grounding.html"
    view_template = "datasets/visargs/grounding_view.html"
    requires = PREMISES
    suggestion_kinds = (BOX_KIND, DRAFTED_BOX_KIND, REGION_KIND)
    suggestion_schemas = dict.fromkeys(suggestion_kinds, BoxesSuggestion)
    facets = {"boxes": "boxes"}
    keys_help = (
        "the image has the focus and the first premise without a box is current · 1–9 pick a premise · "
        "A takes the current premise's suggested box and goes to the next premise without one, Shift+A takes every "
        "suggested box · B puts a box in the middle of a premise without one (half the image's width and height) · arrows move the box "
        "(Alt: 10 px), Shift+arrows size it · drag on the image to draw, drag the box to move it, its corner to resize · "
        "+ / − zoom · Enter submits · S skips"
    )

    def form_to_payload(self, form):
        boxes = []
        for i in row_indices(form, "x_"):
            boxes.append({k: _int(form.get(f"{f}_{i}")) for k, f in (("startX", "x"), ("startY", "y"), ("w", "w"), ("h", "h"))})
        return {"b_box": boxes}

    def payload_values(self, ctx, payload):
        return box_values(payload.get("b_box") or [])

    def validate_annotation(self, ctx, payload):
        boxes = payload.get("b_box")
        if isinstance(boxes, list):
            missing = [n for n, b in enumerate(boxes, 1) if not isinstance(b, dict) or None in b.values()]
            if missing:
                raise Invalid(
                    "The annotation is not complete.",
                    [f"Visual premise {n} has no box yet: pick it ({n}) and press B, or drag on the image." for n in missing],
                )
        return super().validate_annotation(ctx, payload)

    def check(self, ctx, payload):
        vps = premises_of(ctx.results)
        if len(payload.b_box) != len(vps):
            return [f"Give exactly one box per visual premise: {len(vps)} premises, {len(payload.b_box)} boxes."]
        return []

    def suggestion_outcome(self, ctx, kind, suggestion, payload):
        """Suggested boxes: all taken as they were is accepted; some kept or adjusted (IoU >= 0.5) is edited."""
        from app.agreement.boxes import iou  # with numpy, which registering the dataset need not load (app.datasets.workflow)

        verdicts = []
        for given, proposed in _pairs(self.suggestion_kinds, kind, suggestion, payload):
            verdicts.append("accepted" if given == proposed else "edited" if iou(given, proposed) >= 0.5 else "rejected")
        if not verdicts:
            return None
        if all(v == "accepted" for v in verdicts):
            return "accepted"
        return "rejected" if all(v == "rejected" for v in verdicts) else "edited"

    def suggestion_distance(self, ctx, kind, suggestion, payload):
        """Suggested boxes: 1 - the mean IoU of each suggested box with the answer's box for its premise."""
        from app.agreement.boxes import iou

        ious = [iou(given, proposed) for given, proposed in _pairs(self.suggestion_kinds, kind, suggestion, payload)]
        return 1 - sum(ious) / len(ious) if ious else None

    def facet_values(self, payload):
        return {"boxes": payload.get("b_box")}

    def screen_context(self, ctx, values):
        vps = premises_of(ctx.results)
        suggested: dict[int, dict] = {}
        models = []
        # OCR boxes first (they are exact for quoted text), then a vision-language model's, then image-text region matches.
        for kind in self.suggestion_kinds:
            hint = ctx.suggestions.get(kind)
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
        premises = []
        for i, text in enumerate(vps):
            box = {f: values.get(f"{f}_{i}", "") for f in ("x", "y", "w", "h")}
            has_box = all(str(v).strip() for v in box.values())
            premises.append({"index": i, "number": i + 1, "text": text, "box": box, "has_box": has_box, "suggested": suggested.get(i)})
        # Work starts on the first premise still without a box.
        current = next((p["index"] for p in premises if not p["has_box"]), 0)
        return {
            "image": image_urls(ctx.item.get("image"), ctx.assets.get("/image")),
            "premises": premises,
            "current": current,
            "suggestion_model": ", ".join(models) or None,
        }

    def initial_values(self, ctx):
        # Boxes drafted with the record (a published annotation being re-checked) start in place.
        vps = premises_of(ctx.results)
        drafts = ctx.item.get("candidate_boxes") or []
        values = {}
        if len(drafts) == len(vps) and premises_of(ctx.results) == ctx.item.get("candidate_premises"):
            values = box_values(drafts)
        return values

    def view_item(self, ctx):
        return {"image": image_urls(ctx.item.get("image"), ctx.assets.get("/image")), "vps": premises_of(ctx.results)}

    def view_answer(self, ctx, payload, kind=None):
        """The boxes on the stored image (its size known), numbered by premise; a suggestion's too."""
        vps = premises_of(ctx.results)
        if kind is None:
            given = [(i, b) for i, b in enumerate(payload.get("b_box") or [])]
            note = None
        else:
            given = [(b.get("vp"), b) for b in payload.get("boxes") or [] if isinstance(b.get("vp"), int)]
            note = "Suggested boxes"
        boxes = [
            {"number": i + 1, "premise": vps[i] if 0 <= i < len(vps) else None,
             "x": b.get("startX"), "y": b.get("startY"), "w": b.get("w"), "h": b.get("h")}
            for i, b in given
            if isinstance(b, dict) and all(isinstance(b.get(k), int) for k in ("startX", "startY", "w", "h"))
        ]
        return {"image": image_urls(ctx.item.get("image"), ctx.assets.get("/image")), "size": ctx.sizes.get("/image"), "boxes": boxes, "note": note}


def _pairs(kinds, kind, suggestion, payload) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(the answer's box, the suggested box) for each premise a suggestion of one of `kinds` boxed."""
    if kind not in kinds:
        return []
    final = payload.get("b_box") or []
    return [(final[b["vp"]], {k: b[k] for k in ("startX", "startY", "w", "h")})
            for b in suggestion.get("boxes") or [] if isinstance(b.get("vp"), int) and 0 <= b["vp"] < len(final)]


def box_values(boxes: list[dict[str, Any]]) -> dict[str, Any]:
    """Form values x_<i>, y_<i>, w_<i>, h_<i> of boxes in the published form."""
    values: dict[str, Any] = {}
    for i, b in enumerate(boxes):
        values.update({f"x_{i}": b["startX"], f"y_{i}": b["startY"], f"w_{i}": b["w"], f"h_{i}": b["h"]})
    return values
