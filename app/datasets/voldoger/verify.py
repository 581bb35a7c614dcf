"""voldoger.verify: a person checks an LLM's checks of one stylised row.

Three decisions, each by one key: does the stylised image keep the photo's content (K keep /
D discard: the item leaves the release); which label holds on the stylised image (L the LLM's,
O the original, or a digit for a given label; VQA yes / no, VE entailment / neutral /
contradiction; captioning has none); does the paraphrase (question, hypothesis or caption) keep
the meaning (P keep / E edit it in place). An optional note (comment) goes to the check log.

Stage config `route`: `all` (default) or `flipped`, only the items whose label the LLM changed
(`applies`; on a project's first stage the import routes, so the others are done at once).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.datasets.workflow import Consolidation, StageConfig, Workflow, consolidate_fields, image_urls
from app.datasets.voldoger.release import (
    LABEL_FIELD,
    LABELS,
    STYLE_NAMES,
    TASK_NAMES,
    TEXT_FIELD,
    flipped,
    label_text,
    labels,
)

VERIFY = "voldoger.verify"
# A vision-language model's check of the row (app.datasets.voldoger.drafts): payload {"image": "keep" |
# "discard", "label": a payload label or None, "paraphrase": text, "reason": the model's reason}.
CHECK_KIND = "voldoger.check"
ROUTES = ("all", "flipped")
_FIELDS = ("image", "label", "paraphrase", "text", "note")


class VerifyConfig(StageConfig):
    route: Literal["all", "flipped"] = Field(default="all", description="all items, or only those whose label the LLM changed")


class CheckSuggestion(BaseModel):
    """CHECK_KIND's payload as the screen reads it (`check_values`): the three decisions and the model's reason,
    which goes to the comment. Extra keys are kept and ignored."""

    image: Literal["keep", "discard"]
    label: str | None = Field(default=None, max_length=40)
    paraphrase: str = Field(max_length=5000)
    reason: str = Field(default="", max_length=5000)


class VerifyAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    image: Literal["keep", "discard"]
    label: str | None = Field(default=None, max_length=40)
    paraphrase: Literal["keep", "edit"] | None = None
    text: str | None = Field(default=None, max_length=5000)
    note: str = Field(default="", max_length=5000)

    @field_validator("label", mode="before")
    @classmethod
    def _label(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return str(value).strip().lower()

    @field_validator("note", mode="before")
    @classmethod
    def _note(cls, value: Any) -> Any:
        return "" if value is None else value


def _words(text: str | None) -> tuple[str, ...]:
    return tuple((text or "").split())


def llm_text(item: dict[str, Any]) -> str:
    return str((item.get("stylised") or {}).get(TEXT_FIELD.get(item.get("task"), ""), "") or "")


def check_values(check: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """A model's check as the screen's form values: its image and label decisions, its paraphrase kept
    when it has the LLM's words (else edited to it), and its reason as the comment (for the check log)."""
    paraphrase = str(check.get("paraphrase") or "")
    values = {
        "image": check.get("image"),
        "paraphrase": "keep" if _words(paraphrase) == _words(llm_text(item)) else "edit",
        "text": paraphrase,
        "note": str(check.get("reason") or ""),
    }
    if check.get("label") is not None:
        values["label"] = check["label"]
    return values


class VoldogerVerify(Workflow):
    name = VERIFY
    title = "VOLDOGER: check a stylised image, its label and its paraphrase"
    description = "Keep or discard the stylised image; LLM's / original / another label; keep or edit the paraphrase."
    annotation_schema = VerifyAnnotation
    config_schema = VerifyConfig
    template = "datasets/voldoger/verify.html"
    view_template = "datasets/voldoger/verify_view.html"
    facets = {"image kept": "nominal", "label": "nominal", "paraphrase kept": "nominal"}
    suggestion_kinds = (CHECK_KIND,)
    suggestion_schemas = {CHECK_KIND: CheckSuggestion}
    keys_help = (
        "K keeps the stylised image · D discards it · L the LLM's label · O the original label · digits a given label · "
        "P the paraphrase keeps the meaning · E edits it · + / − zoom, 0 resets · Esc leaves a text field · "
        "Enter submits (outside text fields) · S skips"
    )

    # -- annotations ---------------------------------------------------------------
    def validate_annotation(self, ctx, payload):
        clean = super().validate_annotation(ctx, payload)
        if clean["image"] == "discard":
            clean.update(label=None, paraphrase=None, text=None)
        else:
            if ctx.item.get("task") not in LABEL_FIELD:
                clean["label"] = None
            if ctx.item.get("task") == "ve" and clean["label"] is not None:
                clean["label"] = label_text("ve", clean["label"])
            if clean["paraphrase"] != "edit":
                clean["text"] = None
        return clean

    def check(self, ctx, payload):
        if payload.image == "discard":
            return []
        problems = []
        task = ctx.item.get("task")
        allowed = [v for v, _ in LABELS.get(task, ())]
        if allowed:
            label = label_text(task, payload.label) if payload.label is not None else None
            if label is None:
                problems.append("Choose the label that holds on the stylised image (L, O or a digit).")
            elif label not in allowed:
                problems.append(f"The label must be one of: {', '.join(allowed)}.")
        if payload.paraphrase is None:
            problems.append("Say whether the paraphrase keeps the meaning (P), or edit it (E).")
        elif payload.paraphrase == "edit":
            if not (payload.text or "").strip():
                problems.append("An edited paraphrase needs its text.")
            elif _words(payload.text) == _words(llm_text(ctx.item)):
                problems.append("The edited paraphrase is the same as the LLM's: choose P if it keeps the meaning.")
        return problems

    def form_to_payload(self, form):
        payload = {k: v for k, v in form.items() if k in _FIELDS}
        for key in ("image", "paraphrase"):
            if isinstance(payload.get(key), str):
                payload[key] = payload[key].strip().lower() or None
        if payload.get("paraphrase") != "edit":
            payload.pop("text", None)
        return payload

    def payload_values(self, ctx, payload):
        return {k: v for k, v in payload.items() if k in _FIELDS and v is not None}

    def is_discard(self, payload):
        return payload.get("image") == "discard"

    # -- agreement and consolidation ----------------------------------------------------
    def facet_values(self, payload):
        keep = payload.get("image") == "keep"
        return {
            "image kept": payload.get("image"),
            "label": payload.get("label") if keep else None,
            "paraphrase kept": payload.get("paraphrase") if keep else None,
        }

    def consolidate(self, ctx, payloads):
        """Majority per field: the image, then (of those keeping it) the label, the paraphrase
        decision and the edited text (by words); a tie anywhere goes to review. Comments are joined."""
        if not payloads:
            return Consolidation(final=None, needs_review=True)
        if len(payloads) == 1:
            return Consolidation(final=payloads[0], discard=self.is_discard(payloads[0]))
        image = consolidate_fields(payloads, ("image",))
        if image is None:
            return Consolidation(final=None, needs_review=True)
        agreeing = [p for p in payloads if p.get("image") == image["image"]]
        note = "\n".join(dict.fromkeys(p["note"] for p in agreeing if p.get("note")))
        if image["image"] == "discard":
            return Consolidation(final={**agreeing[0], "note": note}, discard=True)
        fields = consolidate_fields(agreeing, ("label", "paraphrase"))
        if fields is None:
            return Consolidation(final=None, needs_review=True)
        text = None
        if fields["paraphrase"] == "edit":
            edits = [p for p in agreeing if p.get("paraphrase") == "edit"]
            ranked = Counter(_words(p.get("text")) for p in edits).most_common(2)
            if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
                return Consolidation(final=None, needs_review=True)
            text = next(p["text"] for p in edits if _words(p.get("text")) == ranked[0][0])
        return Consolidation(final={"image": "keep", **fields, "text": text, "note": note})

    def applies(self, ctx):
        """Route `flipped`: only items whose label the LLM changed need a person."""
        if (ctx.config or {}).get("route", "all") == "flipped":
            return flipped(ctx.item.get("task"), ctx.item.get("original") or {}, ctx.item.get("stylised") or {})
        return True

    # -- screen ------------------------------------------------------------------
    def screen_context(self, ctx, values):
        task = ctx.item.get("task")
        original, stylised = ctx.item.get("original") or {}, ctx.item.get("stylised") or {}
        before, after = labels(task, original, stylised)
        names = dict(LABELS.get(task, ()))
        text_field = TEXT_FIELD.get(task)
        if task == "cap":
            original_texts = list(original.get("captions") or [])
        else:
            original_texts = [str(original.get(text_field, ""))]
        return {
            "task": task,
            "task_name": TASK_NAMES.get(task, task),
            "style_name": STYLE_NAMES.get(ctx.item.get("style"), ctx.item.get("style")),
            "original_image": image_urls(ctx.item.get("original_image"), ctx.assets.get("/original_image")),
            "stylised_image": image_urls(ctx.item.get("stylised_image"), ctx.assets.get("/stylised_image")),
            "premise": original.get("premise") if task == "ve" else None,
            "original_texts": original_texts,
            "caption_number": stylised.get("caption_number") if task == "cap" else None,
            "llm_text": llm_text(ctx.item),
            "text_name": {"cap": "caption", "vqa": "question", "ve": "hypothesis"}.get(task, "text"),
            "labels": [{"value": v, "name": n, "key": str(i)} for i, (v, n) in enumerate(LABELS.get(task, ()), 1)],
            "original_label": before,
            "llm_label": after,
            "original_label_name": names.get(before, before),
            "llm_label_name": names.get(after, after),
            "flipped": flipped(task, original, stylised),
            "check": self._check_view(ctx.suggestions.get(CHECK_KIND), ctx.item, names),
        }

    @staticmethod
    def _check_view(hint, item, names) -> dict[str, Any] | None:
        if not hint:
            return None
        p = hint.payload
        return {
            "model": f"{hint.model} {hint.model_version}".strip(),
            "keeps": p.get("image") == "keep",
            "label_name": names.get(p.get("label"), p.get("label")),
            "paraphrase": p.get("paraphrase") or "",
            "paraphrase_kept": check_values(p, item)["paraphrase"] == "keep",
            "reason": p.get("reason") or "",
        }

    def initial_values(self, ctx):
        """The LLM's work is the suggestion: its label, its paraphrase kept (the text ready to edit). A
        vision-language model's check, where one was drafted, preselects all three decisions instead."""
        if CHECK_KIND in ctx.suggestions:
            return check_values(ctx.suggestions[CHECK_KIND].payload, ctx.item)
        task = ctx.item.get("task")
        values = {"paraphrase": "keep", "text": llm_text(ctx.item)}
        _, after = labels(task, ctx.item.get("original") or {}, ctx.item.get("stylised") or {})
        if after is not None:
            values["label"] = after
        return values

    # -- review views ------------------------------------------------------------------
    def view_item(self, ctx):
        return self.screen_context(ctx, {})

    def suggestion_outcome(self, ctx, kind, suggestion, payload):
        """A drafted check: accepted when the answer makes its three decisions, rejected when it keeps or
        discards the image otherwise, edited in between."""
        if kind != CHECK_KIND:
            return None
        drafted, given = self.facet_values(check_values(suggestion, ctx.item)), self.facet_values(payload)
        if drafted == given:
            return "accepted"
        return "rejected" if drafted["image kept"] != given["image kept"] else "edited"

    def suggestion_distance(self, ctx, kind, suggestion, payload):
        """The share of the three decisions (image, label, paraphrase) the answer made otherwise than the check."""
        if kind != CHECK_KIND:
            return None
        drafted, given = self.facet_values(check_values(suggestion, ctx.item)), self.facet_values(payload)
        return sum(drafted[f] != given[f] for f in self.facets) / len(self.facets)

    def view_answer(self, ctx, payload, kind=None):
        if kind == CHECK_KIND:
            payload = {**check_values(payload, ctx.item), "note": f"Reason: {payload.get('reason') or '—'}"}
        task = ctx.item.get("task")
        before, after = labels(task, ctx.item.get("original") or {}, ctx.item.get("stylised") or {})
        label = payload.get("label")
        source = ", ".join(n for n, v in (("the LLM's", after), ("the original", before)) if label is not None and v == label)
        return {
            "image": payload.get("image"),
            "label": dict(LABELS.get(task, ())).get(label, label),
            "label_source": source,
            "paraphrase": payload.get("paraphrase"),
            "text": payload.get("text"),
            "note": payload.get("note") or "",
        }
