"""ExpArt's draft kind: an explanation of an artwork's section, written from the image and the title.

artwork.drafted_explanation asks with the paper's own instruction for the item's section path ("Explain the
History of this artwork, Mona Lisa.": `schema.instructions`, with the title). A draft is not an answer of
either artwork stage (an expert's answer is a keep/drop decision, or a score and struck words), so
`as_answer` gives none; a draft is scored against the reference section instead, with the entity metrics of
`app.agreement.entities`, as the paper scored vision-language models. The suggestion carries those metrics
(`{"explanation", "metrics"}`); `reference_score` is the figure a prompt version is compared by (entity F1).
The kind drafts for the explanation stage, whose screen shows a draft beside the explanation being judged
(the sections screen reads no suggestion).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.agreement.entities import scores
from app.datasets.artwork.schema import DRAFTED_KIND, EXPLANATION, MAX_EXPLANATION, instructions, section_path
from app.datasets.draft import DraftInvalid, DraftKind, answer_schema, json_instruction, within
from app.datasets.suggest import ItemInput

SCHEMA = answer_schema({
    "explanation": {"type": "string", "description": "the explanation, as prose"},
})


def fields(item: ItemInput) -> dict[str, str]:
    with_title, without_title = instructions(item.data)
    return {
        "instruction": with_title,
        "instruction_without_title": without_title,
        "title": str(item.data.get("title") or ""),
        "section_path": " › ".join(section_path(item.data)),
    }


def metrics(item: Mapping[str, Any], explanation: str) -> dict[str, float | None]:
    """The entity metrics of an explanation against the item's section text and its linked entities."""
    return scores(item.get("entities") or [], item.get("text") or "", explanation)


def to_payload(answer: dict[str, Any], item: ItemInput) -> dict[str, Any]:
    explanation = " ".join(str(answer.get("explanation") or "").split())
    if not explanation:
        raise DraftInvalid("The explanation is empty.")
    within(explanation, "The explanation", MAX_EXPLANATION)
    return {"explanation": explanation, "metrics": metrics(item.data, explanation)}


def reference_score(payload: Mapping[str, Any], item: Mapping[str, Any]) -> float | None:
    """How far a drafted explanation agrees with its reference section: entity F1 (None without entities)."""
    if not item.get("entities"):
        return None
    return metrics(item, str(payload.get("explanation") or ""))["entity_f1"]


def as_answer(payload: Mapping[str, Any], item: ItemInput) -> dict[str, Any] | None:
    return None  # an explanation is not a judgement: drafts are scored against the reference (reference_score)


def score(payload: Mapping[str, Any], item: ItemInput) -> float | None:
    return reference_score(payload, item.data)


EXPLAIN = DraftKind(
    name=DRAFTED_KIND,
    title="An explanation of the section from the image and the title (ExpArt's instruction)",
    workflows=(EXPLANATION,),
    suggestion_kind=DRAFTED_KIND,
    schema=SCHEMA,
    template="{instruction}",
    system=json_instruction(SCHEMA),
    fields=fields,
    placeholders=("instruction", "instruction_without_title", "title", "section_path"),
    to_payload=to_payload,
    as_answer=as_answer,
    score=score,
    score_name="entity F1 against the section",
    source="ExpArt (Hayashi et al., Towards Artwork Explanation in Large-scale Vision Language Models, ACL 2024): the "
    "paper's instruction for a section path, with the title. The system text asking for JSON is ours.",
    settings={"max_tokens": 800, "temperature": 0.0},
)

DRAFTS = (EXPLAIN,)
