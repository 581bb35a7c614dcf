"""ColorSwap's draft kind: a caption pair with swapped colour words, written from one caption.

colorswap.caption_pair drafts for the recaption stage: from caption 1 the model writes a natural, specific
caption and its colour-swapped partner, as GPT-4 and Claude wrote ColorSwap's captions. The pair must pass
the swap check every ColorSwap answer passes (`swapcheck.check_swap`, with the built-in colour vocabulary:
a draft kind does not see a stage's configuration); a pair that fails it is a failed draft, with the check's
own words as the reason. The suggestion `{"caption_1", "caption_2"}` fills the recaption screen's fields.

The paper's caption-generation prompt could not be read here: the prompt is ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.datasets.colorswap.recaption import one_line
from app.datasets.colorswap.schema import PAIR_KIND, RECAPTION
from app.datasets.colorswap.swapcheck import check_swap
from app.datasets.draft import DraftInvalid, DraftKind, answer_schema, json_instruction, within
from app.datasets.suggest import ItemInput

MAX_CAPTION = 1000  # what the recaption answer takes
CAPTION = {"type": "string"}
SCHEMA = answer_schema({
    "caption_1": {**CAPTION, "description": "the rewritten caption"},
    "caption_2": {**CAPTION, "description": "the same words with the colour words exchanged"},
})


def fields(item: ItemInput) -> dict[str, str]:
    return {k: str(item.data.get(k) or "") for k in ("caption_1", "caption_2", "caption_source")}


def to_payload(answer: dict[str, Any], item: ItemInput) -> dict[str, Any]:
    pair = {k: within(one_line(str(answer.get(k) or "")), f"Caption {k[-1]}", MAX_CAPTION) for k in ("caption_1", "caption_2")}
    check = check_swap(pair["caption_1"], pair["caption_2"])
    if not check.ok:
        raise DraftInvalid("Not a colour-swap pair: " + " ".join(check.problems))
    return pair


def as_answer(payload: Mapping[str, Any], item: ItemInput) -> dict[str, Any] | None:
    return {"caption_1": str(payload.get("caption_1") or ""), "caption_2": str(payload.get("caption_2") or "")}


PAIR = DraftKind(
    name=PAIR_KIND,
    title="A caption pair with swapped colour words, from caption 1",
    workflows=(RECAPTION,),
    suggestion_kind=PAIR_KIND,
    schema=SCHEMA,
    template=(
        "Caption: {caption_1}\n\n"
        "Rewrite this caption as a natural, specific caption of the same scene (caption_1), in which at least two "
        "things have different colours. Then write caption_2 with exactly the same words in the same order, except "
        "that the colour words are exchanged, so that each colour describes a different thing than in caption_1. "
        'For example: "a red cat in a grey jacket" and "a grey cat in a red jacket".'
    ),
    system=json_instruction(SCHEMA),
    images=(),
    fields=fields,
    placeholders=("caption_1", "caption_2", "caption_source"),
    to_payload=to_payload,
    as_answer=as_answer,
    source="Ours, after ColorSwap's caption generation with GPT-4 and Claude (Burapacheep et al., Findings of ACL "
    "2024): the pair follows the dataset's Winoground rule, the same words with the colour words rearranged.",
    settings={"max_tokens": 200, "temperature": 0.7},
)

DRAFTS = (PAIR,)
