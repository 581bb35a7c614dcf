"""The WikiDO dataset: one verification stage, and its published release — the records of the
JSONL with their verified captions, and the verification log of every finished item."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from app.datasets.dataset import AnswerFigures, Dataset, ItemBase, JsonStyle
from app.datasets.registry import register
from app.datasets.wikido import demo, producers
from app.datasets.wikido.drafts import DRAFTS
from app.datasets.wikido.verify import VERDICTS, VERIFY, WikiDOVerify


class WikiDOItem(ItemBase):
    """A record of the published WikiDO JSONL; extra keys are kept as they are."""

    image_id: str = Field(min_length=1)
    caption: str = Field(min_length=1)
    orig_cap: str = ""
    image: str = Field(min_length=1)
    page_id: str | None = None
    page_title: str | None = None
    topic: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _id_from_image_id(cls, data: Any) -> Any:
        # Published records are keyed by image_id; an explicit id wins when both are given.
        if isinstance(data, dict) and "id" not in data and data.get("image_id") not in (None, ""):
            data = {**data, "id": data["image_id"]}
        if isinstance(data, dict) and "image_id" not in data and data.get("id") not in (None, ""):
            data = {**data, "image_id": data["id"]}
        return data


@register
class WikiDO(Dataset):
    name = "wikido"
    title = "WikiDO"
    description = "Check model-written captions against their image and reference text; correct made-up words."
    item_schema = WikiDOItem
    image_fields = ("/image",)
    workflows = (WikiDOVerify,)
    demos = demo.DEMOS
    figures = {
        VERIFY: AnswerFigures(
            answer="verdict", answers=VERDICTS, by=("topic", "split"),
            means=(("Mean edit distance in tokens, by edit type", "kind", "distance"),),
        )
    }
    producers = producers.PRODUCERS
    drafts = DRAFTS
    export_log_name = "verification_log.jsonl"

    # The release's JSONL is written as `json.dumps` writes by default (separators ", " and
    # ": ", non-ASCII as \u escapes), a line each: the code repository's train_5k.json shows
    # that style for the same records.
    release_style = JsonStyle(indent=None, ensure_ascii=True)

    def export_record(self, item, results, source=None):
        """The record as it came, with the verified caption (Wrong items are not exported)."""
        final = results.get(VERIFY) or {}
        if source is not None:
            record = dict(source)
        else:  # stored before records were kept: the schema's copy, less what import added
            record = dict(item)
            if str(record.get("id")) == str(record.get("image_id")):
                record.pop("id", None)
            if record.get("group_id") is None:
                record.pop("group_id", None)
        if final.get("verdict") == "hallucinated" and final.get("caption"):
            record["caption"] = final["caption"]
        return record

    def export_log(self, item, results, source=None) -> dict[str, Any]:
        """One line of the verification log: image_id (as the record has it), verdict and the server-computed edits."""
        final = results.get(VERIFY) or {}
        image_id = (source or item).get("image_id", item["image_id"])
        return {"image_id": image_id, "verdict": final.get("verdict"), "edits": final.get("edits")}
