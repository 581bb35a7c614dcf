"""The qualification gate and auto-pause in the queue: what a claim gets in a stage whose quiz the
annotator has not passed (gold items of the quiz, or a refusal that says why), and the refusal a
paused annotator gets. The answers' side (scoring the quiz, firing and lifting a pause) is
app.services.quality.qualification."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app import honeypot
from app.datasets.workflow import StageConfig
from app.errors import Conflict

_QUIZ = sa.text(
    """
    SELECT s.config, g.tries_failed, g.last_score FROM stages s
    LEFT JOIN annotator_gates g ON g.stage_id = s.id AND g.annotator_id = :user
    WHERE s.id = :stage
    """
)
_PAUSE = sa.text(
    """
    SELECT s.config, f.accuracy, f.items FROM annotator_flags f JOIN stages s ON s.id = f.stage_id
    WHERE f.stage_id = :stage AND f.annotator_id = :user
    """
)


class QuizFailed(Conflict):
    """The annotator used every try of the stage's quiz without passing: no lease until a reset."""


class Paused(Conflict):
    """The stage's auto-pause stopped the annotator's leases: none until a manager lifts it."""


def quiz_settings(config: Mapping[str, Any] | None) -> tuple[int, float, int]:
    """(items, score to pass, tries) of a stage's quiz; items 0: no quiz."""
    return (int(StageConfig.read(config, "quiz_items")), float(StageConfig.read(config, "quiz_pass")),
            int(StageConfig.read(config, "quiz_tries")))


def quiz_failed(config: Mapping[str, Any] | None, tries_failed: int, last_score: float | None) -> QuizFailed:
    items, needed, tries = quiz_settings(config)
    return QuizFailed(
        f"You did not pass this stage's qualification quiz, so it gives you no items: your last try scored "
        f"{last_score or 0:g} of {items}, at least {needed:g} needed, and you used {tries_failed} of {tries} "
        f"{'try' if tries == 1 else 'tries'}. A manager of the project can reset your tries.",
        [f"score: {last_score or 0:g} of {items}", f"needed: {needed:g}", f"tries used: {tries_failed} of {tries}"],
    )


def quiz_claim(session: Session, stage_id: int, annotator_id: int) -> honeypot.GoldLease:
    """A gold item of the quiz for an annotator who has not passed it; QuizFailed when their tries are
    used up, a Conflict when no gold item is left for them."""
    params = {"stage": stage_id, "user": annotator_id}
    config, tries_failed, last_score = session.execute(_QUIZ, params).one()
    if (tries_failed or 0) >= quiz_settings(config)[2]:
        raise quiz_failed(config, tries_failed, last_score)
    lease = honeypot.pick(session, stage_id, annotator_id, 0.0, only=True)
    if lease is None:
        raise Conflict("This stage's qualification quiz has no gold item left that you have not seen, so it cannot "
                       "go on and gives you no items. Ask a manager of the project to add gold items or reset your tries.")
    return lease


def paused(session: Session, stage_id: int, annotator_id: int) -> Paused:
    """The refusal of a paused annotator's claim, with the rolling accuracy that paused them."""
    config, accuracy, window = session.execute(_PAUSE, {"stage": stage_id, "user": annotator_id}).one()
    threshold = float(StageConfig.read(config, "pause_threshold"))
    return Paused(
        f"Your work in this stage is paused: your accuracy on your last {window} check items was {accuracy:.0%}, "
        f"below the stage's {threshold:.0%}. Your unreviewed answers went to review; a manager of the project "
        "can lift the pause.",
        [f"accuracy: {accuracy:.4g} over the last {window} gold answers", f"threshold: {threshold:g}"],
    )
