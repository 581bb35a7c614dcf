"""What drafts an assignment's screen and the API show (app.bias): none in the control arm, a planted
wrong draft on a probe, else the item's drafts. The hot path computes the arm from rows it reads anyway;
only a gold item's answers and claims read more (its truth, which draft kinds it has, and whether it is
a quiz item: one never carries a probe, the quiz being scored on the item alone)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app import gate
from app.bias import probes
from app.datasets import probe_for
from app.models import GoldItem, Suggestion


def of(config: Mapping[str, Any] | None, assignment_id: int, workflow: str, truth: Mapping[str, Any] | None,
       data: Mapping[str, Any], kinds: Iterable[str], *, quiz: bool = False) -> probes.Exposure:
    """The assignment's exposure; `truth` is the gold answer when the item is a gold item of the stage;
    `quiz`: it is an item of the stage's quiz (no probe is drawn)."""
    probe = probe_for(workflow) if truth is not None and not quiz else None
    return probes.exposure(config, assignment_id, probe=probe, truth=truth, data=data, kinds=frozenset(kinds))


def claim_planted(text: str, assignment_id: int, truth: Mapping[str, Any], config: Mapping[str, Any] | None,
                  workflow: str, data: Mapping[str, Any], quiz: bool = False) -> dict[str, Any] | None:
    """A gold item's planted draft ({kind: payload}) for the claim answer `text` (JSON text, built by the
    database), or None when the assignment is no probe. The caller has the database write the probe's
    answer with it, so that its bytes look like every other claim's."""
    shown = {s["kind"]: s["payload"] for s in json.loads(text)["suggestions"]}
    seen = of(config, assignment_id, workflow, truth, data, shown, quiz=quiz)
    if seen.planted is None or seen.kind is None or seen.kind not in shown:
        return None
    return {seen.kind: seen.payload(shown[seen.kind])}


def for_gold_answer(session: Session, config: Mapping[str, Any] | None, assignment_id: int, workflow: str, item_id: int,
                    stage_id: int, data: Mapping[str, Any], annotator_id: int) -> tuple[probes.Exposure, dict[str, Any] | None]:
    """What a gold item's screen showed for the annotator's assignment, and the item's gold answer."""
    truth = session.scalar(sa.select(GoldItem.answer).where(GoldItem.item_id == item_id, GoldItem.stage_id == stage_id))
    kinds = session.scalars(sa.select(Suggestion.kind).where(Suggestion.item_id == item_id, Suggestion.stage_id == stage_id).distinct())
    quiz = truth is not None and gate.taking_quiz(session, stage_id, annotator_id)
    return of(config, assignment_id, workflow, truth, data, kinds, quiz=quiz), truth
