"""The qualification gate and auto-pause in the queue: what a claim gets in a stage whose quiz the
annotator has not passed (gold items of the quiz, or a refusal that says why), the refusal of a
skip or release of a quiz item, and the refusal a paused annotator gets. The answers' side (scoring the quiz, firing and lifting a pause) is
app.services.quality.qualification."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app import honeypot
from app.datasets.workflow import StageConfig
from app.errors import Conflict
from app.lifecycle import AssignmentEvent, AssignmentStatus, ItemStatus, sql_values, target
from app.models import Assignment

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

_GIVEN_BACK = (AssignmentStatus.skipped, AssignmentStatus.released, AssignmentStatus.expired)
# A quiz item the annotator let expire (or gave back before skips were refused) comes back before
# any other: else letting the lease run out would draw another, perhaps easier, quiz item.
_QUIZ_AGAIN = sa.text(
    f"""
    UPDATE assignments a SET status = '{target(AssignmentEvent.claim, *_GIVEN_BACK)}',
        lease_until = now() + make_interval(secs => s.lease_seconds)
    FROM stages s WHERE s.id = :stage AND a.id = (
        SELECT x.id FROM assignments x JOIN items i ON i.id = x.item_id
        JOIN gold_items g ON g.item_id = x.item_id AND g.stage_id = :stage
        WHERE x.stage_id = :stage AND x.annotator_id = :user AND i.status = '{ItemStatus.gold}'
          AND x.status IN ({sql_values(_GIVEN_BACK)})
        ORDER BY x.id LIMIT 1
        FOR UPDATE OF x SKIP LOCKED)
    RETURNING a.id, a.item_id, a.lease_until
    """
)


def taking_quiz_sql(config: str, stage: str, user: str) -> str:
    """SQL: whether the annotator (`user`) has still to pass the quiz of the stage (`stage`, `config` its
    configuration): a gold item they hold there is then a quiz item."""
    return (f"(coalesce(({config}->>'quiz_items')::int, 0) > 0 AND NOT EXISTS (SELECT 1 FROM annotator_gates qg"
            f" WHERE qg.stage_id = {stage} AND qg.annotator_id = {user} AND qg.passed_at IS NOT NULL))")


_TAKING_QUIZ = sa.text(f"SELECT {taking_quiz_sql('s.config', 's.id', ':user')} FROM stages s WHERE s.id = :stage")
_QUIZ_LEASE = sa.text(
    f"""
    SELECT i.status = '{ItemStatus.gold}' AND {taking_quiz_sql('s.config', 's.id', 'a.annotator_id')}
    FROM assignments a JOIN items i ON i.id = a.item_id JOIN stages s ON s.id = a.stage_id WHERE a.id = :id
    """
)


class QuizFailed(Conflict):
    """The annotator used every try of the stage's quiz without passing: no lease until a reset."""


class QuizItemKept(Conflict):
    """A skip or release of a quiz item: refused, so that no one picks the quiz items they find easy."""


QUIZ_NO_SKIP = ("This item is part of the stage's qualification quiz, and quiz items cannot be skipped or given back: "
                "skipping would draw another quiz item. Answer it as well as you can; the answer counts toward your quiz score.")


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
    if (again := session.execute(_QUIZ_AGAIN, params).first()) is not None:
        return honeypot.GoldLease(again.id, again.item_id, again.lease_until)
    lease = honeypot.pick(session, stage_id, annotator_id, 0.0, only=True)
    if lease is None:
        raise Conflict("This stage's qualification quiz has no gold item left that you have not seen, so it cannot "
                       "go on and gives you no items. Ask a manager of the project to add gold items or reset your tries.")
    return lease


def taking_quiz(session: Session, stage_id: int, annotator_id: int) -> bool:
    """Whether the annotator has still to pass the stage's quiz (a gold item they hold is a quiz item)."""
    return bool(session.execute(_TAKING_QUIZ, {"stage": stage_id, "user": annotator_id}).scalar())


def keep_quiz_item(session: Session, assignment: Assignment) -> None:
    """Refuse to skip or release `assignment` when it is a quiz item (QuizItemKept, a 409)."""
    if session.execute(_QUIZ_LEASE, {"id": assignment.id}).scalar():
        raise QuizItemKept(QUIZ_NO_SKIP)


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
