"""VisArgs' probe: the gold answer's visual premises with one the image does not show added, as if a
model had drafted it. The answer caught it when it keeps no premise with that text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.bias.probes import Probe
from app.datasets.visargs.schema import MAX_PREMISES, PREMISES, PREMISES_KIND, clean

PLANTED = "A small brown dog sleeps in the lower left corner"


def plant(truth: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any] | None:
    premises = list(truth.get("visual_premises") or [])
    if truth.get("discard") or not premises or len(premises) >= MAX_PREMISES:
        return None  # no premise to add to, or no room for one more (the screen takes MAX_PREMISES)
    return {"visual_premises": [*premises, PLANTED]}


def caught(truth: Mapping[str, Any], answer: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    kept = set() if answer.get("discard") else {clean(t).lower() for t in answer.get("visual_premises") or []}
    return clean(PLANTED).lower() not in kept


PROBE = Probe(workflow=PREMISES, kind=PREMISES_KIND, error="a visual premise the image does not show, added", plant=plant,
              caught=caught)
