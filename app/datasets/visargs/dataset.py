"""The VisArgs dataset: premises -> structure -> grounding, and its published release —
{split}/annotation.json keyed by id, the images at their `url`, and COCO boxes (one per visual
premise). Also the companion dataset of conclusion pairs judged for equivalence."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from app.datasets.dataset import BoxExport, Dataset, JsonStyle
from app.datasets.registry import register
from app.datasets.visargs import demo, producers
from app.datasets.visargs.drafts import DRAFTS
from app.datasets.visargs.probes import GROUNDING_PROBE, PROBE, STRUCTURE_PROBE
from app.datasets.visargs.equivalence import EquivalenceItem, VisArgsEquivalence
from app.datasets.visargs.grounding import VisArgsGrounding
from app.datasets.visargs.premises import VisArgsPremises
from app.datasets.visargs.schema import (
    GROUNDING,
    PREMISES,
    STRUCTURE,
    VisArgsItem,
    final_of,
)
from app.datasets.visargs.structure import VisArgsStructure


# The release's key orders (the repository README's record): a record's, and a box's.
RELEASE_KEYS = ("url", "visual_premises", "conclusion", "b_box", "commonsense_premises", "reasoning_steps")
BOX_KEYS = ("h", "startX", "startY", "w")


def published_record(item: Mapping[str, Any], results: Mapping[str, Any], source: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The record of VisArgs' annotation.json: a released record as it came with the annotated
    fields replaced in place (boxes keep the record's key order), or a drafted record in the
    release's key order."""
    premises, structure = final_of(results, PREMISES), final_of(results, STRUCTURE)
    boxes = final_of(results, GROUNDING).get("b_box") or []
    released = source is not None and "visual_premises" in source
    given = (source.get("b_box") or [{}])[0] if released else {}
    box_keys = tuple(k for k in given if k in BOX_KEYS) if set(given) == set(BOX_KEYS) else BOX_KEYS
    annotated = {
        "visual_premises": list(premises.get("visual_premises") or []),
        "conclusion": structure.get("conclusion") or "",
        "b_box": [{k: b[k] for k in box_keys} for b in boxes],
        "commonsense_premises": list(structure.get("commonsense_premises") or []),
        "reasoning_steps": list(structure.get("reasoning_steps") or []),
    }
    if not released:
        return {"url": (source or item).get("url") or item.get("image"), **annotated}
    record = {k: annotated.get(k, v) for k, v in source.items()}
    for key in RELEASE_KEYS:  # annotated now, absent from the record as it came
        if key not in record and annotated.get(key):
            record[key] = annotated[key]
    return record


def coco_boxes(item: Mapping[str, Any], results: Mapping[str, Any], source: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    record = published_record(item, results, source)
    return [
        {"bbox": [b["startX"], b["startY"], b["w"], b["h"]], "attributes": {"vp": n, "premise": premise}}
        for n, (premise, b) in enumerate(zip(record["visual_premises"], record.get("b_box") or []), 1)
    ]


def image_path(item: Mapping[str, Any], source: Mapping[str, Any] | None = None) -> str:
    """The file name of an item's image in the export: its relative path, or a URL's file name."""
    ref = str((source or item).get("url") or item.get("image") or "")
    if "://" in ref:
        return PurePosixPath(urlsplit(ref).path).name
    return ref.lstrip("/")


@register
class VisArgs(Dataset):
    name = "visargs"
    title = "VisArgs"
    description = "Visual arguments: visual premises, reasoning tree and conclusion, and a box per premise."
    item_schema = VisArgsItem
    image_fields = ("/image",)
    workflows = (VisArgsPremises, VisArgsStructure, VisArgsGrounding)
    demos = demo.DEMOS
    producers = producers.PRODUCERS
    drafts = DRAFTS
    probes = (PROBE, STRUCTURE_PROBE, GROUNDING_PROBE)
    # The release: annotation.json, an array of records (one row per image with
    # `datasets.load_dataset("json")`). Its raw bytes are not public; the README shows a record
    # indented by 4, which `json.dump(records, f, indent=4)` writes.
    published_layout = "json"
    published_path = "{split}/annotation.json"
    release_style = JsonStyle(indent=4, ensure_ascii=True)
    export_image_columns = ("image",)
    # The Hub card's (commented-out) features, in its order.
    parquet_columns = ("visual_premises", "conclusion", "b_box", "commonsense_premises", "url", "reasoning_steps")
    boxes = BoxExport(categories=[{"id": 1, "name": "visual premise", "supercategory": "premise"}], boxes=coco_boxes, file_name=image_path)

    def export_record(self, item, results, source=None):
        return published_record(item, results, source)

    def export_files(self, item, assets, results, source=None):
        """The stored image beside annotation.json at the record's path (a URL's file name for a URL)."""
        path = image_path(item, source)
        parts = PurePosixPath(path).parts
        if assets.get("/image") and path and ".." not in parts:
            return {path: assets["/image"]}
        return {}

    def export_images(self, item, assets, results, source=None):
        return {"image": assets.get("/image")}


@register
class VisArgsConclusions(Dataset):
    name = "visargs_equivalence"
    title = "VisArgs conclusion pairs"
    description = "Pairs of annotators' conclusions, judged equivalent or not (for agreement studies)."
    item_schema = EquivalenceItem
    image_fields = ("/image",)  # optional: the judge sees the image the conclusions are about
    workflows = (VisArgsEquivalence,)
