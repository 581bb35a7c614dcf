"""The generic dataset: items with one image, a question and (here or in the stage) the choices."""

from pydantic import Field, ValidationInfo, field_validator, model_validator

from app.datasets.dataset import Dataset, ItemBase
from app.datasets.generic import demo
from app.datasets.generic.choice import GenericChoice
from app.datasets.registry import register


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


@register
class Generic(Dataset):
    name = "generic"
    title = "Image question (choose one answer)"
    description = "Look at an image and pick one of a fixed set of answers."
    item_schema = ChoiceItem
    image_fields = ("/image",)
    workflows = (GenericChoice,)
    demos = demo.DEMOS
