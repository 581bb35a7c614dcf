"""The draft-kind shape: what a dataset asks a vision-language model to write, and how the answer
becomes a suggestion the stage's screen shows.

A draft kind names the suggestion kind it fills (the one the screen already reads), the JSON
schema the model must answer in, a default prompt (taken from the dataset's paper where it is
published: `source` says where), the item fields the prompt's template may name, and the images
sent with it. `to_payload` turns a schema-valid answer into the suggestion payload or raises
DraftInvalid with the reason (a caption pair whose colours do not swap, a reasoning tree the
parser refuses); `as_answer` shapes a payload like the stage's human answer, so that a prompt
version is scored against people with the workflow's own `compare`.

The drafting backends (`app.drafting`) and the job that runs a prompt over a stage read only this.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.datasets.suggest import ItemInput


class DraftInvalid(ValueError):
    """A model's answer is valid JSON of the schema but not a usable suggestion; the message says why."""


def _no_answer(payload: Mapping[str, Any], item: ItemInput) -> dict[str, Any] | None:
    return None


@dataclass(frozen=True)
class DraftKind:
    name: str  # e.g. "wikido.caption": unique over all datasets
    title: str  # what an admin picks from: "Rewritten caption (LLaVA prompt)"
    workflows: tuple[str, ...]  # the workflows (Workflow.name) this kind drafts for
    suggestion_kind: str  # the suggestion kind it stores, read by those workflows' screens
    schema: dict[str, Any]  # JSON Schema of the model's answer (an object)
    template: str  # user text, `{field}` placeholders filled from `fields` (str.format_map)
    fields: Callable[[ItemInput], dict[str, str]]  # the named fields of an item for the template
    placeholders: tuple[str, ...]  # the names `fields` gives: what a template may name
    to_payload: Callable[[dict[str, Any], ItemInput], dict[str, Any]]  # raises DraftInvalid
    system: str = ""
    images: tuple[str, ...] = ("/image",)  # JSON pointers of the item's images sent with the prompt
    as_answer: Callable[[Mapping[str, Any], ItemInput], dict[str, Any] | None] = _no_answer
    # A draft that is no answer (an explanation) is scored against the record's reference instead:
    # `score(payload, item)` in 0..1 (None: not comparable), named `score_name` on the evaluation.
    score: Callable[[Mapping[str, Any], ItemInput], float | None] | None = None
    score_name: str = ""
    source: str = ""  # where the default prompt comes from (paper, section)
    settings: Mapping[str, Any] = field(default_factory=dict)  # default max_tokens / temperature


def answer_schema(properties: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """A draft kind's answer schema: an object of exactly these properties, every one required (the
    shape OpenAI's strict structured output and vLLM's guided decoding both accept). Strict mode takes
    no string lengths (`minLength`, `maxLength`): a kind checks those in `to_payload` (`within`)."""
    return {"type": "object", "properties": dict(properties), "required": list(properties), "additionalProperties": False}


def within(text: str, what: str, limit: int) -> str:
    """A drafted text of at most `limit` characters (what the stage's answer takes), else DraftInvalid."""
    if len(text) > limit:
        raise DraftInvalid(f"{what} is longer than {limit:,} characters.")
    return text


def json_instruction(schema: Mapping[str, Any]) -> str:
    """The system text asking for the schema's JSON object, key by key with each key's description, for
    servers that cannot be given the schema (structured "none" or "json_object"). No braces: a prompt's
    text is a format string."""
    keys = "; ".join(f'"{name}": {spec.get("description", spec.get("type", "a value"))}' for name, spec in schema["properties"].items())
    return f"Answer with one JSON object and nothing else, with these keys. {keys}."
