"""Export formats as plugins: a registry of formats, each saying which datasets it supports, and
`write_export`, which writes one export and its manifest.

Every file is written under the output directory, then `manifest.json` (counts per split, the
split definition and its seed, schema version, sha256 and size of every file) is written last:
a directory with a manifest is complete. Nothing in the output depends on the time of the
export, so exporting twice gives byte-identical files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.datasets import dataset_of
from app.datasets.dataset import Dataset
from app.errors import Invalid
from app.exporters import coco, jsonl, parquet, published
from app.exporters.base import Context, Format
from app.exporters.files import Images, Output, dumps
from app.exporters.rows import ALL, count_items
from app.models import Project, SplitDefinition, Stage
from app.storage import Storage

SCHEMA_VERSION = 1
GOLD_FILE = "gold.jsonl"  # the gold items' answers, written only when asked: never data
FORMATS: dict[str, Format] = {f.name: f for f in (published.FORMAT, jsonl.FORMAT, parquet.FORMAT, coco.FORMAT)}

Progress = Callable[[int, int], None]


def project_dataset(session: Session, project_id: int) -> Dataset:
    """The dataset a project curates (its stages' workflows all belong to it)."""
    first = session.scalar(sa.select(Stage.workflow).where(Stage.project_id == project_id).order_by(Stage.position).limit(1))
    return dataset_of(first)


def formats_for(dataset: Dataset) -> list[str]:
    """The formats that can express this dataset's records, in registry order."""
    return [name for name, f in FORMATS.items() if f.supports(dataset)]


def get_format(name: str, dataset: Dataset) -> Format:
    """The format by name, refused with the reason when it is unknown or can't express the dataset."""
    if name not in FORMATS:
        raise Invalid(f"Unknown export format {name!r}; use one of: {', '.join(FORMATS)}.")
    if not FORMATS[name].supports(dataset):
        raise Invalid(f"The {name} format can't express {dataset.title} records; use one of: {', '.join(formats_for(dataset))}.")
    return FORMATS[name]


def write_export(
    session: Session,
    project_id: int,
    fmt: str,
    root: Path,
    storage: Storage,
    *,
    definition: SplitDefinition | None = None,
    progress: Progress | None = None,
    gold: Iterable[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Write the export under `root` and return its manifest (also written as manifest.json).
    `gold` is the stages' gold items as lines (never in the data files), written to `gold.jsonl` beside them."""
    project = session.get(Project, project_id)
    workflows = session.scalars(sa.select(Stage.workflow).where(Stage.project_id == project_id).order_by(Stage.position)).all()
    dataset = dataset_of(workflows[0])
    writer = get_format(fmt, dataset)
    splits = definition.order if definition is not None else [ALL]
    root.mkdir(parents=True, exist_ok=True)
    (root / "manifest.json").unlink(missing_ok=True)  # a manifest marks a complete export
    total, done = count_items(session, project_id, definition), 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    out = Output(root)
    counts = writer.write(Context(session, project, dataset, definition, splits, out, Images(session, storage), tick))
    gold_items = _write_gold(gold, out) if gold is not None else None
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "project": project.name,
        "workflow": workflows[-1],
        "format": fmt,
        "splits": counts,
        "split_order": splits,
        "split_definition": (
            {"version": definition.version, "config": definition.config, "seed": definition.config.get("seed", 0)}
            if definition is not None else None
        ),
        "files": out.digests(),
    }
    if gold_items is not None:
        manifest["gold_items"] = gold_items
    (root / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def _write_gold(lines: Iterable[dict[str, Any]], out: Output) -> int:
    if GOLD_FILE in out.paths:
        raise Invalid(f"This export already has a data file {GOLD_FILE} (a split named gold?); rename the split to export gold items.")
    n = 0
    with out.open_text(GOLD_FILE) as fh:
        for line in lines:
            fh.write(dumps(line) + "\n")
            n += 1
    return n


__all__ = ["FORMATS", "Format", "formats_for", "get_format", "project_dataset", "write_export"]
