"""The VOLDOGER release and vlcurate's import records.

The release (c-juhwan/multimodal_style_annotation) keeps, per task, the original rows
(`data/styleshift_{task}/original_{task}.json`) and the stylised rows of each style
(`{cartoon,pencil,oil}_{task}.json`), with the images of a style in a folder named after it under
the same file name as the photo. An import record joins one stylised row with its original row:

    {"id", "task", "style", "original": {original row}, "stylised": {stylised row},
     "original_image": "{original folder}/{image_id}", "stylised_image": "{style}/{image_id}"}

and `join` builds those records (pure: lists of dicts in, list of dicts out). Rows are joined by
`image_id` (VQA: and `question_id`); where the original file has several rows under one key (VE:
three hypotheses per photo), the k-th stylised row of that key joins the k-th original row.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from app.errors import Invalid

TASKS = ("cap", "vqa", "ve")
TASK_NAMES = {"cap": "captioning", "vqa": "VQA", "ve": "visual entailment"}
STYLES = ("cartoon", "pencil", "oil")
STYLE_NAMES = {"cartoon": "cartoon drawing", "pencil": "pencil drawing", "oil": "oil painting"}
DOMAIN_IDS = {"cartoon": 1, "pencil": 2, "oil": 3}
# The field a task's paraphrase is in, and its label (captioning has none).
TEXT_FIELD = {"cap": "caption", "vqa": "question", "ve": "hypothesis"}
LABEL_FIELD = {"vqa": "answer", "ve": "label"}
# Label values as the screen and payloads write them (text), with their names.
LABELS: dict[str, tuple[tuple[str, str], ...]] = {
    "cap": (),
    "vqa": (("yes", "yes"), ("no", "no")),
    "ve": (("0", "entailment"), ("1", "neutral"), ("2", "contradiction")),
}


def label_text(task: str, value: Any) -> str | None:
    """A row's label as payloads write it: VQA answers lower-cased, VE labels as digits."""
    if value is None or task not in LABEL_FIELD:
        return None
    if task == "ve" and isinstance(value, str) and value.strip().lower() in {n for _, n in LABELS["ve"]}:
        return next(v for v, n in LABELS["ve"] if n == value.strip().lower())
    return str(value).strip().lower()


def labels(task: str, original: Mapping[str, Any], stylised: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(original label, the LLM's label on the stylised image), as payloads write them."""
    field = LABEL_FIELD.get(task)
    if field is None:
        return None, None
    return label_text(task, original.get(field)), label_text(task, stylised.get(field))


def flipped(task: str, original: Mapping[str, Any], stylised: Mapping[str, Any]) -> bool:
    """Whether the LLM changed the label for the stylised image."""
    before, after = labels(task, original, stylised)
    return before is not None and after is not None and before != after


def _key(task: str, row: Mapping[str, Any]) -> tuple:
    return (row.get("image_id"), row.get("question_id")) if task == "vqa" else (row.get("image_id"),)


def _record(n: int, task: str, style: str, original: Mapping[str, Any], row: Mapping[str, Any], original_folder: str) -> dict[str, Any]:
    """The import record of the `n`-th stylised row, joined with its original row."""
    tail = f"-{row['question_id']}" if task == "vqa" else ""
    return {
        "id": f"{task}-{style}-{n:06d}-{row['image_id']}{tail}",
        "task": task,
        "style": style,
        "original": dict(original),
        "stylised": dict(row),
        "original_image": f"{original_folder}/{row['image_id']}",
        "stylised_image": f"{style}/{row['image_id']}",
    }


def join(
    original_rows: Sequence[Mapping[str, Any]],
    stylised_rows: Sequence[Mapping[str, Any]],
    task: str,
    style: str,
    *,
    original_folder: str = "original",
) -> list[dict[str, Any]]:
    """Import records for a release's stylised rows of one task and style, in the stylised file's
    order, each with its original row. Raises `Invalid` naming the row and field of every row that
    cannot be joined."""
    if task not in TASKS:
        raise Invalid(f"Unknown task {task!r}: one of {', '.join(TASKS)}.")
    if style not in STYLES:
        raise Invalid(f"Unknown style {style!r}: one of {', '.join(STYLES)}.")
    by_key: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    for row in original_rows:
        by_key[_key(task, row)].append(row)
    used: dict[tuple, int] = defaultdict(int)
    records, errors = [], []
    for n, row in enumerate(stylised_rows, 1):
        if not isinstance(row, Mapping) or not isinstance(row.get("image_id"), str) or not row["image_id"]:
            errors.append(f"stylised row {n}: field 'image_id': a file name is required")
            continue
        key = _key(task, row)
        matches = by_key.get(key)
        if not matches:
            field = "question_id" if task == "vqa" else "image_id"
            errors.append(f"stylised row {n}: field '{field}': no original row has {', '.join(map(str, key))}")
            continue
        k = used[key]
        used[key] += 1
        if len(matches) > 1 and k >= len(matches):
            errors.append(f"stylised row {n}: field 'image_id': more stylised rows than original rows for {key[0]}")
            continue
        original = matches[k] if len(matches) > 1 else matches[0]
        records.append(_record(n, task, style, original, row, original_folder))
    if errors:
        raise Invalid("The release's rows cannot be joined.", errors[:50])
    return records


def join_files(original: Path | str, stylised: Path | str, task: str, style: str, **kwargs: Any) -> list[dict[str, Any]]:
    """`join` over the release's two JSON files."""
    return join(json.loads(Path(original).read_text()), json.loads(Path(stylised).read_text()), task, style, **kwargs)


def write_import(records: Sequence[Mapping[str, Any]], path: Path | str) -> Path:
    """Write import records as a JSON Lines file for `vlcurate import`."""
    path = Path(path)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return path
