"""The VisArgs dataset: premises -> structure -> grounding, and its published release —
{split}/annotation.json keyed by id, the images at their `url`, and COCO boxes (one per visual
premise). Also the companion dataset of conclusion pairs judged for equivalence."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.datasets.dataset import BoxExport, Dataset
from app.datasets.registry import register
from app.datasets.visargs import demo, producers
from app.datasets.visargs.argtree import Step, parse_steps, print_step
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


def published_record(item: Mapping[str, Any], results: Mapping[str, Any]) -> dict[str, Any]:
    """The record of VisArgs' annotation.json: premises in box order, steps in the published syntax."""
    premises = final_of(results, PREMISES)
    structure = final_of(results, STRUCTURE)
    steps, _ = parse_steps(list(structure.get("reasoning_steps") or []))
    return {
        "url": item.get("url") or item.get("image"),
        "visual_premises": list(premises.get("visual_premises") or []),
        "commonsense_premises": list(structure.get("commonsense_premises") or []),
        "conclusion": structure.get("conclusion") or "",
        "reasoning_steps": [print_step(Step(s.inputs, s.output, s.text)) for s in steps],
        # Stored JSON does not keep key order; the published order is startX, startY, w, h.
        "b_box": [{k: b[k] for k in ("startX", "startY", "w", "h")} for b in final_of(results, GROUNDING).get("b_box") or []],
    }


def coco_boxes(item: Mapping[str, Any], results: Mapping[str, Any]) -> list[dict[str, Any]]:
    record = published_record(item, results)
    return [
        {"bbox": [b["startX"], b["startY"], b["w"], b["h"]], "attributes": {"vp": n, "premise": premise}}
        for n, (premise, b) in enumerate(zip(record["visual_premises"], record["b_box"]), 1)
    ]


@register
class VisArgs(Dataset):
    name = "visargs"
    title = "VisArgs"
    description = "Visual arguments: visual premises, reasoning tree and conclusion, and a box per premise."
    item_schema = VisArgsItem
    image_fields = ("/image",)
    tasks = (VisArgsPremises, VisArgsStructure, VisArgsGrounding)
    demos = demo.DEMOS
    producers = producers.PRODUCERS
    published_layout = "annotation.json"
    export_image_columns = ("image",)
    boxes = BoxExport(categories=[{"id": 1, "name": "visual premise", "supercategory": "premise"}], boxes=coco_boxes)

    def export_record(self, item, results):
        return published_record(item, results)

    def export_files(self, item, assets, results):
        path = str(item.get("url") or item.get("image") or "")
        if assets.get("/image") and path and "://" not in path and not path.startswith("/"):
            return {path: assets["/image"]}
        return {}

    def export_images(self, item, assets, results):
        return {"image": assets.get("/image")}


@register
class VisArgsConclusions(Dataset):
    name = "visargs_equivalence"
    title = "VisArgs conclusion pairs"
    description = "Pairs of annotators' conclusions, judged equivalent or not (for agreement studies)."
    item_schema = EquivalenceItem
    tasks = (VisArgsEquivalence,)
