"""The suggestion-producer shape: what a dataset's model drafts are computed from and give back.

A producer reads a batch of items of one stage (and their images from storage), calls one
backend once for the whole batch, and returns one row per item for
`services.annotation.suggestions.store_many`, or a `Failed` for an item it cannot compute (a corrupt or
unstored image): that item fails alone, the others are stored. Datasets declare their producers;
the worker runs them by kind and hands each its backends (`app.worker.backends`), so a dataset
never imports the worker.
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


@dataclass
class Failed:
    """An item the producer could not compute, and why (one line naming the item and the image), with
    the model that tried: the worker records it, and reconcile leaves the item alone until its inputs change."""

    item_id: int
    reason: str
    model: str = ""
    model_version: str = ""


def image_failure(item: ItemInput, what: str, why: str, by: tuple[str, str] = ("", "")) -> Failed:
    """`by`: the model's name and version."""
    return Failed(item.id, f"item {item.id}: {what} cannot be read ({why})", *by)


def not_stored(item: ItemInput, what: str, by: tuple[str, str] = ("", "")) -> Failed:
    return Failed(item.id, f"item {item.id}: {what} is named by URL and not stored, so it cannot be read", *by)


@dataclass(frozen=True)
class Producer:
    kind: str
    needs_images: bool
    run: Callable[[list[ItemInput], Any, ModuleType], list[Produced | Failed]]  # (items, settings, the worker's backends)
    modules: tuple[str, ...]  # what the worker extra must have installed
    needs_clip: bool = False  # whether VLCURATE_CLIP_MODEL_DIR must be set
