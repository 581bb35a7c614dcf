"""The suggestion-producer shape: what a dataset's model drafts are computed from and give back.

A producer reads a batch of items of one stage (and their images from storage), calls one
backend once for the whole batch where it can, and returns rows for
`services.suggestions.store`. Datasets declare their producers; the worker runs them by kind and
hands each its backends (`app.worker.backends`), so a dataset never imports the worker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

CLIP_MODULES = ("torch", "transformers")


@dataclass
class ItemInput:
    id: int
    data: dict[str, Any]
    images: dict[str, bytes]  # JSON pointer -> image bytes (only those the kind needs)
    results: dict[str, dict[str, Any]]


@dataclass
class Produced:
    item_id: int
    model: str
    model_version: str
    payload: dict[str, Any]
    score: float | None = None


@dataclass(frozen=True)
class Producer:
    kind: str
    needs_images: bool
    run: Callable[[list[ItemInput], Any, ModuleType], list[Produced]]  # (items, settings, the worker's backends)
    modules: tuple[str, ...]  # what the worker extra must have installed
    needs_clip: bool = False  # whether VLCURATE_CLIP_MODEL_DIR must be set
