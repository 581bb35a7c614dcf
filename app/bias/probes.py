"""Probes: a known-wrong draft planted on a gold item in place of the real one, and whether the answer
corrected it. A dataset declares one `Probe` per task that can take one (`Dataset.probes`): which
suggestion kind it stands in for, how to plant the error from the gold answer, and what counts as
caught. `exposure` decides, for an assignment, what its screen shows: the drafts, none, or a probe.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
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
    # For a plant written into the item's real draft of the kind (so that it reads like the model's own):
    # the shown payload from `plant`'s result, the real draft's payload and the item's data. `plant` then
    # says only what is planted, from the gold answer and the item, so that a submit, which reads no
    # draft, decides the arm and the catch exactly as the screen and the claim did.
    into_draft: Callable[[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]], dict[str, Any]] | None = None

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
    data: Mapping[str, Any] | None = None  # the item's data (a plant written into the real draft reads it)

    def payload(self, real: Mapping[str, Any]) -> dict[str, Any] | None:
        """The payload shown in place of `real`, the item's draft of `kind`; None when this is no probe."""
        if self.planted is None or self.probe is None:
            return None
        if self.probe.into_draft is None:
            return self.planted
        return self.probe.into_draft(self.planted, real, self.data or {})


def pick(pool: Sequence[str], truth: Mapping[str, Any], item: Mapping[str, Any], taken: Callable[[str], bool] = lambda _: False) -> str:
    """The planted phrase for a gold item: one of `pool`, drawn from the gold answer and the item's data, so
    that each gold item gets its own (an annotator who has seen one probe cannot spot the next by its text)
    while the claim, the screen and the submit all draw the same one. A phrase `taken` (the gold answer
    already says it, so keeping it would be right) gives way to the next."""
    key = json.dumps([truth, item], sort_keys=True, default=str, ensure_ascii=False)
    start = int(hashlib.md5(key.encode()).hexdigest()[:8], 16) % len(pool)
    return next((p for k in range(len(pool)) if not taken(p := pool[(start + k) % len(pool)])), pool[start])


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
    return Exposure(arms.PROBE, planted, probe, kind, data) if planted is not None else Exposure(arms.SHOWN)


def shown(seen: Exposure, suggestions: Mapping[str, T], with_payload: Callable[[T, dict[str, Any]], T],
          payload_of: Callable[[Any], Mapping[str, Any]] = lambda s: s.payload) -> dict[str, T]:
    """The suggestions (by kind) the screen shows: none in the control arm; on a probe, the probe's kind
    carries the planted payload (with the real draft's id, model and version, so that nothing tells
    it apart; `payload_of` reads a suggestion's payload, for a plant written into it); else all of them."""
    if seen.arm == arms.CONTROL:
        return {}
    if seen.arm == arms.PROBE and seen.kind is not None and seen.planted is not None:
        return {k: with_payload(s, _planted(seen, s, payload_of)) if k == seen.kind else s for k, s in suggestions.items()}
    return dict(suggestions)


def _planted(seen: Exposure, real: Any, payload_of: Callable[[Any], Mapping[str, Any]]) -> dict[str, Any]:
    """The probe's payload in place of `real` (read only by a plant written into the real draft)."""
    written = seen.probe is not None and seen.probe.into_draft is not None
    planted = seen.payload(payload_of(real)) if written else seen.planted
    assert planted is not None
    return planted
