"""Probes: a known-wrong draft planted on a gold item in place of the real one, and whether the answer
corrected it. A dataset declares one `Probe` per task that can take one (`Dataset.probes`): which
suggestion kind it stands in for, how to plant the error from the gold answer, and what counts as
caught. `exposure` decides, for an assignment, what its screen shows: the drafts, none, or a probe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from app.bias import arms

T = TypeVar("T")


@dataclass(frozen=True)
class Probe:
    workflow: str  # the task it plants on
    kind: str  # the suggestion kind whose payload it replaces (the item must have a draft of it)
    error: str  # what it plants, in words ("a flipped label")
    # The planted suggestion payload from the gold answer and the item's data; None when this answer
    # leaves nothing to plant.
    plant: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any] | None]
    # Whether an answer (as validated) corrected the planted error: (gold answer, answer, item data).
    caught: Callable[[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]], bool]
    # Other kinds the plant can replace when the item has no draft of `kind`, in the order the screen
    # prefers them (a screen that merges several kinds shows the first one's payload where they overlap).
    alternatives: tuple[str, ...] = ()

    def kind_in(self, kinds: frozenset[str] | set[str]) -> str | None:
        """The kind the plant replaces on an item with drafts of `kinds`: the first it has; None if none."""
        return next((k for k in (self.kind, *self.alternatives) if k in kinds), None)


@dataclass(frozen=True)
class Exposure:
    """What an assignment's screen shows: its arm, and the planted payload when it is a probe."""

    arm: str
    planted: dict[str, Any] | None = None
    probe: Probe | None = None
    kind: str | None = None  # the suggestion kind whose payload the plant replaces


def exposure(config: Mapping[str, Any] | None, assignment_id: int, *, probe: Probe | None, truth: Mapping[str, Any] | None,
             data: Mapping[str, Any], kinds: frozenset[str] | set[str]) -> Exposure:
    """The assignment's arm (see `arms.arm`), as it can be shown: a probe needs a gold answer, the
    task's probe definition, a draft of the probe's kind on the item and something to plant, else the
    drafts are shown as they are."""
    drawn = arms.arm(config, assignment_id, gold=truth is not None and probe is not None)
    if drawn != arms.PROBE:
        return Exposure(drawn)
    assert probe is not None and truth is not None
    kind = probe.kind_in(kinds)
    planted = probe.plant(truth, data) if kind is not None else None
    return Exposure(arms.PROBE, planted, probe, kind) if planted is not None else Exposure(arms.SHOWN)


def shown(seen: Exposure, suggestions: Mapping[str, T], with_payload: Callable[[T, dict[str, Any]], T]) -> dict[str, T]:
    """The suggestions (by kind) the screen shows: none in the control arm; on a probe, the probe's kind
    carries the planted payload (with the real draft's id, model and version, so that nothing tells
    it apart); else all of them."""
    if seen.arm == arms.CONTROL:
        return {}
    if seen.arm == arms.PROBE and seen.kind is not None and seen.planted is not None:
        return {k: with_payload(s, seen.planted) if k == seen.kind else s for k, s in suggestions.items()}
    return dict(suggestions)
