"""visargs.premises: keep, edit, split, add and order the visual premises a model drafted, or
discard the image."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.datasets.workflow import Consolidation, StageConfig, Workflow, image_urls
from app.datasets.visargs.schema import (
    MAX_PREMISES,
    PREMISES,
    PREMISES_KIND,
    SPARE_ROWS,
    PremisesSuggestion,
    clean,
    row_indices,
    truthy,
)


class PremisesConfig(StageConfig):
    accept_candidates: bool = Field(default=True, description="machine-drafted premises start ticked \"keep\" (false: unticked)")


class PremisesAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Kept as given (a released record's premises come back as they were); checks compare
    # them with case and spacing folded.
    visual_premises: list[str] = Field(max_length=MAX_PREMISES)
    discard: bool = False


def premise_rows(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The premise rows of a form (text_<i>, keep_<i>, pos_<i>) in their shown order."""
    rows = []
    for i in row_indices(values, "text_"):
        try:
            pos = float(values.get(f"pos_{i}", i))
        except (TypeError, ValueError):
            pos = float(i)
        rows.append({"index": i, "text": str(values.get(f"text_{i}") or ""), "keep": truthy(values.get(f"keep_{i}")), "pos": pos})
    rows.sort(key=lambda r: (r["pos"], r["index"]))
    return rows


class VisArgsPremises(Workflow):
    name = PREMISES
    title = "VisArgs: choose and fix the visual premises"
    description = "Keep, edit, split, add and order the visual premises a model drafted; discard unusable images."
    annotation_schema = PremisesAnnotation
    config_schema = PremisesConfig
    template = "datasets/visargs/premises.html"
    view_template = "datasets/visargs/premises_view.html"
    facets = {"discard": "nominal", "visual premises": "set"}
    # Premises a vision-language model drafted (app.datasets.visargs.drafts) replace the record's candidates.
    suggestion_kinds = (PREMISES_KIND,)
    suggestion_schemas = {PREMISES_KIND: PremisesSuggestion}
    keys_help = (
        "the first premise has the focus and drafts start kept · ↑/↓ or Tab go to the next premise's text · "
        "Alt+K keeps or drops a premise · Ctrl+Enter splits at the caret · Alt+↑/↓ moves a premise · "
        "Escape leaves the text: then N adds a premise, D discards the image, Z shows the image full size, S skips · "
        "Enter submits"
    )

    def form_to_payload(self, form):
        kept = [clean(r["text"]) for r in premise_rows(form) if r["keep"] and clean(r["text"])]
        return {"visual_premises": kept, "discard": truthy(form.get("discard"))}

    def payload_values(self, ctx, payload):
        values: dict[str, Any] = {"discard": "on"} if payload.get("discard") else {}
        for i, text in enumerate(payload.get("visual_premises") or []):
            values.update({f"text_{i}": text, f"pos_{i}": str(i), f"keep_{i}": "on"})
        return values

    def check(self, ctx, payload):
        if payload.discard:
            return []
        problems = []
        if not payload.visual_premises:
            problems.append("Keep or add at least one visual premise, or discard the image.")
        seen: dict[str, int] = {}
        for n, text in enumerate(payload.visual_premises, 1):
            if not clean(text):
                problems.append(f"Visual premise {n} is empty.")
            key = clean(text).lower()
            if key in seen:
                problems.append(f"Visual premises {seen[key]} and {n} are the same.")
            seen.setdefault(key, n)
        return problems

    def is_discard(self, payload):
        return bool(payload.get("discard"))

    def facet_values(self, payload):
        return {"discard": bool(payload.get("discard")), "visual premises": None if payload.get("discard") else payload.get("visual_premises")}

    def consolidate(self, ctx, payloads):
        if not payloads:
            return Consolidation(final=None, needs_review=True)
        keys = [(bool(p.get("discard")), frozenset(clean(t).lower() for t in p.get("visual_premises") or [])) for p in payloads]
        best, count = Counter(keys).most_common(1)[0]
        if count * 2 > len(payloads):
            final = payloads[keys.index(best)]
            return Consolidation(final=final, discard=self.is_discard(final))
        return Consolidation(final=None, needs_review=True)

    def screen_context(self, ctx, values):
        rows = premise_rows(values)
        next_index = max([r["index"] for r in rows], default=-1) + 1
        # Spare rows are for additions: they start dropped, and typing in one keeps it.
        spares = [{"index": i, "text": "", "keep": False, "pos": 1000 + i} for i in range(next_index, next_index + SPARE_ROWS)]
        drafted = ctx.suggestions.get(PREMISES_KIND)
        return {
            "image": image_urls(ctx.item.get("image"), ctx.assets.get("/image")),
            "rows": rows + spares,
            "drafted_by": f"{drafted.model} {drafted.model_version}".strip() if drafted and drafted.payload.get("visual_premises") else None,
        }

    def initial_values(self, ctx):
        # Drafts start kept: most are right, and dropping one is one key (Alt+K) or a click. A model's
        # drafted premises come first; the record's candidates otherwise.
        accept = bool(ctx.config.get("accept_candidates", True))
        values: dict[str, Any] = {}
        drafted = ctx.suggestions.get(PREMISES_KIND)
        texts = (drafted.payload.get("visual_premises") if drafted else None) or ctx.item.get("candidate_premises") or []
        for i, text in enumerate(texts):
            values[f"text_{i}"] = text
            values[f"pos_{i}"] = str(i)
            if accept:
                values[f"keep_{i}"] = "on"
        return values

    def suggestion_outcome(self, ctx, kind, suggestion, payload):
        """Drafted premises: accepted when exactly those were kept (case and spacing aside), edited when
        some were, rejected when none were or the image was discarded."""
        if kind != PREMISES_KIND or not suggestion.get("visual_premises"):
            return None
        drafted = {clean(t).lower() for t in suggestion["visual_premises"]}
        kept = set() if payload.get("discard") else {clean(t).lower() for t in payload.get("visual_premises") or []}
        if kept == drafted:
            return "accepted"
        return "edited" if kept & drafted else "rejected"

    def suggestion_distance(self, ctx, kind, suggestion, payload):
        """Drafted premises: the Jaccard distance between the drafted and the kept set (case and spacing aside)."""
        if kind != PREMISES_KIND or not suggestion.get("visual_premises"):
            return None
        drafted = {clean(t).lower() for t in suggestion["visual_premises"]}
        kept = set() if payload.get("discard") else {clean(t).lower() for t in payload.get("visual_premises") or []}
        return 1 - len(drafted & kept) / len(drafted | kept)

    def view_item(self, ctx):
        return {"image": image_urls(ctx.item.get("image"), ctx.assets.get("/image")), "drafts": list(ctx.item.get("candidate_premises") or [])}

    def view_answer(self, ctx, payload, kind=None):
        return {"discard": bool(payload.get("discard")), "premises": list(payload.get("visual_premises") or [])}
