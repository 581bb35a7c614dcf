"""colorswap.filter: see every candidate image of a pair; pick the best image per caption, or
"none fits", which discards the pair. An image-text model's scores preselect a pair of images."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.datasets.colorswap.schema import FILTER, ITM_KIND, ItmSuggestion, VocabularyConfig, candidate_pointer
from app.datasets.colorswap.swapcheck import Vocabulary, caption_runs
from app.datasets.workflow import Consolidation, Workflow, consolidate_fields, image_urls
from app.errors import Invalid

DEFAULT_MARGIN = 0.01


class FilterConfig(VocabularyConfig):
    suggestion_margin: float = Field(default=DEFAULT_MARGIN, ge=0, description="how far the model's best image must lead to be preselected")


class FilterAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    choice_1: int | None
    choice_2: int | None


@dataclass
class Preselection:
    """The model's best image per caption (distinct), and reasons to look twice."""

    choice_1: int
    choice_2: int
    flags: list[str] = field(default_factory=list)


def preselect(scores: list[list[float]], margin: float = DEFAULT_MARGIN) -> Preselection | None:
    """From per-candidate (caption 1, caption 2) scores, the best pair of distinct images.

    Flags a pair where both captions prefer the same image, or where the runner-up for a
    caption is within `margin` of the best.
    """
    if len(scores) < 2 or any(len(s) != 2 for s in scores):
        return None
    n = len(scores)
    best = max(
        ((i, j) for i in range(n) for j in range(n) if i != j),
        key=lambda ij: (scores[ij[0]][0] + scores[ij[1]][1], -ij[0], -ij[1]),
    )
    flags = []
    top = [max(range(n), key=lambda k, c=c: scores[k][c]) for c in (0, 1)]
    if top[0] == top[1]:
        flags.append(f"both captions score image {top[0] + 1} highest")
    for c in (0, 1):
        ranked = sorted((s[c] for s in scores), reverse=True)
        if ranked[0] - ranked[1] < margin:
            flags.append(f"caption {c + 1}: the two best images score within {margin:g}")
    return Preselection(best[0], best[1], flags)


def _form_choice(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("none", "null", ""):
            return None
        if re.fullmatch(r"\d+", text):
            return int(text)
    return value


def _label(value: int | None) -> str:
    return "none fits" if value is None else f"image {value + 1}"


class ColorSwapFilter(Workflow):
    name = FILTER
    title = "ColorSwap: choose the image for each caption"
    description = "See all candidate images of a caption pair; pick the best image per caption, or discard the pair."
    annotation_schema = FilterAnnotation
    config_schema = FilterConfig
    template = "datasets/colorswap/filter.html"
    view_template = "datasets/colorswap/filter_view.html"
    suggestion_kinds = (ITM_KIND,)
    suggestion_schemas = {ITM_KIND: ItmSuggestion}
    facets = {"image for caption 1": "nominal", "image for caption 2": "nominal"}
    keys_help = (
        "digits: an image for the “choosing” caption (1, then 2; two digits for 10+) · C: the other caption · "
        "N: none fits · Z: undo · arrows + F: an image full size · Enter submits · S skips"
    )

    def validate_annotation(self, ctx, payload):
        missing = [n for n in (1, 2) if f"choice_{n}" not in payload]
        if missing:
            raise Invalid(
                "The annotation is not complete.",
                [f"Choose an image for caption {n}, or mark “none fits” (N)." for n in missing],
            )
        return super().validate_annotation(ctx, payload)

    def check(self, ctx, payload):
        n = len(ctx.item.get("candidates") or [])
        problems = []
        for k in (1, 2):
            choice = getattr(payload, f"choice_{k}")
            if choice is not None and not 0 <= choice < n:
                problems.append(f"Caption {k}: there is no image {choice + 1}; this pair has {n} images.")
        if payload.choice_1 is not None and payload.choice_1 == payload.choice_2:
            problems.append(
                f"Image {payload.choice_1 + 1} cannot fit both captions: their colours are swapped. "
                "Choose another image for one caption, or mark “none fits”."
            )
        return problems

    def form_to_payload(self, form):
        return {k: _form_choice(v) for k, v in form.items() if k in ("choice_1", "choice_2")}

    def payload_values(self, ctx, payload):
        return {k: "none" if payload.get(k) is None else str(payload[k]) for k in ("choice_1", "choice_2") if k in payload}

    def is_discard(self, payload):
        return payload.get("choice_1") is None or payload.get("choice_2") is None

    def facet_values(self, payload):
        return {"image for caption 1": _label(payload.get("choice_1")), "image for caption 2": _label(payload.get("choice_2"))}

    def consolidate(self, ctx, payloads):
        if not payloads:
            return Consolidation(final=None, needs_review=True)
        final = consolidate_fields(payloads, ("choice_1", "choice_2"))
        if final is None:
            return Consolidation(final=None, needs_review=True)
        if final["choice_1"] is not None and final["choice_1"] == final["choice_2"]:
            # Each caption's majority picked the same image: people must settle it.
            return Consolidation(final=None, needs_review=True)
        return Consolidation(final=final, discard=self.is_discard(final))

    def screen_context(self, ctx, values):
        vocab = Vocabulary.from_config(ctx.config)
        itm = ctx.suggestions.get(ITM_KIND)
        scores = (itm.payload.get("scores") if itm else None) or []
        if len(scores) != len(ctx.item["candidates"]):
            scores, itm = [], None
        pre = preselect(scores, float(ctx.config.get("suggestion_margin", DEFAULT_MARGIN))) if scores else None
        candidates = [
            {
                "index": i,
                "number": i + 1,
                "src": image_urls(c["image"], ctx.assets.get(candidate_pointer(i))),
                "from_caption": c["from_caption"],
                "generator": c.get("generator") or "",
                "scores": scores[i] if scores else None,
            }
            for i, c in enumerate(ctx.item["candidates"])
        ]
        return {
            "captions": [caption_runs(ctx.item["caption_1"], vocab), caption_runs(ctx.item["caption_2"], vocab)],
            "candidates": candidates,
            "suggestion": {"model": itm.model, "version": itm.model_version, "pre": pre} if itm and pre else None,
        }

    def view_item(self, ctx):
        vocab = Vocabulary.from_config(ctx.config)
        return {
            "captions": [caption_runs(ctx.item["caption_1"], vocab), caption_runs(ctx.item["caption_2"], vocab)],
            "candidates": [
                {"number": i + 1, "src": image_urls(c["image"], ctx.assets.get(candidate_pointer(i))), "from_caption": c["from_caption"]}
                for i, c in enumerate(ctx.item["candidates"])
            ],
        }

    def view_answer(self, ctx, payload, kind=None):
        """The image under each caption: an annotator's choice, or the model's preselection."""
        note = None
        if kind == ITM_KIND:
            pre = preselect(payload.get("scores") or [], float(ctx.config.get("suggestion_margin", DEFAULT_MARGIN)))
            if pre is None:
                return {"picks": [], "note": "No preselection: the scores do not fit the candidates."}
            payload = {"choice_1": pre.choice_1, "choice_2": pre.choice_2}
            note = "The model's preselection" + (f" ({'; '.join(pre.flags)})" if pre.flags else "")
        vocab = Vocabulary.from_config(ctx.config)
        candidates = ctx.item["candidates"]
        picks = []
        for n in (1, 2):
            index = payload.get(f"choice_{n}")
            valid = isinstance(index, int) and 0 <= index < len(candidates)
            picks.append({
                "caption": n,
                "runs": caption_runs(ctx.item[f"caption_{n}"], vocab),
                "number": index + 1 if valid else None,
                "src": image_urls(candidates[index]["image"], ctx.assets.get(candidate_pointer(index))) if valid else None,
            })
        return {"picks": picks, "note": note}

    def initial_values(self, ctx):
        itm = ctx.suggestions.get(ITM_KIND)
        scores = (itm.payload.get("scores") if itm else None) or []
        if len(scores) != len(ctx.item["candidates"]):
            return {}
        pre = preselect(scores, float(ctx.config.get("suggestion_margin", DEFAULT_MARGIN)))
        return {"choice_1": str(pre.choice_1), "choice_2": str(pre.choice_2)} if pre else {}

    def suggestion_outcome(self, ctx, kind, suggestion, payload):
        if kind != ITM_KIND:
            return None
        pre = preselect(suggestion.get("scores") or [])
        if pre is None:
            return None
        same = (payload.get("choice_1") == pre.choice_1) + (payload.get("choice_2") == pre.choice_2)
        return ("rejected", "edited", "accepted")[same]

    def suggestion_distance(self, ctx, kind, suggestion, payload):
        """The preselection: the share of the two captions whose image the answer chose otherwise (0, 0.5 or 1)."""
        pre = preselect(suggestion.get("scores") or []) if kind == ITM_KIND else None
        if pre is None:
            return None
        return ((payload.get("choice_1") != pre.choice_1) + (payload.get("choice_2") != pre.choice_2)) / 2

