"""The tests' draft kinds: a choice with its reason on the generic dataset, with and without the
item's image (the conftest declares them for a test; the drafting bench uses them too)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app.datasets.draft import DraftInvalid, DraftKind

CHOICES = ("a", "b", "c")
SCHEMA = {
    "type": "object",
    "properties": {"choice": {"type": "string"}, "reason": {"type": "string"}},
    "required": ["choice", "reason"],
    "additionalProperties": False,
}


def _fields(item) -> dict[str, str]:
    return {"question": item.data.get("question", ""), "choices": ", ".join(item.data.get("choices") or CHOICES)}


def _payload(answer: dict[str, Any], item) -> dict[str, Any]:
    if answer["choice"] not in (item.data.get("choices") or CHOICES):
        raise DraftInvalid(f"'{answer['choice']}' is none of the choices")
    return {"choice": answer["choice"], "reason": answer["reason"]}


CHOICE_KIND = DraftKind(
    name="test.choice", title="A choice with its reason", workflows=("generic.choice",), suggestion_kind="generic.draft_choice",
    schema=SCHEMA, template="Question: {question}\nChoose one of: {choices}.", fields=_fields, placeholders=("question", "choices"),
    to_payload=_payload, system="You answer questions about images.", settings={"max_tokens": 8, "temperature": 0},
)
# The same prompt without the image: what the image adds to a request shows in the server's token count.
TEXT_ONLY_KIND = replace(CHOICE_KIND, name="test.text_only", images=())
