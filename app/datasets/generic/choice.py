"""generic.choice: pick one of a fixed set of answers for an image."""

from typing import Any, Mapping

from pydantic import BaseModel, Field, field_validator

from app.datasets.workflow import StageConfig, Workflow, image_urls

CHOICE = "generic.choice"


class ChoiceAnnotation(BaseModel):
    choice: str


class ChoiceConfig(StageConfig):
    choices: list[str] | None = Field(default=None, description="the answers offered, unless an item names its own")
    question: str = Field(default="", description="the question shown when an item has none")

    @field_validator("choices")
    @classmethod
    def _distinct(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (len(value) < 2 or len(set(value)) != len(value)):
            raise ValueError("give two or more distinct choices")
        return value


def item_choices(item: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    return list(item.get("choices") or config.get("choices") or [])


class GenericChoice(Workflow):
    name = CHOICE
    title = "Image question (choose one answer)"
    description = "Look at an image and pick one of a fixed set of answers."
    annotation_schema = ChoiceAnnotation
    config_schema = ChoiceConfig
    template = "datasets/generic/choice.html"
    view_template = "datasets/generic/choice_view.html"
    facets = {"choice": "nominal"}

    def check(self, ctx, payload):
        choices = item_choices(ctx.item, ctx.config)
        if payload.choice not in choices:
            return [f"'{payload.choice}' is not one of the choices: {', '.join(choices)}"]
        return []

    def facet_values(self, payload):
        return {"choice": payload.get("choice")}

    def screen_context(self, ctx, values):
        return {"choices": item_choices(ctx.item, ctx.config)}

    def view_item(self, ctx):
        return {
            "image": image_urls(ctx.item.get("image"), ctx.assets.get("/image")),
            "question": ctx.item.get("question") or ctx.config.get("question", ""),
            "choices": item_choices(ctx.item, ctx.config),
        }

    def view_answer(self, ctx, payload, kind=None):
        return {"choice": payload.get("choice")}
