"""The exporter shape: a format's name, which datasets it supports, and how it writes one export."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.orm import Session

from app.datasets.dataset import Dataset
from app.exporters.files import Images, Output
from app.models import Project, SplitDefinition


@dataclass
class Context:
    """What a format writes from: the project's dataset, its split definition (None: one split
    "all"), where the files go, the stored images, and a progress tick per batch of items."""

    session: Session
    project: Project
    dataset: Dataset
    definition: SplitDefinition | None
    splits: list[str]
    out: Output
    images: Images
    tick: Callable[[int], None]


@dataclass(frozen=True)
class Format:
    name: str
    description: str
    # Writes every split's files under ctx.out; returns the item count per split.
    write: Callable[[Context], dict[str, int]]
    # Whether the format can express a dataset's records (the export page offers only those).
    supports: Callable[[Dataset], bool] = lambda dataset: True
