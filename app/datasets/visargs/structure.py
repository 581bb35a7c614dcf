"""visargs.structure: the commonsense premises, the conclusion (or discard the image when it is
wrong) and the reasoning tree, checked live by `argtree`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.datasets.workflow import Equivalence, StageConfig, Workflow, image_urls
from app.datasets.visargs.argtree import (
    parse_steps,
    print_step,
    render_tree,
    validate_tree,
)
from app.datasets.visargs.schema import (
    ARGUMENT_KIND,
    EQUIVALENCE,
    MAX_PREMISES,
    PREMISES,
    SPARE_ROWS,
    STRUCTURE,
    ArgumentSuggestion,
    as_list,
    clean,
    premises_of,
    row_indices,
    truthy,
)


class StructureConfig(StageConfig):
    unused_premises: Literal["error", "warning"] = Field(
        default="error", description="a premise the reasoning tree leaves out is an error or a warning"
    )


class StructureAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    commonsense_premises: list[str] = Field(default_factory=list, max_length=MAX_PREMISES)
    conclusion: str = Field(default="", max_length=2000)
    reasoning_steps: list[str] = Field(default_factory=list, max_length=MAX_PREMISES)
    discard: bool = False


def structure_from_form(form: Mapping[str, Any]) -> dict[str, Any]:
    """Commonsense premises cp_<i> (numbered by row), the conclusion, and step rows
    step_in_<i> (chips), step_out_<i>, step_text_<i>, printed in the published syntax."""
    cps = [clean(form.get(f"cp_{i}")) for i in row_indices(form, "cp_")]
    while cps and not cps[-1]:
        cps.pop()
    steps = []
    for i in row_indices(form, "step_text_") or row_indices(form, "step_out_"):
        inputs = [x for x in as_list(form.get(f"step_in_{i}")) if x]
        text = clean(form.get(f"step_text_{i}"))
        output = clean(form.get(f"step_out_{i}"))
        if not inputs and not text:
            continue
        steps.append(f"({', '.join(inputs)} -> {output or '?'}): {text}")
    return {
        "commonsense_premises": cps,
        "conclusion": clean(form.get("conclusion")),
        "reasoning_steps": steps,
        "discard": truthy(form.get("discard")),
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


def _folded(value: Any) -> Any:
    """A text, or each text of a list, with case and spacing folded."""
    return [clean(v).lower() for v in value or []] if isinstance(value, list) else clean(value).lower()


def _argument_parts(payload: Mapping[str, Any]) -> set[tuple[str, str]]:
    """An argument's parts as a set: ("cp", text), ("conclusion", text) and ("step", text), each folded."""
    parts = {("cp", t) for t in _folded(payload.get("commonsense_premises"))} | {("step", t) for t in _folded(payload.get("reasoning_steps"))}
    return parts | ({("conclusion", _folded(payload.get("conclusion")))} if clean(payload.get("conclusion")) else set())


def _trailing_dropped(rows: list[dict[str, Any]], empty) -> list[dict[str, Any]]:
    while rows and empty(rows[-1]):
        rows = rows[:-1]
    return rows


class VisArgsStructure(Workflow):
    name = STRUCTURE
    title = "VisArgs: commonsense premises, conclusion and reasoning tree"
    description = "Write the commonsense premises, check the conclusion, and build the reasoning tree."
    annotation_schema = StructureAnnotation
    config_schema = StructureConfig
    template = "datasets/visargs/structure.html"
    view_template = "datasets/visargs/structure_view.html"
    requires = PREMISES
    # Conclusions worded differently can still be equivalent: reviewers judge pairs in visargs.equivalence.
    equivalence = Equivalence(field="conclusion", judge=EQUIVALENCE)
    facets = {"discard": "nominal", "conclusion (same words)": "nominal"}
    # A model's drafted argument (app.datasets.visargs.drafts) replaces the record's candidates.
    suggestion_kinds = (ARGUMENT_KIND,)
    suggestion_schemas = {ARGUMENT_KIND: ArgumentSuggestion}
    has_live_check = True
    keys_help = (
        "the drafted step concluding C has the focus, else the first step without inputs (the conclusion, when there is none yet) · in a step's chips: "
        "A takes every premise no step uses yet, 1–9 tick VP1–VP9, Shift+1–9 CP1–CP9, ←/→ walk the chips, Space ticks, "
        "↑/↓ go to the step above or below · Tab goes chips → concludes → text → next step · a step concludes C when it "
        "is the last, its own IC otherwise, and says the conclusion until you write its text · ↑/↓ in a text go to the "
        "row above or below · Z shows the image full size · the check beside the image updates as you go · Enter submits · "
        "S skips"
    )

    def form_to_payload(self, form):
        return structure_from_form(form)

    def payload_values(self, ctx, payload):
        return structure_values(
            payload.get("commonsense_premises") or [], payload.get("conclusion") or "",
            payload.get("reasoning_steps") or [], discard=bool(payload.get("discard")),
        )

    def check(self, ctx, payload):
        if payload.discard:
            return []
        vps = premises_of(ctx.results)
        problems = [] if payload.conclusion else ["Write the conclusion, or mark it wrong to discard the image."]
        _, messages, tree = _structure_problems(vps, payload.model_dump(), ctx.config)
        return problems + messages + tree.errors

    def is_discard(self, payload):
        return bool(payload.get("discard"))

    def facet_values(self, payload):
        return {"discard": bool(payload.get("discard")), "conclusion (same words)": clean(payload.get("conclusion")).lower() or None}

    def screen_context(self, ctx, values):
        vps = premises_of(ctx.results)
        # A refused form posts its empty spare rows back: trailing empty rows are dropped before the
        # spares are added again, so the rows (and the IC chips) do not grow with every refusal.
        cp_rows = _trailing_dropped(
            [{"index": i, "text": str(values.get(f"cp_{i}") or "")} for i in row_indices(values, "cp_")],
            lambda r: not r["text"].strip(),
        )
        start = max([r["index"] for r in cp_rows], default=-1) + 1
        cp_rows += [{"index": i, "text": ""} for i in range(start, start + SPARE_ROWS)]
        step_ids = row_indices(values, "step_text_")
        step_rows = [
            {
                "index": i,
                "inputs": set(as_list(values.get(f"step_in_{i}"))),
                "output": str(values.get(f"step_out_{i}") or ""),
                "text": str(values.get(f"step_text_{i}") or ""),
            }
            for i in step_ids
        ]
        step_rows = _trailing_dropped(step_rows, lambda r: not r["inputs"] and not r["output"] and not r["text"].strip())
        start = max([r["index"] for r in step_rows], default=-1) + 1
        step_rows += [{"index": i, "inputs": set(), "output": "", "text": ""} for i in range(start, start + SPARE_ROWS)]
        n_ic = max(len(step_rows), 1)
        # Work starts on the conclusion when there is none yet, else on the step concluding C when the
        # draft has one (A there adds the premises the draft leaves out: the tree stays valid, where a
        # second step would conclude C as well), else on the first step without inputs.
        concludes_c = [st["index"] for st in step_rows if st["output"] == "C" and st["inputs"]]
        focus = concludes_c[0] if concludes_c else next((st["index"] for st in step_rows if not st["inputs"]), step_rows[0]["index"])
        if not clean(values.get("conclusion")):
            focus = "conclusion"
        drafted = ctx.suggestions.get(ARGUMENT_KIND)
        return {
            "drafted_by": f"{drafted.model} {drafted.model_version}".strip() if drafted else None,
            "focus": focus,
            "image": image_urls(ctx.item.get("image"), ctx.assets.get("/image")),
            "vps": vps,
            "cp_rows": cp_rows,
            "step_rows": step_rows,
            "outputs": [f"IC{k}" for k in range(1, n_ic + 1)] + ["C"],
            "ics": [f"IC{k}" for k in range(1, n_ic + 1)],
        }

    def initial_values(self, ctx):
        drafted = ctx.suggestions.get(ARGUMENT_KIND)
        if drafted:
            p = drafted.payload
            return structure_values(p.get("commonsense_premises") or [], p.get("conclusion") or "", p.get("reasoning_steps") or [])
        return structure_values(
            ctx.item.get("candidate_commonsense") or [], ctx.item.get("candidate_conclusion") or "", ctx.item.get("candidate_steps") or []
        )

    def suggestion_outcome(self, ctx, kind, suggestion, payload):
        """A drafted argument: accepted when stored as drafted (spacing aside), rejected when the image was
        discarded or nothing of it was kept, edited otherwise."""
        if kind != ARGUMENT_KIND:
            return None
        if payload.get("discard"):
            return "rejected"
        parts = ("commonsense_premises", "conclusion", "reasoning_steps")
        same = [_folded(payload.get(k)) == _folded(suggestion.get(k)) for k in parts]
        if all(same):
            return "accepted"
        kept = set(_folded(payload.get("commonsense_premises"))) & set(_folded(suggestion.get("commonsense_premises")))
        return "edited" if any(same) or kept else "rejected"

    def suggestion_distance(self, ctx, kind, suggestion, payload):
        """A drafted argument: the Jaccard distance between its parts and the answer's (each commonsense premise,
        the conclusion and each step, case and spacing aside); 1 when the image was discarded."""
        if kind != ARGUMENT_KIND:
            return None
        drafted, given = _argument_parts(suggestion), set() if payload.get("discard") else _argument_parts(payload)
        union = drafted | given
        return 1 - len(drafted & given) / len(union) if union else 0.0

    def live_check(self, ctx, values):
        vps = premises_of(ctx.results)
        payload = structure_from_form(values)
        steps, messages, tree = _structure_problems(vps, payload, ctx.config)
        return {
            "messages": messages + tree.errors,
            "warnings": tree.warnings,
            "ok": not messages and tree.ok and bool(payload["conclusion"]),
            "no_conclusion": not payload["conclusion"],
            "tree": render_tree(steps, vps, payload["commonsense_premises"]),
            "conclusion": payload["conclusion"],
            "printed": [print_step(s) for s in steps],
        }

    def view_item(self, ctx):
        return {"image": image_urls(ctx.item.get("image"), ctx.assets.get("/image")), "vps": premises_of(ctx.results)}

    def view_answer(self, ctx, payload, kind=None):
        cps = list(payload.get("commonsense_premises") or [])
        steps, _ = parse_steps(list(payload.get("reasoning_steps") or []))
        return {
            "discard": bool(payload.get("discard")),
            "conclusion": payload.get("conclusion") or "",
            "cps": cps,
            "tree": render_tree(steps, premises_of(ctx.results), cps),
            "steps": list(payload.get("reasoning_steps") or []),
        }
