"""artwork.explanation: an expert judges one model's explanation of a kept section against the
section's text — strikes the unsupported or wrong words and scores the explanation 1–5 — with
the entity metrics (`app.agreement.entities`) shown beside it.

Items are one record per (section, model). In a project that starts with `artwork.sections`
the stage takes the kept sections that carry an explanation; a project of explanations only
starts with this stage (it needs no earlier stage's final).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.agreement.entities import generated_entities, scores, tokens, unique
from app.datasets.artwork.schema import DRAFTED_KIND, EXPLANATION, SECTIONS, DraftedSuggestion, section_path, section_view, segments
from app.datasets.workflow import Consolidation, Workflow, image_urls
from app.datasets.wikido.tokenedits import tokenize
from app.errors import ascii_digits

# The rubric shown on screen, by score.
RUBRIC = (
    (1, "wrong: mostly unsupported or about another artwork"),
    (2, "poor: some right facts, many wrong or missing"),
    (3, "fair: right on the main facts, with errors or big gaps"),
    (4, "good: right, minor gaps or one small error"),
    (5, "excellent: right and as complete as the reference"),
)


class ExplanationAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    score: int = Field(ge=1, le=5)
    # Struck tokens of the explanation (`tokenedits.tokenize`) as [first, last + 1) spans, in order.
    struck: list[tuple[int, int]] = Field(default_factory=list)


def spans_of(indices: set[int]) -> list[list[int]]:
    """Sorted token indices as [start, end) runs."""
    out: list[list[int]] = []
    for i in sorted(indices):
        if out and out[-1][1] == i:
            out[-1][1] = i + 1
        else:
            out.append([i, i + 1])
    return out


def indices_of(spans) -> set[int]:
    return {i for a, b in spans or [] for i in range(a, b)}


# Words too common to say that a draft agrees with an explanation (English, as ExpArt's articles are).
FUNCTION_WORDS = frozenset(
    "a an and are as at be been but by for from had has have he her his in into is it its of on or she that the their "
    "them they this to was were which who with".split()
)


def content_word(token: str) -> bool:
    """A token that carries content: a word or number that is not a function word."""
    return any(c.isalnum() for c in token) and token.casefold() not in FUNCTION_WORDS


def repeated(explanation: str, draft: str) -> set[int]:
    """The explanation's content words (token indices) that the drafted explanation uses too: what the
    draft, shown beside it, vouches for."""
    said = {t.text.casefold() for t in tokenize(draft) if content_word(t.text)}
    return {i for i, t in enumerate(tokenize(explanation)) if content_word(t.text) and t.text.casefold() in said}


def metrics_of(item: dict[str, Any]) -> dict[str, float | None]:
    return scores(item.get("entities") or [], item.get("text") or "", item.get("explanation") or "", item.get("explanation_entities"))


class ArtworkExplanation(Workflow):
    name = EXPLANATION
    title = "ExpArt: judge a model's explanation of an artwork section"
    description = "Strike the unsupported or wrong words of a model's explanation and score it 1–5 against the reference section."
    annotation_schema = ExplanationAnnotation
    template = "datasets/artwork/explanation.html"
    view_template = "datasets/artwork/explanation_view.html"
    keys_help = ("1–5 score · ←/→ move · X or Space strikes a word · Shift+X strikes up to the last struck word · "
                 "click strikes · Z undoes · Enter submits · S skips")
    facets = {"score": "nominal", "struck tokens": "token_set"}
    # A vision-language model's own explanation of the section (app.datasets.artwork.drafts), shown beside
    # the one being judged with its entity metrics. The answer cannot change it; what it does with the
    # draft is what it does with the judged explanation's words the draft repeats (`suggestion_outcome`).
    suggestion_kinds = (DRAFTED_KIND,)
    suggestion_schemas = {DRAFTED_KIND: DraftedSuggestion}

    def validate_annotation(self, ctx, payload):
        clean = super().validate_annotation(ctx, payload)
        clean["struck"] = spans_of(indices_of(clean["struck"]))
        return clean

    def check(self, ctx, payload):
        n = len(tokenize(ctx.item.get("explanation") or ""))
        if any(a < 0 or b > n or a >= b for a, b in payload.struck):
            return [f"Struck words must be words of the explanation (it has {n})."]
        return []

    def form_to_payload(self, form):
        raw = form.get("struck")
        raw = raw if isinstance(raw, list) else ([] if raw in (None, "") else [raw])
        try:
            struck = spans_of({int(x) for x in raw})
        except (TypeError, ValueError):
            struck = raw  # the schema says what is wrong
        payload: dict[str, Any] = {"struck": struck}
        if form.get("score") not in (None, ""):
            payload["score"] = form.get("score")
        return payload

    def payload_values(self, ctx, payload):
        values: dict[str, Any] = {"struck": [i for i in sorted(indices_of(payload.get("struck")))]}
        if payload.get("score") is not None:
            values["score"] = payload["score"]
        return values

    def is_discard(self, payload):
        return False

    def facet_values(self, payload):
        return {"score": payload.get("score"), "struck tokens": [list(s) for s in payload.get("struck") or []]}

    def consolidate(self, ctx, payloads):
        """Majority score; a word is struck when most annotators struck it. A tie on either goes to review."""
        if not payloads:
            return Consolidation(final=None, needs_review=True)
        ranked = Counter(p["score"] for p in payloads).most_common(2)
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            return Consolidation(final=None, needs_review=True)
        counts = Counter(i for p in payloads for i in indices_of(p.get("struck")))
        n = len(payloads)
        if any(c * 2 == n for c in counts.values()):
            return Consolidation(final=None, needs_review=True)
        return Consolidation(final={"score": ranked[0][0], "struck": spans_of({i for i, c in counts.items() if c * 2 > n})})

    def suggestion_outcome(self, ctx, kind, suggestion, payload):
        """The draft vouches for the explanation's content words it repeats: accepted when the answer
        strikes none of them, rejected when it strikes them all, else edited; None when it repeats none."""
        vouched, struck = self._vouched(ctx, kind, suggestion, payload)
        if not vouched:
            return None
        return "accepted" if not struck else "rejected" if struck == vouched else "edited"

    def suggestion_distance(self, ctx, kind, suggestion, payload):
        """The share of the content words the draft repeats that the answer strikes."""
        vouched, struck = self._vouched(ctx, kind, suggestion, payload)
        return len(struck) / len(vouched) if vouched else None

    def _vouched(self, ctx, kind, suggestion, payload) -> tuple[set[int], set[int]]:
        """(the explanation's words the draft repeats, those of them the answer strikes)."""
        if kind != DRAFTED_KIND:
            return set(), set()
        vouched = repeated(ctx.item.get("explanation") or "", str(suggestion.get("explanation") or ""))
        return vouched, vouched & indices_of(payload.get("struck"))

    def applies(self, ctx):
        """Kept sections that carry a model's explanation."""
        kept = (ctx.results.get(SECTIONS) or {}).get("decision", "keep") == "keep"
        return kept and bool(ctx.item.get("explanation"))

    def screen_context(self, ctx, values):
        reference, explanation = ctx.item.get("text") or "", ctx.item.get("explanation") or ""
        ref_ents = unique(ctx.item.get("entities") or [])
        gen_ents = generated_entities(ref_ents, explanation, ctx.item.get("explanation_entities"))
        ref_keys = {tuple(tokens(e)) for e in ref_ents}
        gen_keys = {tuple(tokens(e)) for e in gen_ents}

        def ref_kind(e):
            return "shared" if tuple(tokens(e)) in gen_keys else "missing"

        def gen_kind(e):
            return "shared" if tuple(tokens(e)) in ref_keys else "extra"

        # Each token of the explanation, with the kind of entity it is part of.
        marks = {}
        for seg_start, seg in _positions(segments(explanation, gen_ents, gen_kind)):
            if seg["kind"]:
                marks[(seg_start, seg_start + len(seg["text"]))] = seg["kind"]
        struck = {int(i) for i in _as_list(values.get("struck")) if ascii_digits(str(i))}
        toks = tokenize(explanation)
        return {
            "image": image_urls(ctx.item.get("image"), ctx.assets.get("/image")),
            "path": section_path(ctx.item),
            "reference": segments(reference, ref_ents, ref_kind),
            "tokens": [
                {
                    "index": i, "text": t.text,
                    "space": t.end < len(explanation) and explanation[t.end].isspace(),
                    "kind": next((k for (a, b), k in marks.items() if a <= t.start < b), None),
                    "struck": i in struck,
                }
                for i, t in enumerate(toks)
            ],
            "missing": [e for e in ref_ents if ref_kind(e) == "missing"],
            "extra": [e for e in gen_ents if gen_kind(e) == "extra"],
            "metrics": metrics_of(ctx.item),
            "rubric": RUBRIC,
            "drafted": _drafted(ctx.suggestions.get(DRAFTED_KIND)),
        }

    def view_item(self, ctx):
        return {**section_view(ctx.item, ctx.assets), "model": ctx.item.get("model") or "", "explanation": ctx.item.get("explanation") or ""}

    def view_answer(self, ctx, payload, kind=None):
        if kind == DRAFTED_KIND:
            text = str(payload.get("explanation") or "")
            f1 = (payload.get("metrics") or {}).get("entity_f1")
            return {
                "score": None, "note": "Drafted explanation" + (f" · entity F1 {f1:.3f}" if isinstance(f1, (int, float)) else ""),
                "tokens": [{"text": t.text, "space": t.end < len(text) and text[t.end].isspace(), "struck": False} for t in tokenize(text)],
            }
        explanation = ctx.item.get("explanation") or ""
        struck = indices_of(payload.get("struck"))
        return {
            "score": payload.get("score"),
            "rubric": dict(RUBRIC).get(payload.get("score"), ""),
            "tokens": [
                {"text": t.text, "space": t.end < len(explanation) and explanation[t.end].isspace(), "struck": i in struck}
                for i, t in enumerate(tokenize(explanation))
            ],
        }


def _drafted(hint) -> dict[str, Any] | None:
    if not hint or not hint.payload.get("explanation"):
        return None
    return {"model": f"{hint.model} {hint.model_version}".strip(), "explanation": hint.payload["explanation"],
            "metrics": hint.payload.get("metrics") or {}}


def _as_list(value: Any) -> list[Any]:
    if value is None or value == "":
        return []
    return value if isinstance(value, list) else [value]


def _positions(segs):
    pos = 0
    for seg in segs:
        yield pos, seg
        pos += len(seg["text"])
