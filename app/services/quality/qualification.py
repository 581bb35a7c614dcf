"""The qualification quiz's answers and auto-pause: scoring a quiz answer and the try it ends; firing the
pause on the gold answer that takes an annotator's rolling accuracy below the stage's threshold
(`pause_annotator`, the one place an annotator is paused); lifting it, resetting quiz tries, and the
standings a manager sees. The queue's side (what a claim gets meanwhile) is app.gate.

Both use the gold items and their comparison (app.agreement.gold.answer_score). A quiz answer is a
gold answer kept apart (a `quiz_answers` row): it counts for the quiz only, never for gold accuracy,
the flag or the pause window. A pause is the gold flag (`annotator_flags`) with `paused_at` set, so
the stage's routing sends the paused annotator's unfinished and unreviewed work to review as it does
for any flagged annotator.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app import gate, queue
from app.agreement import gold as scoring
from app.datasets import get_workflow
from app.datasets.workflow import StageConfig
from app.errors import Conflict, Forbidden, NotFound
from app.lifecycle import AssignmentEvent, AssignmentStatus, ItemStatus, target
from app.models import AnnotatorFlag, AnnotatorGate, Assignment, GoldItem, Item, Project, QuizAnswer, Stage, User
from app.services.projects.projects import get_stage
from app.services.quality import gold
from app.services.users import audit
from app.services.users.workspaces import manages
from app.services.webhooks import events

_RELEASED = target(AssignmentEvent.release, AssignmentStatus.active)


def _gate_row(session: Session, stage_id: int, annotator_id: int) -> AnnotatorGate:
    """The annotator's gate row in the stage, made if missing, locked for this transaction."""
    session.execute(pg_insert(AnnotatorGate).values(stage_id=stage_id, annotator_id=annotator_id).on_conflict_do_nothing())
    return session.scalar(sa.select(AnnotatorGate).where(
        AnnotatorGate.stage_id == stage_id, AnnotatorGate.annotator_id == annotator_id).with_for_update().execution_options(populate_existing=True))


def quiz_answer(session: Session, stage: Stage, annotator_id: int, annotation_id: int, item_id: int, clean: dict[str, Any]) -> bool:
    """Count a gold answer for the stage's quiz when the annotator has not passed it: its score goes to
    the try under way; the try's last answer passes the quiz (score at least `quiz_pass`) or fails the
    try (a `quiz.passed` / `quiz.failed` audit event). Returns whether it was a quiz answer."""
    items, needed, tries = gate.quiz_settings(stage.config)
    if items == 0:
        return False
    row = _gate_row(session, stage.id, annotator_id)
    if row.passed_at is not None:
        return False
    truth = session.scalar(sa.select(GoldItem.answer).where(GoldItem.item_id == item_id, GoldItem.stage_id == stage.id))
    workflow = get_workflow(stage.workflow)
    score = scoring.answer_score(workflow.facets, workflow.facet_values(truth), workflow.facet_values(clean))
    session.add(QuizAnswer(annotation_id=annotation_id, stage_id=stage.id, annotator_id=annotator_id,
                           try_number=min(row.tries_failed + 1, tries), score=score))
    if row.tries_failed >= tries:  # a lease taken before their last try failed: kept apart, counted in no try
        session.flush()
        return True
    row.try_answers, row.try_score = row.try_answers + 1, row.try_score + score
    if row.try_answers >= items:
        detail = {"stage": stage.id, "score": round(row.try_score, 4), "needed": needed, "try": row.tries_failed + 1}
        if row.try_score >= needed - 1e-9:
            row.passed_at, row.window_from = sa.func.now(), annotation_id
            audit.record(session, "quiz.passed", target=f"user:{annotator_id}", **detail)
        else:
            row.tries_failed, row.last_score = row.tries_failed + 1, row.try_score
            audit.record(session, "quiz.failed", target=f"user:{annotator_id}", **detail)
        row.try_answers, row.try_score = 0, 0.0
    session.flush()
    return True


def check_pause(session: Session, stage: Stage, annotator_id: int, answers: list[gold.GoldAnswer]) -> bool:
    """After a gold answer (`answers`: the annotator's scored gold answers, oldest first): pause them when
    the stage pauses and the mean score of their last `pause_window` answers (since their window started)
    is below `pause_threshold`. Returns whether they are paused now."""
    window = int(StageConfig.read(stage.config, "pause_window"))
    if window == 0:
        return False
    flag = session.get(AnnotatorFlag, (stage.id, annotator_id), with_for_update=True)
    if flag is not None and flag.paused_at is not None:
        return True
    start = session.scalar(sa.select(AnnotatorGate.window_from).where(
        AnnotatorGate.stage_id == stage.id, AnnotatorGate.annotator_id == annotator_id)) or 0
    recent = [a for a in answers if a.annotation_id > start][-window:]
    if len(recent) < window:
        return False
    accuracy = sum(a.score for a in recent) / window
    if accuracy >= float(StageConfig.read(stage.config, "pause_threshold")):
        return False
    pause_annotator(session, stage, annotator_id, accuracy, recent)
    return True


def pause_annotator(session: Session, stage: Stage, annotator_id: int, accuracy: float, window: list[gold.GoldAnswer]) -> None:
    """Pause the annotator in the stage (the "annotator paused" event): the flag with `paused_at`, their
    live leases there released (slots back to the pool), their finished work whose final no reviewer
    made sent to review, an `annotator.paused` audit event and the webhook event of that name. Claims then refuse them (app.gate)
    until `lift_pause`."""
    flag = session.get(AnnotatorFlag, (stage.id, annotator_id))
    if flag is None:
        flag = AnnotatorFlag(stage_id=stage.id, annotator_id=annotator_id, accuracy=accuracy, items=len(window))
        session.add(flag)
    flag.accuracy, flag.items, flag.paused_at = accuracy, len(window), sa.func.now()
    session.flush()
    released = session.execute(
        sa.update(Assignment).where(Assignment.stage_id == stage.id, Assignment.annotator_id == annotator_id,
                                    Assignment.status == AssignmentStatus.active)
        .values(status=_RELEASED).returning(Assignment.item_id)
    ).scalars().all()
    if released:
        freed = session.scalars(sa.update(Item).where(Item.id.in_(released), Item.stage_id == stage.id, Item.status != ItemStatus.gold)
                                .values(slots_left=Item.slots_left + 1).returning(Item.id)).all()
        if freed:
            queue.lower_floor(session, stage.id, min(freed))
    routed = gold.route_earlier(session, stage, annotator_id, window, mode="all")
    threshold = float(StageConfig.read(stage.config, "pause_threshold"))
    audit.record(session, "annotator.paused", target=f"user:{annotator_id}", stage=stage.id, accuracy=round(accuracy, 4),
                 window=len(window), threshold=threshold, released=len(released), routed=len(routed),
                 answers=[a.annotation_id for a in window])
    events.emit_for_project(session, stage.project_id, "annotator.paused", {
        "stage_id": stage.id, "annotator_id": annotator_id, "username": username(session, annotator_id),
        "accuracy": round(accuracy, 4), "window": len(window), "threshold": threshold})
    session.flush()


def can_manage(session: Session, stage: Stage, actor: User) -> bool:
    """Whether `actor` may lift pauses and reset quizzes in the stage: an admin or the workspace's manager."""
    return manages(session, actor, session.scalar(sa.select(Project.workspace_id).where(Project.id == stage.project_id)))


def username(session: Session, user_id: int) -> str:
    return session.scalar(sa.select(User.username).where(User.id == user_id)) or f"user {user_id}"


def _managed_stage(session: Session, stage_id: int, actor: User, annotator_id: int) -> Stage:
    """The stage, when it is of a live project (an archived one's answers as a missing one), `actor`
    manages its project's workspace (else Forbidden) and the annotator exists."""
    stage = get_stage(session, stage_id)
    if session.scalar(sa.select(Project.archived_at).where(Project.id == stage.project_id)) is not None:
        raise NotFound(f"No stage with id {stage_id}.")
    if not can_manage(session, stage, actor):
        raise Forbidden("Only an admin or a manager of the project's workspace can do this.")
    if session.get(User, annotator_id) is None:
        raise NotFound(f"No user with id {annotator_id}.")
    return stage


def lift_pause(session: Session, stage_id: int, annotator_id: int, actor: User) -> None:
    """Lift the annotator's pause in the stage: claims give them items again (what the pause released
    comes back to them as any item they gave back), and their rolling window starts anew after their
    newest answer. Their gold flag then follows their gold accuracy as before. An audit event."""
    stage = _managed_stage(session, stage_id, actor, annotator_id)
    flag = session.get(AnnotatorFlag, (stage.id, annotator_id), with_for_update=True)
    if flag is None or flag.paused_at is None:
        raise Conflict("This annotator is not paused in this stage.")
    row = _gate_row(session, stage.id, annotator_id)
    newest = session.scalar(sa.text("SELECT max(id) FROM annotations WHERE stage_id = :stage AND annotator_id = :user"),
                            {"stage": stage.id, "user": annotator_id})
    row.window_from = newest or 0
    was = {"accuracy": round(flag.accuracy, 4), "window": flag.items}
    session.delete(flag)
    session.flush()
    gold.rescore(session, stage, annotator_id, gold.scored_answers(session, stage, annotator_id))
    audit.record(session, "annotator.unpaused", actor_id=actor.id, target=f"user:{annotator_id}", stage=stage.id, before=was)
    session.flush()


def reset_quiz(session: Session, stage_id: int, annotator_id: int, actor: User) -> None:
    """Give the annotator the stage's quiz anew: every try back, the pass (if any) forgotten. An audit event."""
    stage = _managed_stage(session, stage_id, actor, annotator_id)
    row = _gate_row(session, stage.id, annotator_id)
    was = {"tries_failed": row.tries_failed, "passed": row.passed_at is not None, "last_score": row.last_score}
    row.tries_failed, row.try_answers, row.try_score, row.last_score, row.passed_at = 0, 0, 0.0, None, None
    audit.record(session, "quiz.reset", actor_id=actor.id, target=f"user:{annotator_id}", stage=stage.id, before=was)
    session.flush()


def quiz_banner(session: Session, config: dict[str, Any], stage_id: int, annotator_id: int) -> dict[str, Any] | None:
    """What the screen says to an annotator taking the stage's quiz (which answer of which try, the score
    needed); None when the stage has no quiz (nothing is read) or they passed it."""
    items, needed, tries = gate.quiz_settings(config)
    if items == 0:
        return None
    row = session.execute(sa.select(AnnotatorGate.passed_at, AnnotatorGate.tries_failed, AnnotatorGate.try_answers).where(
        AnnotatorGate.stage_id == stage_id, AnnotatorGate.annotator_id == annotator_id)).first()
    if row is not None and row.passed_at is not None:
        return None
    failed, given = (row.tries_failed, row.try_answers) if row is not None else (0, 0)
    return {"answer": min(given + 1, items), "items": items, "needed": needed, "try": min(failed + 1, tries), "tries": tries}


@dataclass
class Standing:
    """An annotator's quiz and pause in a stage, as a manager sees it."""

    annotator_id: int
    annotator: str
    quiz: str  # "passed", "failed" (no try left), "taking" or "" (no quiz in the stage)
    tries_used: int
    last_score: float | None
    paused_at: datetime | None
    pause_accuracy: float | None


def standings(session: Session, stage_id: int) -> list[Standing]:
    """Everyone with a quiz row or a pause in the stage, by name."""
    stage = get_stage(session, stage_id)
    items, _, tries = gate.quiz_settings(stage.config)
    gates = {g.annotator_id: g for g in session.scalars(sa.select(AnnotatorGate).where(AnnotatorGate.stage_id == stage_id))}
    pauses = {f.annotator_id: f for f in session.scalars(sa.select(AnnotatorFlag).where(
        AnnotatorFlag.stage_id == stage_id, AnnotatorFlag.paused_at.is_not(None)))}
    names = dict(session.execute(sa.select(User.id, User.username).where(User.id.in_(set(gates) | set(pauses)))).all())
    out = []
    for uid in sorted(names, key=names.get):
        g, f = gates.get(uid), pauses.get(uid)
        quiz = "" if not items or g is None else "passed" if g.passed_at else "failed" if g.tries_failed >= tries else "taking"
        out.append(Standing(uid, names[uid], quiz, g.tries_failed if g else 0, g.last_score if g else None,
                            f.paused_at if f else None, f.accuracy if f else None))
    return out
