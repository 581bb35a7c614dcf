"""generic.choice: pick one of a fixed set of answers for an image."""

from typing import Any, Mapping

from pydantic import BaseModel

from app.datasets.task import Task

CHOICE = "generic.choice"


class ChoiceAnnotation(BaseModel):
    choice: str


def item_choices(item: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    return list(item.get("choices") or config.get("choices") or [])


class GenericChoice(Task):
    name = CHOICE
    title = "Image question (choose one answer)"
    description = "Look at an image and pick one of a fixed set of answers."
    annotation_schema = ChoiceAnnotation
    template = "datasets/generic/choice.html"
    facets = {"choice": "nominal"}

    def check(self, item, payload, config, results):
        choices = item_choices(item, config)
        if payload.choice not in choices:
            return [f"'{payload.choice}' is not one of the choices: {', '.join(choices)}"]
        return []

    def facet_values(self, payload):
        return {"choice": payload.get("choice")}

    def screen_context(self, item, config, **_):
        return {"choices": item_choices(item, config)}
