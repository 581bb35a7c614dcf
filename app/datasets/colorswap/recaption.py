"""colorswap.recaption: see the two chosen images; rewrite both captions naturally while they stay a
swap pair (checked live by `swapcheck`). Rule-based pairs need it; the stage's configuration
names which caption sources are routed here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.datasets.colorswap.schema import FILTER, PAIR_KIND, RECAPTION, PairSuggestion, VocabularyConfig, candidate_pointer
from app.datasets.colorswap.swapcheck import Vocabulary, caption_runs, check_swap
from app.datasets.wikido.tokenedits import levenshtein, words
from app.datasets.workflow import Consolidation, Workflow, consolidate_fields, image_urls

DEFAULT_RECAPTION_SOURCES = ("rule-based",)


def one_line(value: str) -> str:
    return " ".join(value.split())


class RecaptionConfig(VocabularyConfig):
    sources: list[str] = Field(default=list(DEFAULT_RECAPTION_SOURCES), description="caption sources routed to this stage")
    required_sources: list[str] = Field(
        default=list(DEFAULT_RECAPTION_SOURCES), description="caption sources whose captions must be rewritten"
    )
    missing_source: str = Field(default="unknown", description="the source of a record that names none")


class RecaptionAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    caption_1: str = Field(min_length=1, max_length=1000)
    caption_2: str = Field(min_length=1, max_length=1000)

    @field_validator("caption_1", "caption_2", mode="before")
    @classmethod
    def _collapse_space(cls, value: Any) -> Any:
        return one_line(value) if isinstance(value, str) else value


def caption_source(item: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """The item's caption source; a record without one counts as the stage's `missing_source`."""
    return item.get("caption_source") or config.get("missing_source", "unknown")


def _recaption_required(item: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    return caption_source(item, config) in config.get("required_sources", DEFAULT_RECAPTION_SOURCES)


def _unchanged(item: Mapping[str, Any], caption_1: str, caption_2: str) -> list[int]:
    return [
        n
        for n, text in ((1, caption_1), (2, caption_2))
        if one_line(text).lower() == one_line(item.get(f"caption_{n}", "")).lower()
    ]


class ColorSwapRecaption(Workflow):
    name = RECAPTION
    title = "ColorSwap: rewrite a caption pair"
    description = "See the two chosen images; rewrite both captions naturally, keeping them a colour-swap pair."
    annotation_schema = RecaptionAnnotation
    config_schema = RecaptionConfig
    template = "datasets/colorswap/recaption.html"
    view_template = "datasets/colorswap/recaption_view.html"
    requires = FILTER
    facets = {"caption 1": "nominal", "caption 2": "nominal"}
    suggestion_kinds = (PAIR_KIND,)
    suggestion_schemas = {PAIR_KIND: PairSuggestion}
    has_live_check = True
    keys_help = (
        "the caption 1 field has the focus, the caret at its end · Tab goes to caption 2 · Enter submits (a caption "
        "that must be rewritten and is unchanged is named at once) · Reset restores a caption · "
        "a click on an image shows it full size · S skips (outside the text fields)"
    )

    def applies(self, ctx):
        return caption_source(ctx.item, ctx.config) in ctx.config.get("sources", DEFAULT_RECAPTION_SOURCES)

    def check(self, ctx, payload):
        result = check_swap(payload.caption_1, payload.caption_2, Vocabulary.from_config(ctx.config))
        problems = list(result.problems)
        if _recaption_required(ctx.item, ctx.config):
            for n in _unchanged(ctx.item, payload.caption_1, payload.caption_2):
                problems.append(
                    f"Caption {n} is unchanged: captions from the source “{caption_source(ctx.item, ctx.config)}” must be "
                    "rewritten into natural, more specific ones."
                )
        return problems

    def facet_values(self, payload):
        return {f"caption {n}": one_line(payload.get(f"caption_{n}", "")).lower() for n in (1, 2)}

    def consolidate(self, ctx, payloads):
        if not payloads:
            return Consolidation(final=None, needs_review=True)
        final = consolidate_fields(payloads, ("caption_1", "caption_2"), key=lambda v: one_line(v or "").lower())
        if final is None or not check_swap(final["caption_1"], final["caption_2"], Vocabulary.from_config(ctx.config)).ok:
            # No majority, or majorities from different people that are not a pair together.
            return Consolidation(final=None, needs_review=True)
        return Consolidation(final=final)

    def screen_context(self, ctx, values):
        chosen = ctx.results.get(FILTER) or {}
        images = []
        for n in (1, 2):
            index = chosen.get(f"choice_{n}")
            images.append(
                {
                    "caption": n,
                    "src": image_urls(ctx.item["candidates"][index]["image"], ctx.assets.get(candidate_pointer(index))) if index is not None else None,
                    "number": index + 1 if index is not None else None,
                    "original": ctx.item[f"caption_{n}"],
                }
            )
        drafted = ctx.suggestions.get(PAIR_KIND)
        return {
            "images": images,
            "required": _recaption_required(ctx.item, ctx.config),
            "drafted_by": f"{drafted.model} {drafted.model_version}".strip() if drafted else None,
        }

    def initial_values(self, ctx):
        """The captions as they came, or the pair a model drafted (Enter stores it)."""
        drafted = ctx.suggestions.get(PAIR_KIND)
        source = drafted.payload if drafted and all(drafted.payload.get(f"caption_{n}") for n in (1, 2)) else ctx.item
        return {"caption_1": source["caption_1"], "caption_2": source["caption_2"]}

    def suggestion_outcome(self, ctx, kind, suggestion, payload):
        """A drafted pair: accepted when both captions were stored as drafted (case and spacing aside),
        edited when one was, rejected when neither was."""
        if kind != PAIR_KIND:
            return None
        same = [one_line(payload.get(k) or "").lower() == one_line(suggestion.get(k) or "").lower() for k in ("caption_1", "caption_2")]
        return "accepted" if all(same) else "edited" if any(same) else "rejected"

    def suggestion_distance(self, ctx, kind, suggestion, payload):
        """A drafted pair: the token edits (case aside) from the drafted captions to the stored ones, both captions summed."""
        if kind != PAIR_KIND:
            return None
        return float(sum(levenshtein(words(str(suggestion.get(k) or "").lower()), words(str(payload.get(k) or "").lower()))
                         for k in ("caption_1", "caption_2")))

    def view_item(self, ctx):
        vocab = Vocabulary.from_config(ctx.config)
        shown = self.screen_context(ctx, {})
        return {"images": [{**im, "runs": caption_runs(im["original"], vocab)} for im in shown["images"]]}

    def view_answer(self, ctx, payload, kind=None):
        vocab = Vocabulary.from_config(ctx.config)
        texts = [str(payload.get(f"caption_{n}") or "") for n in (1, 2)]
        unchanged = _unchanged(ctx.item, *texts)
        return {"captions": [{"runs": caption_runs(t, vocab), "unchanged": n in unchanged} for n, t in enumerate(texts, 1)]}

    def live_check(self, ctx, values):
        vocab = Vocabulary.from_config(ctx.config)
        caption_1, caption_2 = str(values.get("caption_1") or ""), str(values.get("caption_2") or "")
        result = check_swap(caption_1, caption_2, vocab)
        unchanged = _unchanged(ctx.item, caption_1, caption_2) if _recaption_required(ctx.item, ctx.config) else []
        return {
            "check": result,
            "runs": [caption_runs(caption_1, vocab), caption_runs(caption_2, vocab)],
            "unchanged": unchanged,
        }
