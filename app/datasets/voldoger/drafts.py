"""VOLDOGER's draft kind: the LLM checks of a stylised row, made again by a vision-language model that
sees the photo and its redrawing.

voldoger.check asks three things, as the VOLDOGER authors had an LLM check each stylised image: does the
redrawing keep the photo's content (yes / no), which label holds on it (VQA: yes / no; visual entailment:
entailment / neutral / contradiction; captioning has none), and a paraphrase of the row's text (question,
hypothesis or caption), with the model's reason. The suggestion keeps the reason: the screen preselects the
three decisions and puts the reason in the comment, which goes to the check log. One kind serves all three
tasks: the template's fields say what the row is about and which labels its task has.

The paper's prompts (its appendix) could not be read here: the prompt is ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.datasets.draft import DraftInvalid, DraftKind, answer_schema, json_instruction, within
from app.datasets.suggest import ItemInput
from app.datasets.voldoger.release import LABELS, STYLE_NAMES, TASK_NAMES, TEXT_FIELD, label_text, labels
from app.datasets.voldoger.verify import CHECK_KIND, VERIFY, VoldogerVerify, check_values
from app.datasets.workflow import ItemContext
from app.errors import Invalid

NO_LABEL = "none"
MAX_PARAPHRASE, MAX_REASON = 5000, 2000  # characters: the screen's text and comment take 5,000
LABEL_WORDS = ("yes", "no", "entailment", "neutral", "contradiction", NO_LABEL)
_WORKFLOW = VoldogerVerify()

SCHEMA = answer_schema({
    "keeps_content": {"type": "string", "enum": ["yes", "no"], "description": "yes or no: does the stylised image keep the photo's content"},
    "label": {"type": "string", "enum": list(LABEL_WORDS), "description": "the label that holds on the stylised image, as the prompt asks"},
    "paraphrase": {"type": "string", "description": "the text in other words, same meaning"},
    "reason": {"type": "string", "description": "why, in one or two sentences"},
})
LABEL_INSTRUCTIONS = {
    "vqa": 'label: answer the question for the stylised image, "yes" or "no".',
    "ve": 'label: for the stylised image, is the hypothesis "entailment", "neutral" or "contradiction"?',
    "cap": f'label: captioning has no label; answer "{NO_LABEL}".',
}


def original_text(item: Mapping[str, Any]) -> str:
    """The original row's text the paraphrase rewrites: the question, the hypothesis, or the caption the
    stylised row names by caption_number."""
    task, original = item.get("task"), item.get("original") or {}
    if task == "cap":
        captions = list(original.get("captions") or [])
        n = (item.get("stylised") or {}).get("caption_number")
        return str(captions[n] if isinstance(n, int) and 0 <= n < len(captions) else (captions[0] if captions else "")).strip()
    return str(original.get(TEXT_FIELD.get(task, ""), "") or "").strip()


def fields(item: ItemInput) -> dict[str, str]:
    data = item.data
    task, original = data.get("task"), data.get("original") or {}
    before, _ = labels(task, original, data.get("stylised") or {})
    names = dict(LABELS.get(task, ()))
    text_name = {"cap": "caption", "vqa": "question", "ve": "hypothesis"}.get(task, "text")
    lines = []
    if task == "ve" and original.get("premise"):
        lines.append(f"Premise: {' '.join(str(original['premise']).split())}")
    lines.append(f"{text_name.capitalize()}: {' '.join(original_text(data).split())}")
    if before is not None:
        lines.append(f"{'Answer' if task == 'vqa' else 'Label'} on the photo: {names.get(before, before)}")
    return {
        "task_name": TASK_NAMES.get(task, str(task)),
        "style_name": STYLE_NAMES.get(data.get("style"), str(data.get("style"))),
        "text_name": text_name,
        "context": "\n".join(lines),
        "label_instruction": LABEL_INSTRUCTIONS.get(task, LABEL_INSTRUCTIONS["cap"]),
    }


def to_payload(answer: dict[str, Any], item: ItemInput) -> dict[str, Any]:
    task = item.data.get("task")
    paraphrase = " ".join(str(answer.get("paraphrase") or "").split())
    if not paraphrase:
        raise DraftInvalid("The paraphrase is empty.")
    within(paraphrase, "The paraphrase", MAX_PARAPHRASE)
    allowed = [v for v, _ in LABELS.get(task, ())]
    given = str(answer.get("label") or "").strip().lower()
    if allowed:
        label = label_text(task, given) if given != NO_LABEL else None
        if label not in allowed:
            names = ", ".join(n for _, n in LABELS[task])
            raise DraftInvalid(f"The label “{given}” is not one of a {TASK_NAMES[task]} row's: {names}.")
    else:
        label = None  # captioning: whatever the model said, there is no label to check
    return {
        "image": "keep" if answer.get("keeps_content") == "yes" else "discard",
        "label": label,
        "paraphrase": paraphrase,
        "reason": within(" ".join(str(answer.get("reason") or "").split()), "The reason", MAX_REASON),
    }


def as_answer(payload: Mapping[str, Any], item: ItemInput) -> dict[str, Any] | None:
    """The answer the screen stores when its preselected decisions are submitted as they are."""
    try:
        return _WORKFLOW.validate_annotation(ItemContext(item.data), check_values(dict(payload), item.data))
    except Invalid:
        return None


CHECK = DraftKind(
    name=CHECK_KIND,
    title="The LLM's checks of a stylised row: content kept, label, paraphrase, with a reason",
    workflows=(VERIFY,),
    suggestion_kind=CHECK_KIND,
    schema=SCHEMA,
    template=(
        "The first image is a photo; the second redraws it as a {style_name}. A row of a {task_name} dataset goes with "
        "the photo:\n{context}\n\nCheck the row for the {style_name}:\n"
        "keeps_content: does the {style_name} keep the content of the photo that the row is about?\n"
        "{label_instruction}\n"
        "paraphrase: write the {text_name} in other words, keeping its meaning.\n"
        "reason: say why, in one or two sentences."
    ),
    system=json_instruction(SCHEMA),
    images=("/original_image", "/stylised_image"),
    fields=fields,
    placeholders=("task_name", "style_name", "text_name", "context", "label_instruction"),
    to_payload=to_payload,
    as_answer=as_answer,
    source="Ours, after VOLDOGER's LLM-based label checks (Choi et al., 2024, arXiv:2407.19795, sections 3.2-3.4): "
    "the paper's prompt text could not be read here.",
    settings={"max_tokens": 400, "temperature": 0.0},
)

DRAFTS = (CHECK,)
