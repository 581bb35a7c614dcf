"""generic.choice: one image, one question, a fixed set of answers. Proves the core end to end."""

from typing import Any, Mapping

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from app.workflows.base import ItemBase, Workflow
from app.workflows.registry import register


class ChoiceItem(ItemBase):
    image: str = Field(min_length=1)
    question: str = ""
    choices: list[str] | None = None

    @field_validator("choices")
    @classmethod
    def _distinct(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            if len(value) < 2:
                raise ValueError("give at least two choices")
            if len(set(value)) != len(value):
                raise ValueError("choices must be distinct")
        return value

    @model_validator(mode="after")
    def _choices_known(self, info: ValidationInfo) -> "ChoiceItem":
        config = (info.context or {}).get("config") or {}
        if self.choices is None and not config.get("choices"):
            raise ValueError("no choices: give 'choices' in the record or in the stage configuration")
        if not self.question:
            self.question = config.get("question", "")
        return self


class ChoiceAnnotation(BaseModel):
    choice: str


def item_choices(item: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    return list(item.get("choices") or config.get("choices") or [])


@register
class GenericChoice(Workflow):
    name = "generic.choice"
    title = "Image question (choose one answer)"
    description = "Look at an image and pick one of a fixed set of answers."
    item_schema = ChoiceItem
    annotation_schema = ChoiceAnnotation
    template = "workflows/generic_choice.html"
    image_fields = ("/image",)

    def check(self, item, payload, config, results):
        choices = item_choices(item, config)
        if payload.choice not in choices:
            return [f"'{payload.choice}' is not one of the choices: {', '.join(choices)}"]
        return []

    def agreement_facets(self):
        return {"choice": "nominal"}

    def facet_values(self, payload):
        return {"choice": payload.get("choice")}

    def screen_context(self, item, config, **_):
        return {"choices": item_choices(item, config)}
