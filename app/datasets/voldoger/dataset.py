"""The VOLDOGER dataset: one verification stage over stylised rows joined with their originals,
and its published release — the stylised rows with the verified labels and paraphrases (discarded
images left out), in the release's `json.dump(rows, f, indent=4)` layout, and the check log of
every label the LLM changed in the authors' fields."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Literal

from pydantic import Field

from app.datasets.dataset import Chart, Dataset, ItemBase, JsonStyle
from app.datasets.registry import register
from app.datasets.voldoger import demo
from app.datasets.voldoger.drafts import DRAFTS
from app.datasets.voldoger.release import (
    LABEL_FIELD,
    LABELS,
    STYLES,
    TASK_NAMES,
    TEXT_FIELD,
    flipped,
    label_text,
    labels,
)
from app.datasets.voldoger.verify import VERIFY, VoldogerVerify
from app.errors import Invalid

# Fields a row must have to be checked, by task: (original row, stylised row).
REQUIRED = {
    "cap": (("image_id", "captions"), ("image_id", "caption")),
    "vqa": (("image_id", "question_id", "question", "answer"), ("image_id", "question_id", "question", "answer")),
    "ve": (("image_id", "premise", "hypothesis", "label"), ("image_id", "hypothesis", "label")),
}


class VoldogerItem(ItemBase):
    """One stylised row of the release joined with its original row (see `release.join`)."""

    task: Literal["cap", "vqa", "ve"]
    style: Literal["cartoon", "pencil", "oil"]
    original: dict[str, Any]
    stylised: dict[str, Any]
    original_image: str = Field(min_length=1)
    stylised_image: str = Field(min_length=1)


def _row_problems(item: VoldogerItem) -> list[str]:
    problems = []
    for part, required in zip(("original", "stylised"), REQUIRED[item.task], strict=True):
        row = getattr(item, part)
        for key in required:
            if row.get(key) in (None, ""):
                problems.append(f"field '{part}.{key}': required in a {TASK_NAMES[item.task]} row")
    if problems:
        return problems
    if item.original["image_id"] != item.stylised["image_id"]:
        problems.append(f"field 'stylised.image_id': {item.stylised['image_id']} is not the original's {item.original['image_id']}")
    if item.task == "vqa" and str(item.original["question_id"]) != str(item.stylised["question_id"]):
        problems.append("field 'stylised.question_id': not the original row's question_id")
    if item.task == "cap" and not (isinstance(item.original["captions"], list) and all(isinstance(c, str) for c in item.original["captions"])):
        problems.append("field 'original.captions': a list of captions is required")
    for part in ("original", "stylised"):
        field = LABEL_FIELD.get(item.task)
        row = getattr(item, part)
        if field and label_text(item.task, row[field]) not in {v for v, _ in LABELS[item.task]}:
            problems.append(f"field '{part}.{field}': {row[field]!r} is not one of {', '.join(v for v, _ in LABELS[item.task])}")
        if item.task == "ve" and field and isinstance(row[field], bool):
            problems.append(f"field '{part}.{field}': a number 0, 1 or 2 is required")
    return problems


@register
class Voldoger(Dataset):
    name = "voldoger"
    title = "VOLDOGER"
    description = "Check stylised (cartoon, pencil, oil) captioning / VQA / VE data: the image, the LLM's label and its paraphrase."
    item_schema = VoldogerItem
    image_fields = ("/original_image", "/stylised_image")
    workflows = (VoldogerVerify,)
    breakdown = ("task", "style")
    demos = demo.DEMOS
    drafts = DRAFTS
    # The release's files are `json.dump(rows, f, indent=4)`: an array, 4-space indent, ASCII, no final newline.
    published_layout = "json"
    published_path = "{split}.json"
    release_style = JsonStyle(indent=4, ensure_ascii=True, final_newline=False)
    # The core writes a log line by line in `release_style`: with indent 4 that is one indented object per
    # changed label, one after another (a stream of JSON values, not JSON Lines; see docs/datasets/voldoger.md).
    export_log_name = "check_log.jsonl"

    def parse_item(self, record, config):
        item = super().parse_item(record, config)
        problems = _row_problems(item)
        if problems:
            raise Invalid("; ".join(problems))
        return item

    # -- the published export ----------------------------------------------------------
    def export_record(self, item, results, source=None):
        """The stylised row as it came, with the verified label (in the row's own type) and paraphrase."""
        task = item["task"]
        row = dict((source or item)["stylised"])
        final = results.get(VERIFY) or {}
        field = LABEL_FIELD.get(task)
        if field and final.get("label") is not None and final["label"] != label_text(task, row.get(field)):
            row[field] = int(final["label"]) if task == "ve" else final["label"]
        if final.get("paraphrase") == "edit" and final.get("text"):
            row[TEXT_FIELD[task]] = final["text"]
        return row

    def export_log(self, item, results, source=None):
        """The authors' check log: every label the LLM changed, judged acceptable (flag true) or not."""
        task = item["task"]
        record = source or item
        original, stylised = record["original"], record["stylised"]
        final = results.get(VERIFY)
        if not final or final.get("image") != "keep" or not flipped(task, original, stylised):
            return None
        field = LABEL_FIELD[task]
        return {
            "image_id": stylised["image_id"],
            "question": stylised[TEXT_FIELD[task]],
            "ori_answer": original[field],
            "style_answer": stylised[field],
            "flag": final.get("label") == label_text(task, stylised[field]),
            "comment": final.get("note") or "",
        }

    # -- figures ----------------------------------------------------------------
    def charts(self, finished):
        """Per style and task: the LLM's label changes people accepted or rejected; labels before
        and after stylising (the LLM's, and the verified ones); images kept or discarded."""
        changes: dict[tuple[str, str], Counter] = defaultdict(Counter)
        shift: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
        images: dict[tuple[str, str], Counter] = defaultdict(Counter)
        for row in finished:
            data = row.data
            task, style = data["task"], data["style"]
            final = (row.results or {}).get(VERIFY)
            if final is None:
                continue  # passed by the route: nobody checked it
            images[(task, style)][final.get("image")] += 1
            if task not in LABEL_FIELD or final.get("image") != "keep":
                continue
            before, after = labels(task, data["original"], data["stylised"])
            if before != after:
                changes[(task, style)]["accepted" if final.get("label") == after else "rejected"] += 1
            shift[(task, style, "original")][before] += 1
            shift[(task, style, "LLM")][after] += 1
            shift[(task, style, "verified")][final.get("label")] += 1
        order = [(t, s) for t in ("vqa", "ve", "cap") for s in STYLES]
        charts = []
        if changes:
            charts.append(Chart(
                "LLM label changes people accepted, by task and style",
                ("accepted", "rejected"),
                [(f"{TASK_NAMES[t]} · {s}", (changes[(t, s)]["accepted"], changes[(t, s)]["rejected"])) for t, s in order if (t, s) in changes],
                kind="stacked",
                note="The authors found under 20% of the LLM's VQA label changes unacceptable.",
            ))
        for task in ("vqa", "ve"):
            rows = [(f"{style} · {stage}", tuple(shift[(task, style, stage)][v] for v, _ in LABELS[task]))
                    for style in STYLES for stage in ("original", "LLM", "verified") if (task, style, stage) in shift]
            if rows:
                charts.append(Chart(f"{TASK_NAMES[task]} labels: original, LLM's and verified, by style",
                                    tuple(n for _, n in LABELS[task]), rows, kind="stacked"))
        if images:
            charts.append(Chart("Stylised images kept or discarded, by task and style", ("keep", "discard"),
                                [(f"{TASK_NAMES[t]} · {s}", (images[(t, s)]["keep"], images[(t, s)]["discard"])) for t, s in order if (t, s) in images],
                                kind="stacked"))
        return charts
