"""The ColorSwap record: a caption pair, where it came from, and the candidate images of both captions."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.datasets.dataset import ItemBase
from app.datasets.workflow import StageConfig

FILTER = "colorswap.filter"
RECAPTION = "colorswap.recaption"
# The suggestion kind the filter screen reads: payload {"scores": [[caption 1, caption 2], ...]},
# one image-text score pair per candidate, in candidate order.
ITM_KIND = "colorswap.itm"
# The suggestion kind the recaption screen reads: a caption pair a language model wrote from caption 1
# (app.datasets.colorswap.drafts), payload {"caption_1": text, "caption_2": text}, a swap pair.
PAIR_KIND = "colorswap.caption_pair"


class ItmSuggestion(BaseModel):
    scores: list[tuple[float, float]] = Field(description="[caption 1, caption 2] image-text scores of each candidate, in order")


class PairSuggestion(BaseModel):
    caption_1: str = Field(max_length=5000)
    caption_2: str = Field(max_length=5000)


class VocabularyConfig(StageConfig):
    """The colour vocabulary of a ColorSwap stage (see `swapcheck.Vocabulary.from_config`)."""

    colour_words: list[str] | None = Field(default=None, description="colour words, replacing the built-in list")
    colour_modifiers: list[str] | None = Field(default=None, description="modifiers before a colour, replacing the built-in list")
    extra_colour_words: list[str] | None = Field(default=None, description="colour words added to the list")
    extra_colour_modifiers: list[str] | None = Field(default=None, description="modifiers added to the list")


class Candidate(BaseModel):
    model_config = ConfigDict(extra="allow", str_strip_whitespace=True)

    image: str = Field(min_length=1)
    from_caption: Literal[1, 2]
    generator: str = ""


class ColorSwapItem(ItemBase):
    caption_1: str = Field(min_length=1)
    caption_2: str = Field(min_length=1)
    # Where the captions and images came from; the public test files leave them out.
    caption_source: str | None = Field(default=None, min_length=1)
    image_source: str | None = Field(default=None, min_length=1)
    candidates: list[Candidate] = Field(min_length=2, max_length=64)

    @model_validator(mode="before")
    @classmethod
    def _published_layout(cls, data: Any) -> Any:
        """The published release has image_1 / image_2 instead of candidates: a pair of two."""
        if not isinstance(data, dict) or "candidates" in data:
            return data
        if "image_1" not in data and "image_2" not in data:
            return data
        data = dict(data)
        images = [data.pop("image_1", None), data.pop("image_2", None)]
        if not all(images):
            raise ValueError("the published layout needs both image_1 and image_2")
        source = data.get("image_source") or ""
        data["candidates"] = [{"image": img, "from_caption": n, "generator": source} for n, img in enumerate(images, 1)]
        return data

    @field_validator("candidates")
    @classmethod
    def _distinct_images(cls, value: list[Candidate]) -> list[Candidate]:
        seen: dict[str, int] = {}
        for i, c in enumerate(value):
            if c.image in seen:
                raise ValueError(f"candidate {i + 1} repeats the image of candidate {seen[c.image] + 1} ({c.image})")
            seen[c.image] = i
        return value


def candidate_pointer(index: int) -> str:
    """The JSON pointer of a candidate's image (the key of its stored asset)."""
    return f"/candidates/{index}/image"
