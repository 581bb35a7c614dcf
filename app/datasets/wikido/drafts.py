"""WikiDO's draft kinds: what a vision-language model writes for `wikido.verify`.

- wikido.caption — the rewritten caption from the image and the Wikipedia caption, with the LLaVA
  prompt the WikiDO authors used; the suggestion `{"caption": text}` fills the screen's corrected-caption
  field.
- wikido.unsupported — the caption's phrases that neither the image nor the reference text supports.
  The model answers the phrases as text; they become the underline suggestion the screen takes with
  one key, `{"spans": [[first, end], ...]}` over the caption's tokens (`tokenedits.tokenize`), the
  payload the MiniLM producer writes. A phrase that is not in the caption is refused.

`as_answer` turns either into the answer the screen would store when an annotator takes the draft
as it is, checked by the workflow itself, so a prompt version is scored with `wikido.verify`'s compare.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from app.datasets.draft import DraftInvalid, DraftKind, answer_schema, json_instruction, within
from app.datasets.suggest import ItemInput
from app.datasets.wikido.tokenedits import Token, tokenize, words
from app.datasets.wikido.verify import CAPTION_KIND, UNSUPPORTED_KIND, VERIFY, WikiDOVerify
from app.datasets.workflow import ItemContext
from app.errors import Invalid

MAX_CAPTION = 5000  # the screen's field and the annotation schema take no more
# wikido.js joins kept tokens this way: no space before closing punctuation or after an opening mark.
_CLOSING = re.compile(r"[,.;:!?)\]}%'’”]")
_OPENING = re.compile(r"[(\[{“$]$")
_WORKFLOW = WikiDOVerify()


def fields(item: ItemInput) -> dict[str, str]:
    data = item.data
    return {
        "wikipedia_caption": str(data.get("orig_cap") or ""),
        "caption": str(data.get("caption") or ""),
        "page_title": str(data.get("page_title") or ""),
        "topic": str(data.get("topic") or ""),
    }


PLACEHOLDERS = ("wikipedia_caption", "caption", "page_title", "topic")


def _answer(item: ItemInput, payload: dict[str, Any]) -> dict[str, Any] | None:
    """The answer as wikido.verify stores it (edits computed), or None where the workflow refuses it."""
    try:
        return _WORKFLOW.validate_annotation(ItemContext(item.data), payload)
    except Invalid:
        return None


# -- the rewritten caption --------------------------------------------------------------------
CAPTION_SCHEMA = answer_schema({"caption": {"type": "string", "description": "the caption, one line"}})


def caption_payload(answer: dict[str, Any], item: ItemInput) -> dict[str, Any]:
    caption = " ".join(str(answer.get("caption") or "").split())
    if not any(_is_word(t) for t in tokenize(caption)):
        raise DraftInvalid("The caption has no words.")
    return {"caption": within(caption, "The caption", MAX_CAPTION)}


def caption_answer(payload: Mapping[str, Any], item: ItemInput) -> dict[str, Any] | None:
    """The same words as the model caption: Correct; other words: Hallucinated, corrected to the draft."""
    drafted = str(payload.get("caption") or "")
    if words(drafted) == words(item.data.get("caption") or ""):
        return _answer(item, {"verdict": "correct"})
    return _answer(item, {"verdict": "hallucinated", "caption": drafted})


CAPTION = DraftKind(
    name=CAPTION_KIND,
    title="Rewritten caption from the image and the Wikipedia caption (WikiDO's LLaVA prompt)",
    workflows=(VERIFY,),
    suggestion_kind=CAPTION_KIND,
    schema=CAPTION_SCHEMA,
    template=(
        "wikipedia caption: {wikipedia_caption}\n Given the image and the wikipedia caption above, give an exact and "
        "concise caption. Do not miss any information from the wikipedia caption."
    ),
    system=json_instruction(CAPTION_SCHEMA),
    fields=fields,
    placeholders=PLACEHOLDERS,
    to_payload=caption_payload,
    as_answer=caption_answer,
    source="WikiDO (Tankala et al., NeurIPS 2024 Datasets and Benchmarks): the prompt LLaVA rewrote the Wikipedia "
    "captions with, as the paper gives it. The system text asking for JSON is ours.",
    settings={"max_tokens": 256, "temperature": 0.0},
)


# -- unsupported phrases --------------------------------------------------------------------------
UNSUPPORTED_SCHEMA = answer_schema({
    "phrases": {
        "type": "array", "maxItems": 50, "items": {"type": "string"},
        "description": "a list of the caption's phrases that are made up, each copied exactly from the caption (empty when none is)",
    },
    "unrelated": {"type": "boolean", "description": "true when the caption does not describe this image at all"},
})


def _fold(text: str) -> str:
    return text.casefold().replace("’", "'")


def _is_word(token: Token) -> bool:
    return bool(re.match(r"\w", token.text))


def phrase_span(tokens: list[Token], phrase: str, taken: set[int]) -> tuple[int, int]:
    """The token span [first, end) of the caption where `phrase` is written (case and leading or trailing
    punctuation aside); the first such place not already underlined, else the first. DraftInvalid if none."""
    wanted = [_fold(t.text) for t in tokenize(phrase)]
    while wanted and not re.match(r"\w", wanted[0]):
        wanted.pop(0)
    while wanted and not re.match(r"\w", wanted[-1]):
        wanted.pop()
    if not wanted:
        raise DraftInvalid(f"The phrase “{phrase.strip()}” has no words.")
    text = [_fold(t.text) for t in tokens]
    n = len(wanted)
    found = [i for i in range(len(text) - n + 1) if text[i : i + n] == wanted]
    if not found:
        raise DraftInvalid(f"The phrase “{phrase.strip()}” is not in the caption.")
    start = next((i for i in found if not taken & set(range(i, i + n))), found[0])
    return start, start + n


def unsupported_payload(answer: dict[str, Any], item: ItemInput) -> dict[str, Any]:
    """Phrases as token spans, sorted and merged where they overlap. An unrelated caption, or one whose
    every word is underlined, gets no spans but `"unrelated": true` (the screen then suggests Wrong), as
    the MiniLM producer writes it."""
    if answer.get("unrelated"):
        return {"spans": [], "unrelated": True}
    tokens = tokenize(str(item.data.get("caption") or ""))
    spans: list[list[int]] = []
    taken: set[int] = set()
    for phrase in answer.get("phrases") or []:
        a, b = phrase_span(tokens, str(phrase), taken)
        taken.update(range(a, b))
        spans.append([a, b])
    merged: list[list[int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    if merged and all(any(a <= i < b for a, b in merged) for i, t in enumerate(tokens) if _is_word(t)):
        return {"spans": [], "unrelated": True}  # nothing supported: as the producer says it (striking all corrects nothing)
    return {"spans": merged}


def kept_text(caption: str, struck: set[int]) -> str:
    """The caption without the struck tokens, joined as the screen's editor joins them (wikido.js):
    a space where the caption had space between two kept tokens, none before closing punctuation."""
    out, gap, first = "", False, True
    for i, t in enumerate(tokenize(caption)):
        if i not in struck:
            if not first and gap and not _CLOSING.fullmatch(t.text) and not _OPENING.search(out):
                out += " "
            out += t.text
            first, gap = False, False
        if t.end < len(caption) and caption[t.end].isspace():
            gap = True
    return out


def unsupported_answer(payload: Mapping[str, Any], item: ItemInput) -> dict[str, Any] | None:
    """What one key on the screen stores: Wrong for an unrelated caption, Correct with nothing underlined,
    else Hallucinated with the underlined words struck."""
    if payload.get("unrelated"):
        return _answer(item, {"verdict": "wrong"})
    struck = {i for a, b in payload.get("spans") or [] for i in range(a, b)}
    if not struck:
        return _answer(item, {"verdict": "correct"})
    return _answer(item, {"verdict": "hallucinated", "caption": kept_text(str(item.data.get("caption") or ""), struck)})


UNSUPPORTED = DraftKind(
    name=UNSUPPORTED_KIND,
    title="Made-up phrases of the caption (WikiDO's verification question)",
    workflows=(VERIFY,),
    suggestion_kind=UNSUPPORTED_KIND,
    schema=UNSUPPORTED_SCHEMA,
    template=(
        "Reference text: {wikipedia_caption}\nCaption: {caption}\n\n"
        "Is there any made-up / hallucinated content in the caption that is not supported by the image or the reference "
        "text? List every such phrase exactly as the caption writes it, shortest first: the words to strike, not the "
        "whole sentence. List none when everything is supported. If the caption does not describe this image at all, "
        "say it is unrelated."
    ),
    system=json_instruction(UNSUPPORTED_SCHEMA),
    fields=fields,
    placeholders=PLACEHOLDERS,
    to_payload=unsupported_payload,
    as_answer=unsupported_answer,
    source="The question is WikiDO's human verification question (Tankala et al., NeurIPS 2024 Datasets and "
    "Benchmarks); the rest of the prompt is ours.",
    settings={"max_tokens": 256, "temperature": 0.0},
)

DRAFTS = (CAPTION, UNSUPPORTED)
