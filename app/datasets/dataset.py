"""The dataset plugin shape: what a dataset declares once, for all of its workflows.

A dataset (`app/datasets/<name>/dataset.py`) declares its item schema (validates imports),
which item fields are images, its workflows in pipeline order (routing is each workflow's
`applies`), the figures and breakdown of its project page, the suggestion producers of the
kinds its workflows read and the draft kinds a vision-language model can write for them (`drafts`),
and its published export: how a finished item becomes a record of the
release, which files ship with it, and optional capabilities (boxes for COCO) declared as
values, never discovered.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from app.datasets.draft import DraftKind
from app.datasets.suggest import Producer
from app.datasets.workflow import Workflow


class ItemBase(BaseModel):
    """Fields every item schema has: the external id and an optional group id."""

    # Published datasets often number their records; ids are kept as text.
    model_config = ConfigDict(extra="allow", str_strip_whitespace=True, coerce_numbers_to_str=True)

    id: str
    group_id: str | None = None


@dataclass(frozen=True)
class AnswerFigures:
    """Project-page figures of one workflow's finals: how often each of `answers` (the values of
    payload key `answer`) was given, per value of each item field in `by`; and (title,
    category key, value key) means over a dict the final payload holds under "edits"."""

    answer: str
    answers: tuple[str, ...]
    by: tuple[str, ...] = ()
    means: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class BoxExport:
    """The COCO capability: box categories; the boxes of a finished item,
    `boxes(item, results, source)` -> [{"bbox": [x, y, w, h], "attributes": {...}}] (category 1);
    and `file_name(item, source)`, its image's file name in the export."""

    categories: list[dict[str, Any]]
    boxes: Callable[..., list[dict[str, Any]]]
    file_name: Callable[..., str]


@dataclass(frozen=True)
class Chart:
    """A project-page figure a dataset computes from its finished items (`Dataset.charts`).

    `rows` are (label, one value per series). "stacked": each row's values are counts shown as
    shares of the row; "bars": values side by side, scaled to the largest; "table": numbers only.
    A None value is shown as a dash."""

    title: str
    series: tuple[str, ...]
    rows: list[tuple[str, tuple[float | None, ...]]]
    kind: str = "bars"
    note: str = ""
    digits: int = 2


@dataclass(frozen=True)
class DemoStage:
    """A stage of a demo project: its workflow, name, guidelines (Markdown), configuration and overlap."""

    workflow: str
    name: str
    guidelines: str = ""
    config: Mapping[str, Any] = field(default_factory=dict)
    overlap: int = 1


# The model name of suggestions the demo stores: drawn from what the demo painted, not a model's output.
DEMO_MODEL = "vlcurate-demo"
DEMO_MODEL_VERSION = "1"


@dataclass(frozen=True)
class DemoSuggestion:
    """A suggestion the demo stores for one of its records: the stage (by name), the record's id,
    the kind and its payload, as a producer of that kind would give them."""

    stage: str
    record_id: str
    kind: str
    payload: dict[str, Any]
    score: float | None = None


@dataclass(frozen=True)
class DemoProject:
    """A project `vlcurate demo` creates: its stages, and `records(folder)`, which writes the
    images it names into `folder` and returns the records to import. `suggestions(records)` gives
    what the demo knows about its own drawings as suggestions, so that a demo without models still
    shows the screens' one-key paths."""

    name: str
    description: str
    stages: tuple[DemoStage, ...]
    records: Callable[[Path], list[dict[str, Any]]]
    suggestions: Callable[[list[dict[str, Any]]], Iterable[DemoSuggestion]] | None = None


@dataclass(frozen=True)
class JsonStyle:
    """How a release serialises JSON, as Python's `json.dump` does: `indent` (None: one line,
    separators ", " and ": "), `ensure_ascii` (\\u escapes for non-ASCII), and whether a file
    ends with a newline. Records are written as `json.dump` would write them inside the file."""

    indent: int | None = None
    ensure_ascii: bool = True
    final_newline: bool = False

    def dumps(self, value: Any, level: int = 0) -> str:
        """`value` as it appears `level` containers deep in a file of this style."""
        text = json.dumps(value, indent=self.indent, ensure_ascii=self.ensure_ascii)
        if self.indent and level:
            text = text.replace("\n", "\n" + " " * (self.indent * level))
        return text


class Dataset:
    """One dataset. Subclasses set the class attributes and override the export hooks they need."""

    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str] = ""
    item_schema: ClassVar[type[ItemBase]] = ItemBase
    # JSON pointers into item data whose values are image references.
    image_fields: ClassVar[tuple[str, ...]] = ()
    # The workflows in pipeline order; a new project gets them all, the first one first.
    workflows: ClassVar[tuple[type[Workflow], ...]]
    # Item fields the project page counts kept and discarded items by (at most two).
    breakdown: ClassVar[tuple[str, ...]] = ()
    # Figures of workflows' finals on the project page, by workflow name.
    figures: ClassVar[Mapping[str, AnswerFigures]] = {}
    # Producers of the suggestion kinds this dataset's workflows read.
    producers: ClassVar[tuple[Producer, ...]] = ()
    # What a vision-language model can draft for this dataset's stages (app.datasets.draft).
    drafts: ClassVar[tuple[DraftKind, ...]] = ()
    # How the published export writes a split's records: "jsonl" (a line each) or "json" (an
    # array), at `published_path`, in the release's `release_style`; files that ship with the
    # records go beside it. Parquet columns come in `parquet_columns` order (a Hub card's), then the rest.
    published_layout: ClassVar[str] = "jsonl"
    published_path: ClassVar[str] = "{split}.jsonl"
    release_style: ClassVar[JsonStyle] = JsonStyle()
    parquet_columns: ClassVar[tuple[str, ...]] = ()
    # The published log file, JSON Lines (a line for every finished item export_log speaks of), or None.
    export_log_name: ClassVar[str | None] = None
    # Optional capability: boxes for the COCO export.
    boxes: ClassVar[BoxExport | None] = None
    # Projects `vlcurate demo` creates to try the dataset, with drawn images.
    demos: ClassVar[tuple[DemoProject, ...]] = ()

    # -- items -------------------------------------------------------------------
    def parse_item(self, record: Mapping[str, Any], config: Mapping[str, Any]) -> ItemBase:
        """Validate one imported record against the first stage's configuration; raise
        ValidationError or Invalid."""
        return self.item_schema.model_validate(record, context={"config": config})

    def image_refs(self, item: ItemBase) -> dict[str, str]:
        """Map JSON pointer -> image reference (path, zip member or s3:// key) for this item."""
        data = item.model_dump(mode="json")
        refs = {}
        for pointer in self.image_fields:
            value = data.get(pointer.lstrip("/"))
            if value:
                refs[pointer] = value
        return refs

    def charts(self, finished: Iterable[Any]) -> list[Chart]:
        """Figures of the project page computed from its finished items (kept and discarded),
        each with `data`, `source` and `results` (workflow name -> final); none by default."""
        return []

    # -- the published export ----------------------------------------------------------
    # `source` is the record as it came (key order, absent keys and values as imported), or None
    # for an item stored before records were kept; `results` maps workflow names to finals.
    def export_record(self, item: Mapping[str, Any], results: Mapping[str, Any], source: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The item's record in the dataset's published format: by default the record as it came
        with every final's fields put in (existing keys keep their place, new ones go last)."""
        record = dict(source if source is not None else item)
        for final in results.values():
            record.update(final)
        return record

    @property
    def export_image_columns(self) -> tuple[str, ...]:
        """Columns of the Parquet export that hold images (Hugging Face `Image` features)."""
        return tuple(p.strip("/").replace("/", "_") for p in self.image_fields)

    def export_images(
        self, item: Mapping[str, Any], assets: Mapping[str, str], results: Mapping[str, Any], source: Mapping[str, Any] | None = None
    ) -> dict[str, str | None]:
        """Image column -> sha256 of the stored image (None where there is none, e.g. a URL only)."""
        return {p.strip("/").replace("/", "_"): assets.get(p) for p in self.image_fields}

    def export_files(
        self, item: Mapping[str, Any], assets: Mapping[str, str], results: Mapping[str, Any], source: Mapping[str, Any] | None = None
    ) -> dict[str, str]:
        """Files the published format ships with the record: path (relative to the records
        file's folder) -> asset sha256."""
        return {}

    def export_log(self, item: Mapping[str, Any], results: Mapping[str, Any], source: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """A line of the published format's log, or None where it has none. Written for every
        finished item, discarded ones included."""
        return None
