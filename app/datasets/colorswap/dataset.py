"""The ColorSwap dataset: filter (an image per caption) then recaption, and its published release:
{split}.json records and the chosen images as images/img_{id}_{1|2}.png."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.datasets.colorswap import demo, producers
from app.datasets.colorswap.filter import ColorSwapFilter
from app.datasets.colorswap.recaption import ColorSwapRecaption
from app.datasets.colorswap.schema import (
    FILTER,
    RECAPTION,
    ColorSwapItem,
    candidate_pointer,
)
from app.datasets.dataset import Dataset
from app.datasets.registry import register


def _published_id(value: str) -> int | str:
    return int(value) if value.isdigit() else value


def _chosen(results: Mapping[str, Any], n: int) -> int | None:
    return (results.get(FILTER) or {}).get(f"choice_{n}")


@register
class ColorSwap(Dataset):
    name = "colorswap"
    title = "ColorSwap"
    description = "Caption pairs with swapped colour words: choose an image per caption, then re-caption the pair."
    item_schema = ColorSwapItem
    tasks = (ColorSwapFilter, ColorSwapRecaption)
    demos = demo.DEMOS
    breakdown = ("caption_source", "image_source")
    producers = producers.PRODUCERS
    published_layout = "json"
    export_image_columns = ("image_1", "image_2")

    def image_refs(self, item: ColorSwapItem) -> dict[str, str]:
        return {candidate_pointer(i): c.image for i, c in enumerate(item.candidates)}

    def export_record(self, item, results):
        """The release's record: re-captioned captions where there are any, and the chosen
        images as images/img_{id}_{1|2}.png."""
        captions = results.get(RECAPTION) or item
        ident = item["id"]
        return {
            "id": _published_id(ident),
            "caption_1": captions["caption_1"],
            "caption_2": captions["caption_2"],
            "image_1": f"images/img_{ident}_1.png",
            "image_2": f"images/img_{ident}_2.png",
            "image_source": item.get("image_source"),
            "caption_source": item.get("caption_source"),
        }

    def export_files(self, item, assets, results):
        """Release path -> sha256 of the image chosen for each caption (written as PNG by the exporter)."""
        files = {}
        for n in (1, 2):
            index = _chosen(results, n)
            if index is not None and candidate_pointer(index) in assets:
                files[f"images/img_{item['id']}_{n}.png"] = assets[candidate_pointer(index)]
        return files

    def export_images(self, item, assets, results):
        return {f"image_{n}": assets.get(candidate_pointer(_chosen(results, n))) if _chosen(results, n) is not None else None
                for n in (1, 2)}
