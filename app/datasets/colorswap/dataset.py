"""The ColorSwap dataset: filter (an image per caption) then recaption, and its published release:
{split}.json records and the chosen images as images/img_{id}_{1|2}.png."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from app.datasets.colorswap import demo, producers
from app.datasets.colorswap.drafts import DRAFTS
from app.datasets.colorswap.probes import FILTER_PROBE, PROBE
from app.datasets.colorswap.filter import ColorSwapFilter
from app.datasets.colorswap.recaption import ColorSwapRecaption
from app.datasets.colorswap.schema import (
    FILTER,
    RECAPTION,
    ColorSwapItem,
    candidate_pointer,
)
from app.datasets.dataset import Dataset, JsonStyle
from app.datasets.registry import register
from app.errors import ascii_digits


def _published_id(value: str) -> int | str:
    return int(value) if ascii_digits(value) else value


def _chosen(results: Mapping[str, Any], n: int) -> int | None:
    return (results.get(FILTER) or {}).get(f"choice_{n}")


@register
class ColorSwap(Dataset):
    name = "colorswap"
    title = "ColorSwap"
    description = "Caption pairs with swapped colour words: choose an image per caption, then re-caption the pair."
    item_schema = ColorSwapItem
    workflows = (ColorSwapFilter, ColorSwapRecaption)
    demos = demo.DEMOS
    breakdown = ("caption_source", "image_source")
    producers = producers.PRODUCERS
    drafts = DRAFTS
    probes = (PROBE, FILTER_PROBE)
    # The release: {split}.json, an array written by `json.dump(records, f, indent=4)` (the
    # repository README shows that layout), and the chosen images at the records' image paths.
    published_layout = "json"
    published_path = "{split}.json"
    release_style = JsonStyle(indent=4, ensure_ascii=True)
    export_image_columns = ("image_1", "image_2")
    parquet_columns = ("id", "image_1", "image_2", "caption_1", "caption_2", "image_source", "caption_source")

    def image_refs(self, item: ColorSwapItem) -> dict[str, str]:
        return {candidate_pointer(i): c.image for i, c in enumerate(item.candidates)}

    def export_record(self, item, results, source=None):
        """The release's record: the record as it came with re-captioned captions where there are
        any; a record of candidates gets image_1 / image_2 (images/img_{id}_{1|2}.png) in their place."""
        captions = results.get(RECAPTION) or {}
        if source is not None and "candidates" not in source:  # a release record: keep it as it is
            return {k: captions.get(k, v) if k in ("caption_1", "caption_2") else v for k, v in source.items()}
        base = source if source is not None else item
        ident = str(item["id"])
        record = {"id": base["id"] if source is not None else _published_id(ident)}
        record.update({k: captions.get(k, base[k]) for k in ("caption_1", "caption_2")})
        record.update({"image_1": f"images/img_{ident}_1.png", "image_2": f"images/img_{ident}_2.png"})
        record.update({k: base.get(k) for k in ("image_source", "caption_source") if source is None or k in source})
        return record

    def export_files(self, item, assets, results, source=None):
        """Path -> sha256 of the image chosen for each caption, at the record's image path
        (written as PNG where the path ends in .png)."""
        record = self.export_record(item, results, source)
        files = {}
        for n in (1, 2):
            index, path = _chosen(results, n), record.get(f"image_{n}")
            if index is not None and candidate_pointer(index) in assets and _relative(path):
                files[path] = assets[candidate_pointer(index)]
        return files

    def export_images(self, item, assets, results, source=None):
        return {f"image_{n}": assets.get(candidate_pointer(_chosen(results, n))) if _chosen(results, n) is not None else None
                for n in (1, 2)}


def _relative(path: Any) -> bool:
    """Whether a record's image path can name a file of the export (relative, inside it)."""
    if not isinstance(path, str) or not path or "://" in path:
        return False
    parts = PurePosixPath(path).parts
    return not path.startswith("/") and ".." not in parts
