"""ColorSwap: choose the image that fits each caption of a colour-swap pair, then re-caption the pair.

`colorswap.filter` shows every candidate image of a pair (generated from either caption) and
asks for the best image per caption, or "none fits", which discards the pair.
`colorswap.recaption` shows the two chosen images and asks for natural, specific captions
that are still a swap pair (see `swapcheck`). Rule-based pairs need it; other sources are
routed there when the stage's configuration names them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.errors import Invalid
from app.workflows.base import (
    Consolidation,
    ItemBase,
    Workflow,
    consolidate_fields,
    image_urls,
)
from app.workflows.registry import register
from app.workflows.swapcheck import Vocabulary, check_swap, highlight, swatch

FILTER = "colorswap.filter"
RECAPTION = "colorswap.recaption"
# The suggestion kind the filter screen reads: payload {"scores": [[caption 1, caption 2], ...]},
# one image-text score pair per candidate, in candidate order.
ITM_KIND = "colorswap.itm"
DEFAULT_MARGIN = 0.01
DEFAULT_RECAPTION_SOURCES = ("rule-based",)


class Candidate(BaseModel):
    model_config = ConfigDict(extra="allow", str_strip_whitespace=True)

    image: str = Field(min_length=1)
    from_caption: Literal[1, 2]
    generator: str = ""


class ColorSwapItem(ItemBase):
    caption_1: str = Field(min_length=1)
    caption_2: str = Field(min_length=1)
    caption_source: str = Field(min_length=1)
    image_source: str = Field(min_length=1)
    candidates: list[Candidate] = Field(min_length=2, max_length=64)

    @model_validator(mode="before")
    @classmethod
    def _published_layout(cls, data: Any) -> Any:
        """The published release has image_1 / image_2 instead of candidates: a pair of two."""
        if not isinstance(data, dict) or "candidates" in data:
            return data
        if "image_1" not in data and "image_2" not in data:
            return data
        data = dict(data)
        images = [data.pop("image_1", None), data.pop("image_2", None)]
        if not all(images):
            raise ValueError("the published layout needs both image_1 and image_2")
        source = data.get("image_source") or ""
        data["candidates"] = [{"image": img, "from_caption": n, "generator": source} for n, img in enumerate(images, 1)]
        return data

    @field_validator("candidates")
    @classmethod
    def _distinct_images(cls, value: list[Candidate]) -> list[Candidate]:
        seen: dict[str, int] = {}
        for i, c in enumerate(value):
            if c.image in seen:
                raise ValueError(f"candidate {i + 1} repeats the image of candidate {seen[c.image] + 1} ({c.image})")
            seen[c.image] = i
        return value


def _pointer(index: int) -> str:
    return f"/candidates/{index}/image"


def _caption_runs(caption: str, vocab: Vocabulary) -> list[dict[str, Any]]:
    return [{"text": text, "colour": colour, "swatch": swatch(colour) if colour else None} for text, colour in highlight(caption, vocab)]


# -- filter -------------------------------------------------------------------------


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


class ColorSwapExport:
    """The ColorSwap release: {split}.json records and the chosen images as images/img_{id}_{1|2}.png."""

    published_layout = "json"
    export_image_columns = ("image_1", "image_2")

    def export_record(self, item, results):
        return published_record(item, results)

    def export_files(self, item, assets, results):
        return published_files(item, assets, results)

    def export_images(self, item, assets, results):
        chosen = results.get(FILTER) or {}
        return {f"image_{n}": assets.get(_pointer(chosen[f"choice_{n}"])) if chosen.get(f"choice_{n}") is not None else None for n in (1, 2)}


@register
class ColorSwapFilter(ColorSwapExport, Workflow):
    name = FILTER
    title = "ColorSwap: choose the image for each caption"
    description = "See all candidate images of a caption pair; pick the best image per caption, or discard the pair."
    item_schema = ColorSwapItem
    annotation_schema = FilterAnnotation
    template = "workflows/colorswap_filter.html"
    suggestion_kinds = (ITM_KIND,)
    follow_on = (RECAPTION,)
    breakdown = ("caption_source", "image_source")
    keys_help = (
        "digits choose an image for the focused caption (type two digits for 10 and up) · Tab switches caption · "
        "N none fits · Z undo · a click on an image shows it full size · Enter submits · S skips"
    )

    def image_refs(self, item: ColorSwapItem) -> dict[str, str]:
        return {_pointer(i): c.image for i, c in enumerate(item.candidates)}

    def validate_annotation(self, item, payload, config, results=None):
        missing = [n for n in (1, 2) if f"choice_{n}" not in payload]
        if missing:
            raise Invalid(
                "The annotation is not complete.",
                [f"Choose an image for caption {n}, or mark “none fits” (N)." for n in missing],
            )
        return super().validate_annotation(item, payload, config, results)

    def check(self, item, payload, config, results):
        n = len(item.get("candidates") or [])
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

    def payload_values(self, payload, item, config, results):
        return {k: "none" if payload.get(k) is None else str(payload[k]) for k in ("choice_1", "choice_2") if k in payload}

    def is_discard(self, payload):
        return payload.get("choice_1") is None or payload.get("choice_2") is None

    def compare(self, a, b):
        return sum(a.get(k) == b.get(k) for k in ("choice_1", "choice_2")) / 2

    def agreement_facets(self):
        return {"image for caption 1": "nominal", "image for caption 2": "nominal"}

    def facet_values(self, payload):
        label = lambda v: "none fits" if v is None else f"image {v + 1}"  # noqa: E731
        return {"image for caption 1": label(payload.get("choice_1")), "image for caption 2": label(payload.get("choice_2"))}

    def consolidate(self, payloads, config):
        if not payloads:
            return Consolidation(final=None, needs_review=True)
        final = consolidate_fields(payloads, ("choice_1", "choice_2"))
        if final is None:
            return Consolidation(final=None, needs_review=True)
        if final["choice_1"] is not None and final["choice_1"] == final["choice_2"]:
            # Each caption's majority picked the same image: people must settle it.
            return Consolidation(final=None, needs_review=True)
        return Consolidation(final=final, discard=self.is_discard(final))

    def screen_context(self, item, config, *, assets, results, suggestions, values):
        vocab = Vocabulary.from_config(config)
        itm = suggestions.get(ITM_KIND)
        scores = (itm.payload.get("scores") if itm else None) or []
        if len(scores) != len(item["candidates"]):
            scores, itm = [], None
        pre = preselect(scores, float(config.get("suggestion_margin", DEFAULT_MARGIN))) if scores else None
        candidates = [
            {
                "index": i,
                "number": i + 1,
                "src": image_urls(c["image"], assets.get(_pointer(i))),
                "from_caption": c["from_caption"],
                "generator": c.get("generator") or "",
                "scores": scores[i] if scores else None,
            }
            for i, c in enumerate(item["candidates"])
        ]
        return {
            "captions": [_caption_runs(item["caption_1"], vocab), _caption_runs(item["caption_2"], vocab)],
            "candidates": candidates,
            "suggestion": {"model": itm.model, "version": itm.model_version, "pre": pre} if itm and pre else None,
        }

    def initial_values(self, item, config, *, results, suggestions):
        itm = suggestions.get(ITM_KIND)
        scores = (itm.payload.get("scores") if itm else None) or []
        if len(scores) != len(item["candidates"]):
            return {}
        pre = preselect(scores, float(config.get("suggestion_margin", DEFAULT_MARGIN)))
        return {"choice_1": str(pre.choice_1), "choice_2": str(pre.choice_2)} if pre else {}

    def suggestion_outcome(self, kind, suggestion, payload, item):
        if kind != ITM_KIND:
            return None
        pre = preselect(suggestion.get("scores") or [])
        if pre is None:
            return None
        same = (payload.get("choice_1") == pre.choice_1) + (payload.get("choice_2") == pre.choice_2)
        return ("rejected", "edited", "accepted")[same]



# -- recaption ------------------------------------------------------------------------


def _one_line(value: str) -> str:
    return " ".join(value.split())


class RecaptionAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    caption_1: str = Field(min_length=1, max_length=1000)
    caption_2: str = Field(min_length=1, max_length=1000)

    @field_validator("caption_1", "caption_2", mode="before")
    @classmethod
    def _collapse_space(cls, value: Any) -> Any:
        return _one_line(value) if isinstance(value, str) else value


def _recaption_required(item: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    return item.get("caption_source") in config.get("required_sources", DEFAULT_RECAPTION_SOURCES)


def _unchanged(item: Mapping[str, Any], caption_1: str, caption_2: str) -> list[int]:
    return [
        n
        for n, text in ((1, caption_1), (2, caption_2))
        if _one_line(text).lower() == _one_line(item.get(f"caption_{n}", "")).lower()
    ]


@register
class ColorSwapRecaption(ColorSwapExport, Workflow):
    name = RECAPTION
    title = "ColorSwap: rewrite a caption pair"
    description = "See the two chosen images; rewrite both captions naturally, keeping them a colour-swap pair."
    item_schema = ColorSwapItem
    annotation_schema = RecaptionAnnotation
    template = "workflows/colorswap_recaption.html"
    requires = FILTER
    keys_help = "Enter submits · Reset restores a caption · S skips (outside the text fields)"

    def applies(self, item, results, config):
        return item.get("caption_source") in config.get("sources", DEFAULT_RECAPTION_SOURCES)

    def check(self, item, payload, config, results):
        result = check_swap(payload.caption_1, payload.caption_2, Vocabulary.from_config(config))
        problems = list(result.problems)
        if _recaption_required(item, config):
            for n in _unchanged(item, payload.caption_1, payload.caption_2):
                problems.append(
                    f"Caption {n} is unchanged. {item.get('caption_source')} captions must be rewritten "
                    "into natural, more specific ones."
                )
        return problems

    def compare(self, a, b):
        return sum(_one_line(a.get(k, "")).lower() == _one_line(b.get(k, "")).lower() for k in ("caption_1", "caption_2")) / 2

    def agreement_facets(self):
        return {"caption 1": "nominal", "caption 2": "nominal"}

    def facet_values(self, payload):
        return {f"caption {n}": _one_line(payload.get(f"caption_{n}", "")).lower() for n in (1, 2)}

    def consolidate(self, payloads, config):
        if not payloads:
            return Consolidation(final=None, needs_review=True)
        final = consolidate_fields(payloads, ("caption_1", "caption_2"), key=lambda v: _one_line(v or "").lower())
        if final is None or not check_swap(final["caption_1"], final["caption_2"], Vocabulary.from_config(config)).ok:
            # No majority, or majorities from different people that are not a pair together.
            return Consolidation(final=None, needs_review=True)
        return Consolidation(final=final)

    def screen_context(self, item, config, *, assets, results, suggestions, values):
        chosen = results.get(FILTER) or {}
        images = []
        for n in (1, 2):
            index = chosen.get(f"choice_{n}")
            images.append(
                {
                    "caption": n,
                    "src": image_urls(item["candidates"][index]["image"], assets.get(_pointer(index))) if index is not None else None,
                    "number": index + 1 if index is not None else None,
                    "original": item[f"caption_{n}"],
                }
            )
        return {"images": images, "required": _recaption_required(item, config)}

    def initial_values(self, item, config, *, results, suggestions):
        return {"caption_1": item["caption_1"], "caption_2": item["caption_2"]}

    def live_check(self, item, values, config, results):
        vocab = Vocabulary.from_config(config)
        caption_1, caption_2 = str(values.get("caption_1") or ""), str(values.get("caption_2") or "")
        result = check_swap(caption_1, caption_2, vocab)
        unchanged = _unchanged(item, caption_1, caption_2) if _recaption_required(item, config) else []
        return {
            "check": result,
            "runs": [_caption_runs(caption_1, vocab), _caption_runs(caption_2, vocab)],
            "unchanged": unchanged,
        }



# -- the published record -----------------------------------------------------------------


def _published_id(value: str) -> int | str:
    return int(value) if value.isdigit() else value


def published_record(item: Mapping[str, Any], results: Mapping[str, Any]) -> dict[str, Any]:
    """The ColorSwap release's record: re-captioned captions where there are any, and the
    chosen images as images/img_{id}_{1|2}.png."""
    captions = results.get(RECAPTION) or item
    ident = item["id"]
    return {
        "id": _published_id(ident),
        "caption_1": captions["caption_1"],
        "caption_2": captions["caption_2"],
        "image_1": f"images/img_{ident}_1.png",
        "image_2": f"images/img_{ident}_2.png",
        "image_source": item["image_source"],
        "caption_source": item["caption_source"],
    }


def published_files(item: Mapping[str, Any], assets: Mapping[str, str], results: Mapping[str, Any]) -> dict[str, str]:
    """Release path -> sha256 of the image chosen for each caption (written as PNG by the exporter)."""
    chosen = results.get(FILTER) or {}
    files = {}
    for n in (1, 2):
        index = chosen.get(f"choice_{n}")
        if index is not None and _pointer(index) in assets:
            files[f"images/img_{item['id']}_{n}.png"] = assets[_pointer(index)]
    return files
