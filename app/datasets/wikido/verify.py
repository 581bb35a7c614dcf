"""wikido.verify: "Is there any made-up / hallucinated content in the caption that is not supported
by the image or the reference text?" — Correct, Hallucinated (then correct the caption, mostly
by striking words) or Wrong (image and caption do not match at all; the item leaves the verified
output). The server derives the token edit operations of a correction itself (`tokenedits`);
whatever a client sends for them is refused.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.datasets.workflow import Consolidation, Workflow, image_urls
from app.datasets.wikido.tokenedits import edit_ops, levenshtein, summarize, tokenize, words
from app.errors import Invalid

VERIFY = "wikido.verify"
VERDICTS = ("correct", "hallucinated", "wrong")
# Suggestion kind the screen reads: payload {"spans": [[first token, last token + 1], ...]}
# over the caption's tokens (`tokenedits.tokenize`), the words the reference text does not support.
UNSUPPORTED_KIND = "wikido.unsupported"
ITM_KIND = "wikido.itm"  # payload {"score": cosine of caption and image}
# A caption a vision-language model rewrote (app.datasets.wikido.drafts): payload {"caption": text}; it
# fills the corrected-caption field, so H and Enter store it.
CAPTION_KIND = "wikido.caption"


class ItmSuggestion(BaseModel):
    score: float = Field(allow_inf_nan=False, description="Cosine of caption and image")


class UnsupportedSuggestion(BaseModel):
    spans: list[tuple[Annotated[int, Field(ge=0)], Annotated[int, Field(ge=0)]]] = Field(
        description="[first token, last token + 1] of each unsupported phrase")
    similarity: list[float] | None = None
    unrelated: bool = False


class CaptionSuggestion(BaseModel):
    caption: str = Field(max_length=5000)


class VerifyAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: Literal["correct", "hallucinated", "wrong"]
    caption: str | None = Field(default=None, max_length=5000)

    @field_validator("caption", mode="before")
    @classmethod
    def _one_line(cls, value: Any) -> Any:
        return " ".join(value.split()) if isinstance(value, str) else value


def _norm(text: str | None) -> tuple[str, ...]:
    return tuple(words(text or ""))


class WikiDOVerify(Workflow):
    name = VERIFY
    title = "WikiDO: check a caption for made-up content, and correct it"
    description = "Correct / Hallucinated / Wrong for a model-written caption, with a deletion-first editor."
    annotation_schema = VerifyAnnotation
    template = "datasets/wikido/verify.html"
    view_template = "datasets/wikido/verify_view.html"
    suggestion_kinds = (ITM_KIND, UNSUPPORTED_KIND, CAPTION_KIND)
    suggestion_schemas = {ITM_KIND: ItmSuggestion, UNSUPPORTED_KIND: UnsupportedSuggestion, CAPTION_KIND: CaptionSuggestion}
    facets = {"verdict": "nominal", "deleted words": "token_set"}
    keys_help = (
        "C correct · H hallucinated · W wrong · A strikes the model's underlined words · hallucinated: a word's "
        "number goes to it, Shift + a number strikes through it, ←/→ move as the caption reads (right to left: ← goes on), X strikes, "
        "Z undoes · F: image full size · "
        "Enter submits · S skips"
    )

    def validate_annotation(self, ctx, payload):
        if "edits" in payload:
            raise Invalid("The annotation is not valid.", ["'edits' are computed by the server; do not send them."])
        clean = super().validate_annotation(ctx, payload)
        if clean["verdict"] == "hallucinated":
            clean["edits"] = summarize(ctx.item["caption"], clean["caption"]).as_dict()
        else:
            clean["caption"] = None
        return clean

    def check(self, ctx, payload):
        if payload.verdict != "hallucinated":
            return []
        if not payload.caption or not words(payload.caption):
            return ["A hallucinated caption needs its corrected text: strike the made-up words (or write the caption)."]
        if _norm(payload.caption) == _norm(ctx.item.get("caption")):
            return ["The corrected caption is the same as the model's: strike the made-up words, or choose Correct."]
        return []

    def form_to_payload(self, form):
        payload = {k: v for k, v in form.items() if k in ("verdict", "caption")}
        if isinstance(payload.get("verdict"), str):
            payload["verdict"] = payload["verdict"].strip().lower()
        if payload.get("verdict") != "hallucinated":
            payload.pop("caption", None)
        return payload

    def is_discard(self, payload):
        return payload.get("verdict") == "wrong"

    def facet_values(self, payload):
        deleted = None
        if payload.get("verdict") == "hallucinated":
            deleted = [[op["i1"], op["i2"]] for op in (payload.get("edits") or {}).get("ops", []) if op["op"] != "insert"]
        return {"verdict": payload.get("verdict"), "deleted words": deleted}

    def consolidate(self, ctx, payloads):
        if not payloads:
            return Consolidation(final=None, needs_review=True)
        ranked = Counter(p["verdict"] for p in payloads).most_common()
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            return Consolidation(final=None, needs_review=True)
        verdict = ranked[0][0]
        if verdict != "hallucinated":
            final = next(p for p in payloads if p["verdict"] == verdict)
            return Consolidation(final=final, discard=verdict == "wrong")
        corrected = [p for p in payloads if p["verdict"] == "hallucinated"]
        if len(corrected) == 1:
            return Consolidation(final=corrected[0])
        # The correction closest to the others' (fewest token edits to all of them).
        tokens = [_norm(p["caption"]) for p in corrected]
        cost = [sum(levenshtein(t, u) for u in tokens) for t in tokens]
        best = min(cost)
        winners = {tokens[i] for i, c in enumerate(cost) if c == best}
        if len(winners) > 1:
            return Consolidation(final=None, needs_review=True)
        return Consolidation(final=corrected[cost.index(best)])

    def screen_context(self, ctx, values):
        unsupported: set[int] = set()
        hint = ctx.suggestions.get(UNSUPPORTED_KIND)
        tokens = tokenize(ctx.item["caption"])
        if hint:
            for span in hint.payload.get("spans") or []:
                if isinstance(span, list) and len(span) == 2:
                    unsupported.update(range(max(0, int(span[0])), min(len(tokens), int(span[1]))))
        caption = ctx.item["caption"]
        # Words (not punctuation) are numbered from 1: a digit key jumps to a word by its number.
        numbers = {}
        for i, t in enumerate(tokens):
            if re.match(r"\w", t.text):
                numbers[i] = len(numbers) + 1
        model = f"{hint.model} {hint.model_version}".strip() if hint else None
        drafted = ctx.suggestions.get(CAPTION_KIND)
        return {
            "tokens": [
                {
                    "index": i,
                    "text": t.text,
                    # Whether a space follows, so the token view reads like the caption.
                    "space": t.end < len(caption) and caption[t.end].isspace(),
                    "unsupported": i in unsupported,
                    "word": numbers.get(i),
                }
                for i, t in enumerate(tokens)
            ],
            "unsupported_model": model if unsupported else None,
            # Nothing in the caption is supported: the model suggests Wrong rather than striking it all.
            "unrelated_model": model if hint and not unsupported and hint.payload.get("unrelated") else None,
            "fit": (
                {"score": ctx.suggestions[ITM_KIND].payload.get("score"), "model": ctx.suggestions[ITM_KIND].model}
                if ITM_KIND in ctx.suggestions
                else None
            ),
            "image": image_urls(ctx.item.get("image"), ctx.assets.get("/image")),
            # A rewritten caption fills the text field; the note says whose it is and whether it changes anything.
            "caption_draft": (
                {
                    "model": f"{drafted.model} {drafted.model_version}".strip(),
                    "shown": values.get("caption") == drafted.payload.get("caption"),
                    "same": _norm(drafted.payload.get("caption")) == _norm(caption),
                }
                if drafted and drafted.payload.get("caption")
                else None
            ),
        }

    def initial_values(self, ctx):
        drafted = ctx.suggestions.get(CAPTION_KIND)
        if drafted and drafted.payload.get("caption"):
            return {"caption": drafted.payload["caption"]}
        return {"caption": ctx.item["caption"]}

    def view_item(self, ctx):
        return {
            "image": image_urls(ctx.item.get("image"), ctx.assets.get("/image")),
            "reference": ctx.item.get("orig_cap") or "",
            "title": ctx.item.get("page_title") or "",
            "topic": ctx.item.get("topic") or "",
            "caption": ctx.item["caption"],
        }

    def view_answer(self, ctx, payload, kind=None):
        caption = ctx.item["caption"]
        if kind == UNSUPPORTED_KIND:
            flagged = {i for span in payload.get("spans") or [] if isinstance(span, list) and len(span) == 2 for i in range(int(span[0]), int(span[1]))}
            runs = [{**t, "op": "unsupported" if t["index"] in flagged else None} for t in _token_runs(caption)]
            return {"note": "Words the reference text does not support (underlined)", "tokens": runs}
        if kind == CAPTION_KIND:
            return {"note": "Rewritten caption", "tokens": correction_runs(caption, str(payload.get("caption") or ""))}
        if kind is not None:
            score = payload.get("score")
            return {"note": f"Image-text fit {score:.3f}" if isinstance(score, (int, float)) else "Image-text fit: none"}
        verdict = payload.get("verdict")
        shown = {"verdict": {"correct": "Correct", "hallucinated": "Hallucinated", "wrong": "Wrong: caption and image do not match"}.get(verdict, verdict)}
        if verdict == "hallucinated" and payload.get("caption"):
            shown["tokens"] = correction_runs(caption, payload["caption"])
            edits = payload.get("edits") or summarize(caption, payload["caption"]).as_dict()
            shown["summary"] = f"{edits['deleted']} deleted, {edits['inserted']} inserted, {edits['substituted']} substituted"
        return shown

    def suggestion_outcome(self, ctx, kind, suggestion, payload):
        """Unsupported spans: accepted when exactly those words were struck, edited when some were;
        an unrelated caption: accepted when the verdict is Wrong. A rewritten caption: accepted when
        stored as it was (or, when it changes nothing, when the verdict is Correct), edited when
        corrected otherwise, rejected by a Correct verdict; Wrong says nothing of it."""
        if kind == CAPTION_KIND:
            return _caption_outcome(suggestion, payload, ctx.item)
        if kind != UNSUPPORTED_KIND:
            return None
        if suggestion.get("unrelated"):  # the hint was "nothing is supported: Wrong?"
            return "accepted" if payload.get("verdict") == "wrong" else "rejected"
        flagged = {i for a, b in suggestion.get("spans") or [] for i in range(a, b)}
        if not flagged or payload.get("verdict") == "wrong":
            return None
        if payload.get("verdict") == "correct":
            return "rejected"
        struck = {i for op in (payload.get("edits") or {}).get("ops", []) if op["op"] != "insert" for i in range(op["i1"], op["i2"])}
        if struck == flagged:
            return "accepted"
        return "edited" if struck & flagged else "rejected"


def _caption_outcome(suggestion, payload, item) -> str | None:
    drafted = _norm(suggestion.get("caption"))
    changes = drafted != _norm(item.get("caption"))
    verdict = payload.get("verdict")
    if verdict == "correct":
        return "rejected" if changes else "accepted"
    if verdict != "hallucinated":
        return None
    if _norm(payload.get("caption")) == drafted:
        return "accepted"
    return "edited" if changes else "rejected"


def _token_runs(text: str) -> list[dict[str, Any]]:
    return [
        {"index": i, "text": t.text, "space": t.end < len(text) and text[t.end].isspace(), "op": None}
        for i, t in enumerate(tokenize(text))
    ]


def correction_runs(original: str, corrected: str) -> list[dict[str, Any]]:
    """The original caption's tokens with the correction's edits: struck ("del") and added ("ins") runs."""
    runs = _token_runs(original)
    ops = edit_ops([r["text"] for r in runs], words(corrected))
    out: list[dict[str, Any]] = []
    pos = 0
    for op in sorted(ops, key=lambda o: o.i1):
        out.extend(runs[pos : op.i1])
        out.extend({**r, "op": "del"} for r in runs[op.i1 : op.i2])
        out.extend({"index": None, "text": t, "space": True, "op": "ins"} for t in op.new)
        pos = op.i2
    out.extend(runs[pos:])
    return out
