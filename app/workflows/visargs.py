"""VisArgs: the visual premises of an image's argument, its reasoning tree, and one box per premise.

Three stages: `visargs.premises` (keep, edit, split, add and order the visual premises a model
drafted, or discard the image), `visargs.structure` (commonsense premises, the conclusion and
the reasoning tree, checked live by `argtree`), and `visargs.grounding` (one tight box per
visual premise, in pixels of the stored image). `visargs.equivalence` (in `visargs_boxes`,
with grounding) records whether two conclusions say the same thing, for agreement studies. The
export mapping gives the published `annotation.json` record.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.workflows.argtree import (
    Step,
    parse_steps,
    print_step,
    render_tree,
    validate_tree,
)
from app.workflows.base import Consolidation, ItemBase, Workflow, image_urls
from app.workflows.registry import register

PREMISES = "visargs.premises"
STRUCTURE = "visargs.structure"
GROUNDING = "visargs.grounding"
EQUIVALENCE = "visargs.equivalence"
# Suggestion kind the grounding screen reads: payload {"boxes": [{"vp": index, "startX", "startY", "w", "h"}]}.
BOX_KIND = "visargs.boxes"
# The same payload from an image-text model: the best-matching region per premise, with its score.
REGION_KIND = "visargs.regions"
MAX_PREMISES = 40
SPARE_ROWS = 2  # empty rows a form without JavaScript offers for additions


class Box(BaseModel):
    model_config = ConfigDict(extra="forbid")

    startX: int = Field(ge=0)  # noqa: N815 - the published field names
    startY: int = Field(ge=0)  # noqa: N815
    w: int = Field(ge=1)
    h: int = Field(ge=1)


class VisArgsItem(ItemBase):
    image: str = Field(min_length=1)
    url: str | None = None
    candidate_premises: list[str] = Field(default_factory=list, max_length=MAX_PREMISES)
    candidate_commonsense: list[str] = Field(default_factory=list, max_length=MAX_PREMISES)
    candidate_conclusion: str = ""
    candidate_steps: list[str] = Field(default_factory=list, max_length=MAX_PREMISES)
    candidate_boxes: list[Box] = Field(default_factory=list, max_length=MAX_PREMISES)

    @model_validator(mode="before")
    @classmethod
    def _published_record(cls, data: Any) -> Any:
        """A record of the published annotation.json: its fields become the drafts to re-annotate."""
        if not isinstance(data, dict) or "visual_premises" not in data:
            return data
        data = dict(data)
        renames = {
            "visual_premises": "candidate_premises",
            "commonsense_premises": "candidate_commonsense",
            "conclusion": "candidate_conclusion",
            "reasoning_steps": "candidate_steps",
            "b_box": "candidate_boxes",
        }
        for old, new in renames.items():
            if old in data:
                data.setdefault(new, data.pop(old))
        if data.get("url"):
            data.setdefault("image", data["url"])
            data.setdefault("id", PurePosixPath(str(data["url"]).split("?")[0]).stem)
        return data

    @field_validator("candidate_steps")
    @classmethod
    def _steps_parse(cls, value: list[str]) -> list[str]:
        _, errors = parse_steps(value)
        if errors:
            raise ValueError("; ".join(errors))
        return value


def _clean(text: Any) -> str:
    return " ".join(str(text or "").split())


def row_indices(form: Mapping[str, Any], prefix: str) -> list[int]:
    found = set()
    for key in form:
        m = re.fullmatch(re.escape(prefix) + r"(\d+)", key)
        if m:
            found.add(int(m.group(1)))
    return sorted(found)


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _truthy(value: Any) -> bool:
    return str(value).lower() in ("on", "true", "1", "yes")


def final_of(results: Mapping[str, Any], name: str) -> dict[str, Any]:
    return results.get(name) or {}


# -- premises ---------------------------------------------------------------------------


class PremisesAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    visual_premises: list[str] = Field(max_length=MAX_PREMISES)
    discard: bool = False

    @field_validator("visual_premises")
    @classmethod
    def _clean_all(cls, value: list[str]) -> list[str]:
        return [_clean(v) for v in value]


def premise_rows(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The premise rows of a form (text_<i>, keep_<i>, pos_<i>) in their shown order."""
    rows = []
    for i in row_indices(values, "text_"):
        try:
            pos = float(values.get(f"pos_{i}", i))
        except (TypeError, ValueError):
            pos = float(i)
        rows.append({"index": i, "text": str(values.get(f"text_{i}") or ""), "keep": _truthy(values.get(f"keep_{i}")), "pos": pos})
    rows.sort(key=lambda r: (r["pos"], r["index"]))
    return rows


class VisArgsExport:
    """The VisArgs release: {split}/annotation.json keyed by id, the images at their `url`, and
    COCO boxes (one per visual premise)."""

    published_layout = "annotation.json"
    export_image_columns = ("image",)
    coco_categories = [{"id": 1, "name": "visual premise", "supercategory": "premise"}]

    def export_record(self, item, results):
        return published_record(item, results)

    def export_files(self, item, assets, results):
        path = str(item.get("url") or item.get("image") or "")
        if assets.get("/image") and path and "://" not in path and not path.startswith("/"):
            return {path: assets["/image"]}
        return {}

    def export_images(self, item, assets, results):
        return {"image": assets.get("/image")}

    def coco_boxes(self, item, results) -> list[dict[str, Any]]:
        record = published_record(item, results)
        return [
            {"bbox": [b["startX"], b["startY"], b["w"], b["h"]], "attributes": {"vp": n, "premise": premise}}
            for n, (premise, b) in enumerate(zip(record["visual_premises"], record["b_box"]), 1)
        ]


@register
class VisArgsPremises(VisArgsExport, Workflow):
    name = PREMISES
    title = "VisArgs: choose and fix the visual premises"
    description = "Keep, edit, split, add and order the visual premises a model drafted; discard unusable images."
    item_schema = VisArgsItem
    annotation_schema = PremisesAnnotation
    template = "workflows/visargs_premises.html"
    image_fields = ("/image",)
    follow_on = (STRUCTURE, GROUNDING)
    keys_help = (
        "typing in a premise keeps it; Space on its keep box keeps or drops it · ↑/↓ move between premises · "
        "Ctrl+Enter splits at the caret · "
        "Alt+↑/↓ moves a premise · N adds one · D discards the image · Enter submits · S skips"
    )

    def form_to_payload(self, form):
        kept = [_clean(r["text"]) for r in premise_rows(form) if r["keep"] and _clean(r["text"])]
        return {"visual_premises": kept, "discard": _truthy(form.get("discard"))}

    def payload_values(self, payload, item, config, results):
        values: dict[str, Any] = {"discard": "on"} if payload.get("discard") else {}
        for i, text in enumerate(payload.get("visual_premises") or []):
            values.update({f"text_{i}": text, f"pos_{i}": str(i), f"keep_{i}": "on"})
        return values

    def check(self, item, payload, config, results):
        if payload.discard:
            return []
        problems = []
        if not payload.visual_premises:
            problems.append("Keep or add at least one visual premise, or discard the image.")
        seen: dict[str, int] = {}
        for n, text in enumerate(payload.visual_premises, 1):
            if not text:
                problems.append(f"Visual premise {n} is empty.")
            key = text.lower()
            if key in seen:
                problems.append(f"Visual premises {seen[key]} and {n} are the same.")
            seen.setdefault(key, n)
        return problems

    def is_discard(self, payload):
        return bool(payload.get("discard"))

    def compare(self, a, b):
        """Jaccard of the two premise sets, exact after case and space normalisation."""
        sa_, sb = ({_clean(t).lower() for t in p.get("visual_premises") or []} for p in (a, b))
        return 1.0 if not sa_ and not sb else len(sa_ & sb) / len(sa_ | sb)

    def agreement_facets(self):
        return {"discard": "nominal", "visual premises": "set"}

    def facet_values(self, payload):
        return {"discard": bool(payload.get("discard")), "visual premises": None if payload.get("discard") else payload.get("visual_premises")}

    def consolidate(self, payloads, config):
        if not payloads:
            return Consolidation(final=None, needs_review=True)
        keys = [(bool(p.get("discard")), frozenset(_clean(t).lower() for t in p.get("visual_premises") or [])) for p in payloads]
        best, count = Counter(keys).most_common(1)[0]
        if count * 2 > len(payloads):
            final = payloads[keys.index(best)]
            return Consolidation(final=final, discard=self.is_discard(final))
        return Consolidation(final=None, needs_review=True)

    def screen_context(self, item, config, *, assets, results, suggestions, values):
        rows = premise_rows(values)
        next_index = max([r["index"] for r in rows], default=-1) + 1
        return {
            "image": image_urls(item.get("image"), assets.get("/image")),
            "rows": rows,
            "spares": list(range(next_index, next_index + SPARE_ROWS)),
        }

    def initial_values(self, item, config, *, results, suggestions):
        accept = bool(config.get("accept_candidates", False))
        values: dict[str, Any] = {}
        for i, text in enumerate(item.get("candidate_premises") or []):
            values[f"text_{i}"] = text
            values[f"pos_{i}"] = str(i)
            if accept:
                values[f"keep_{i}"] = "on"
        return values



# -- structure ------------------------------------------------------------------------------


class StructureAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    commonsense_premises: list[str] = Field(default_factory=list, max_length=MAX_PREMISES)
    conclusion: str = Field(default="", max_length=2000)
    reasoning_steps: list[str] = Field(default_factory=list, max_length=MAX_PREMISES)
    discard: bool = False


def structure_from_form(form: Mapping[str, Any]) -> dict[str, Any]:
    """Commonsense premises cp_<i> (numbered by row), the conclusion, and step rows
    step_in_<i> (chips), step_out_<i>, step_text_<i>, printed in the published syntax."""
    cps = [_clean(form.get(f"cp_{i}")) for i in row_indices(form, "cp_")]
    while cps and not cps[-1]:
        cps.pop()
    steps = []
    for i in row_indices(form, "step_text_") or row_indices(form, "step_out_"):
        inputs = [x for x in _as_list(form.get(f"step_in_{i}")) if x]
        text = _clean(form.get(f"step_text_{i}"))
        output = _clean(form.get(f"step_out_{i}"))
        if not inputs and not text:
            continue
        steps.append(f"({', '.join(inputs)} -> {output or '?'}): {text}")
    return {
        "commonsense_premises": cps,
        "conclusion": _clean(form.get("conclusion")),
        "reasoning_steps": steps,
        "discard": _truthy(form.get("discard")),
    }


def structure_values(cps: list[str], conclusion: str, steps: list[str], *, discard: bool = False) -> dict[str, Any]:
    """Form values showing commonsense premises, a conclusion and steps (structure_from_form's inverse)."""
    values: dict[str, Any] = {"conclusion": conclusion}
    if discard:
        values["discard"] = "on"
    for i, text in enumerate(cps):
        values[f"cp_{i}"] = text
    parsed, _ = parse_steps(list(steps))
    for i, step in enumerate(parsed):
        values[f"step_in_{i}"] = list(step.inputs)
        values[f"step_out_{i}"] = step.output
        values[f"step_text_{i}"] = step.text
    return values


def _structure_problems(vps: list[str], payload: Mapping[str, Any], config: Mapping[str, Any]):
    cps = payload.get("commonsense_premises") or []
    steps, syntax = parse_steps(list(payload.get("reasoning_steps") or []))
    empty = [f"Commonsense premise {n} is empty: write it, or delete it." for n, t in enumerate(cps, 1) if not t]
    check = validate_tree(steps, len(vps), len(cps), unused=config.get("unused_premises", "error"))
    return steps, syntax + empty, check


@register
class VisArgsStructure(VisArgsExport, Workflow):
    name = STRUCTURE
    title = "VisArgs: commonsense premises, conclusion and reasoning tree"
    description = "Write the commonsense premises, check the conclusion, and build the reasoning tree."
    item_schema = VisArgsItem
    annotation_schema = StructureAnnotation
    template = "workflows/visargs_structure.html"
    requires = PREMISES
    # Conclusions worded differently may still agree: reviewers judge pairs in visargs.equivalence.
    equivalence_field = "conclusion"
    keys_help = "click the chips to choose a step's inputs · the check below updates as you type · Enter submits"

    def form_to_payload(self, form):
        return structure_from_form(form)

    def payload_values(self, payload, item, config, results):
        return structure_values(
            payload.get("commonsense_premises") or [], payload.get("conclusion") or "",
            payload.get("reasoning_steps") or [], discard=bool(payload.get("discard")),
        )

    def check(self, item, payload, config, results):
        if payload.discard:
            return []
        vps = final_of(results, PREMISES).get("visual_premises") or []
        problems = [] if payload.conclusion else ["Write the conclusion, or mark it wrong to discard the image."]
        _, messages, tree = _structure_problems(vps, payload.model_dump(), config)
        return problems + messages + tree.errors

    def is_discard(self, payload):
        return bool(payload.get("discard"))

    def compare(self, a, b):
        return 1.0 if _clean(a.get("conclusion")).lower() == _clean(b.get("conclusion")).lower() else 0.0

    def agreement_facets(self):
        # Conclusions worded differently can still be equivalent: visargs.equivalence judges that.
        return {"discard": "nominal", "conclusion (same words)": "nominal"}

    def facet_values(self, payload):
        return {"discard": bool(payload.get("discard")), "conclusion (same words)": _clean(payload.get("conclusion")).lower() or None}

    def screen_context(self, item, config, *, assets, results, suggestions, values):
        vps = final_of(results, PREMISES).get("visual_premises") or []
        cp_rows = [{"index": i, "text": str(values.get(f"cp_{i}") or "")} for i in row_indices(values, "cp_")]
        start = max([r["index"] for r in cp_rows], default=-1) + 1
        cp_rows += [{"index": i, "text": ""} for i in range(start, start + SPARE_ROWS)]
        step_ids = row_indices(values, "step_text_")
        step_rows = [
            {
                "index": i,
                "inputs": set(_as_list(values.get(f"step_in_{i}"))),
                "output": str(values.get(f"step_out_{i}") or ""),
                "text": str(values.get(f"step_text_{i}") or ""),
            }
            for i in step_ids
        ]
        start = max(step_ids, default=-1) + 1
        step_rows += [{"index": i, "inputs": set(), "output": "", "text": ""} for i in range(start, start + SPARE_ROWS)]
        n_ic = max(len(step_rows), 1)
        return {
            "image": image_urls(item.get("image"), assets.get("/image")),
            "vps": vps,
            "cp_rows": cp_rows,
            "step_rows": step_rows,
            "outputs": [f"IC{k}" for k in range(1, n_ic + 1)] + ["C"],
            "ics": [f"IC{k}" for k in range(1, n_ic + 1)],
        }

    def initial_values(self, item, config, *, results, suggestions):
        return structure_values(
            item.get("candidate_commonsense") or [], item.get("candidate_conclusion") or "", item.get("candidate_steps") or []
        )

    def live_check(self, item, values, config, results):
        vps = final_of(results, PREMISES).get("visual_premises") or []
        payload = structure_from_form(values)
        steps, messages, tree = _structure_problems(vps, payload, config)
        return {
            "messages": messages + tree.errors,
            "warnings": tree.warnings,
            "ok": not messages and tree.ok and bool(payload["conclusion"]),
            "no_conclusion": not payload["conclusion"],
            "tree": render_tree(steps, vps, payload["commonsense_premises"]),
            "conclusion": payload["conclusion"],
            "printed": [print_step(s) for s in steps],
        }



# -- the published record ------------------------------------------------------------------------


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
