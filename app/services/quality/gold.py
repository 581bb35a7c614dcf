"""Gold items: marking them (import by external id, or an item's final), storing and scoring the
answers annotators give them, accuracy per annotator, and the flag that routes work to review.

A gold item is an item with status `gold` in its stage plus a `gold_items` row holding the truth.
The status keeps it out of everything that reads data: the ordinary queue (it claims `active`
items), finals (its answers never consolidate), agreement (its annotations are left out),
progress and exports (they read `done` items). `app.honeypot` serves gold items in the queue.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app import jsontext
from app.agreement import gold as scoring
from app.datasets import get_workflow
from app.datasets.workflow import ItemContext, StageConfig
from app.errors import Invalid, NotFound
from app.lifecycle import AssignmentEvent, AssignmentStatus, ItemEvent, ItemStatus, target, transition
from app.models import (
    Annotation,
    AnnotatorFlag,
    Assignment,
    AuditEvent,
    Draft,
    GoldItem,
    Item,
    ItemResult,
    QuizAnswer,
    Stage,
    User,
)
from app.services.projects.projects import get_stage
from app.services.quality import bias, exposure
from app.services.users import audit

MAX_GOLD_LINES = 100_000
ROUTED = "routed: annotator below gold accuracy"  # why the review queue holds a flagged annotator's item


def setting(stage: Stage, key: str) -> Any:
    return StageConfig.read(stage.config, key)


# -- marking gold -------------------------------------------------------------------


def earlier_results(session: Session, item_id: int, stage: Stage) -> dict[str, dict[str, Any]]:
    """The item's finals of the stages before `stage`, by workflow (what a gold answer builds on)."""
    rows = session.execute(
        sa.select(Stage.workflow, ItemResult.payload)
        .join(Stage, Stage.id == ItemResult.stage_id)
        .where(ItemResult.item_id == item_id, Stage.project_id == stage.project_id, Stage.position < stage.position)
        .order_by(ItemResult.id)
    )
    return {name: payload for name, payload in rows}


def mark(session: Session, item: Item, stage: Stage, answer: dict[str, Any], *, source: str, actor_id: int | None) -> None:
    """Make `item` a gold item of `stage` with `answer` (already validated) as its truth."""
    was = item.status
    item.status = transition(item.status, ItemEvent.make_gold)
    item.stage_id = stage.id
    item.slots_left = 0
    session.execute(
        pg_insert(GoldItem)
        .values(stage_id=stage.id, item_id=item.id, answer=answer, source=source, created_by=actor_id)
        .on_conflict_do_update(index_elements=["stage_id", "item_id"], set_={"answer": answer, "source": source, "created_by": actor_id})
    )
    audit.record(session, "gold.marked", actor_id=actor_id, target=f"item:{item.id}", stage=stage.id, source=source, was=str(was))


def import_answers(session: Session, stage_id: int, body: bytes, *, actor_id: int | None) -> int:
    """Mark the items named in a JSONL file as gold items of the stage. Each line is
    {"id": <external id>, "answer": <payload as the stage's submit takes it>}; answers are
    validated like annotations. Any bad line changes nothing, and every problem names its line."""
    stage = get_stage(session, stage_id)
    problems: list[str] = []
    parsed = _parsed_lines(_numbered_lines(body), problems)
    clean = _validated_answers(session, stage, parsed, problems)
    if problems:
        raise Invalid(f"The gold file has {len(problems)} problem(s); nothing was imported.", problems[:50])
    for item, answer in clean:
        mark(session, item, stage, answer, source="import", actor_id=actor_id)
    session.flush()
    return len(clean)


def _numbered_lines(body: bytes) -> list[tuple[int, str]]:
    """The file's non-blank lines with their numbers; refused when not UTF-8, empty or too long."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Invalid("The gold file is not UTF-8 text.") from None
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise Invalid("The gold file has no answers (one JSON object per line: {\"id\": ..., \"answer\": {...}}).")
    if len(lines) > MAX_GOLD_LINES:
        raise Invalid(f"The gold file has {len(lines)} answers; at most {MAX_GOLD_LINES} per import.")
    return lines


def _parsed_lines(lines: list[tuple[int, str]], problems: list[str]) -> list[tuple[int, str, dict[str, Any]]]:
    """(line, external id, answer) of each well-formed line; the others, and repeated ids, go to `problems`."""
    parsed: list[tuple[int, str, dict[str, Any]]] = []
    for n, line in lines:
        try:
            record = jsontext.loads(line)
        except jsontext.NumberRefused as exc:
            problems.append(f"line {n}: {exc}")
            continue
        except json.JSONDecodeError as exc:
            problems.append(f"line {n}: not JSON ({exc.msg})")
            continue
        if not isinstance(record, dict) or not isinstance(record.get("id"), str) or not isinstance(record.get("answer"), dict):
            problems.append(f"line {n}: expected {{\"id\": \"<external id>\", \"answer\": {{...}}}}")
            continue
        parsed.append((n, record["id"], record["answer"]))
    ids = [external for _, external, _ in parsed]
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        problems += [f"line {n}: item {e!r} is named twice" for n, e, _ in parsed if e in seen or seen.add(e)]
    return parsed


def _validated_answers(
    session: Session, stage: Stage, parsed: list[tuple[int, str, dict[str, Any]]], problems: list[str]
) -> list[tuple[Item, dict[str, Any]]]:
    """Each named item (locked) with its answer validated as the stage's submit validates it; items
    missing or discarded, and invalid answers, go to `problems`."""
    workflow = get_workflow(stage.workflow)
    ids = [external for _, external, _ in parsed]
    items = {
        i.external_id: i
        for i in session.scalars(
            sa.select(Item).where(Item.project_id == stage.project_id, Item.external_id.in_(ids)).with_for_update()
        )
    }
    clean: list[tuple[Item, dict[str, Any]]] = []
    for n, external, answer in parsed:
        item = items.get(external)
        if item is None:
            problems.append(f"line {n}: no item {external!r} in this project")
            continue
        if item.status == ItemStatus.discarded:
            problems.append(f"line {n}: item {external!r} is discarded")
            continue
        try:
            clean.append((item, workflow.validate_annotation(ItemContext(item.data, stage.config, earlier_results(session, item.id, stage)), answer)))
        except Invalid as exc:
            problems += [f"line {n}: {p}" for p in (exc.errors or [exc.message])]
    return clean


def make_final_gold(session: Session, item_id: int, stage_id: int, *, actor_id: int | None) -> None:
    """Make the item's newest final record in the stage the truth of a gold item there (the item
    then leaves the data: it is no longer exported)."""
    stage = get_stage(session, stage_id)
    item = session.scalar(sa.select(Item).where(Item.id == item_id).with_for_update())
    if item is None or item.project_id != stage.project_id:
        raise NotFound("No such item in this stage's project.")
    final = session.scalar(
        sa.select(ItemResult).where(ItemResult.item_id == item_id, ItemResult.stage_id == stage_id).order_by(ItemResult.id.desc()).limit(1)
    )
    if final is None:
        raise Invalid("This item has no final record in that stage yet.")
    if final.discard:
        raise Invalid("The final record discards the item; a discarded item cannot be gold.")
    mark(session, item, stage, final.payload, source="final", actor_id=actor_id)
    session.flush()


def gold_item_ids(session: Session, stage_id: int) -> set[int]:
    return set(session.scalars(sa.select(GoldItem.item_id).where(GoldItem.stage_id == stage_id)))


# -- answers ---------------------------------------------------------------------------


def submit_answer(
    session: Session,
    assignment: Assignment,
    item: Item,
    stage: Stage,
    payload: dict[str, Any],
    idempotency_key: str,
    seconds_spent: float | None,
    *,
    active_seconds: float | None = None,
    wall_seconds: float | None = None,
) -> GoldSubmit:
    """Store an annotator's answer to a gold item (validated as any annotation; an expired lease
    still counts, since a gold item has no slots) with the arm it was given in and, on a probe,
    whether it caught the planted error; score it and update the annotator's flag."""
    clean = get_workflow(stage.workflow).validate_annotation(ItemContext(item.data, stage.config, earlier_results(session, item.id, stage)), payload)
    seen, truth = exposure.for_gold_answer(session, stage.config, assignment.id, stage.workflow, item.id, stage.id, item.data,
                                           assignment.annotator_id)
    caught = seen.probe.caught(truth, clean, item.data) if seen.probe is not None and truth is not None else None
    revision = (
        session.scalar(sa.select(sa.func.max(Annotation.revision)).where(Annotation.assignment_id == assignment.id)) or 0
    ) + 1
    annotation = Annotation(
        assignment_id=assignment.id, item_id=item.id, stage_id=stage.id, annotator_id=assignment.annotator_id,
        revision=revision, idempotency_key=idempotency_key, payload=clean, seconds_spent=seconds_spent,
        arm=seen.arm, probe_caught=caught, active_seconds=active_seconds, wall_seconds=wall_seconds,
    )
    session.add(annotation)
    assignment.status = transition(assignment.status, AssignmentEvent.submit)
    assignment.submitted_at = sa.func.now()
    session.execute(sa.delete(Draft).where(Draft.assignment_id == assignment.id))
    session.flush()
    from app.services.quality import qualification  # it builds on this module

    if qualification.quiz_answer(session, stage, assignment.annotator_id, annotation.id, item.id, clean):
        return GoldSubmit(annotation.id, revision, clean, session.get(AnnotatorFlag, (stage.id, assignment.annotator_id)) is not None)
    answers = scored_answers(session, stage, assignment.annotator_id)
    flagged_now = rescore(session, stage, assignment.annotator_id, answers)
    flagged_now = qualification.check_pause(session, stage, assignment.annotator_id, answers) or flagged_now
    return GoldSubmit(annotation.id, revision, clean, flagged_now)


@dataclass(frozen=True)
class GoldSubmit:
    annotation_id: int
    revision: int
    payload: dict[str, Any]  # the answer as validated
    flagged: bool  # the annotator's flag in the stage once this answer is scored (the submit's answer reads it)


@dataclass
class GoldAnswer:
    annotator_id: int
    annotator: str
    item_id: int
    score: float
    at: datetime
    annotation_id: int

    @property
    def day(self) -> str:
        return self.at.date().isoformat()


def scored_answers(session: Session, stage: Stage, annotator_id: int | None = None) -> list[GoldAnswer]:
    """Each annotator's latest submitted answer to each gold item of the stage, scored against the truth
    (quiz answers left out: they count for the qualification quiz only)."""
    workflow = get_workflow(stage.workflow)
    latest = (
        sa.select(Annotation.assignment_id, sa.func.max(Annotation.revision).label("revision"))
        .join(GoldItem, sa.and_(GoldItem.item_id == Annotation.item_id, GoldItem.stage_id == Annotation.stage_id))
        .where(Annotation.stage_id == stage.id)
        .group_by(Annotation.assignment_id)
    )
    if annotator_id is not None:
        latest = latest.where(Annotation.annotator_id == annotator_id)
    latest = latest.subquery()
    rows = session.execute(
        sa.select(Annotation.annotator_id, User.username, Annotation.item_id, Annotation.payload, GoldItem.answer, Annotation.created_at,
                  Annotation.id)
        .join(latest, sa.and_(Annotation.assignment_id == latest.c.assignment_id, Annotation.revision == latest.c.revision))
        .join(Assignment, Assignment.id == Annotation.assignment_id)
        .join(GoldItem, sa.and_(GoldItem.item_id == Annotation.item_id, GoldItem.stage_id == Annotation.stage_id))
        .join(User, User.id == Annotation.annotator_id)
        .where(Assignment.status == AssignmentStatus.submitted, ~sa.exists().where(QuizAnswer.annotation_id == Annotation.id))
        .order_by(Annotation.id)
    )
    return [
        GoldAnswer(uid, name, item_id, scoring.answer_score(workflow.facets, workflow.facet_values(truth), workflow.facet_values(payload)), at,
                   annotation_id)
        for uid, name, item_id, payload, truth, at, annotation_id in rows
    ]


def rescore(session: Session, stage: Stage, annotator_id: int, answers: list[GoldAnswer]) -> bool:
    """Flag the annotator in the stage when their gold accuracy (`answers`: their scored answers) is below
    the stage's threshold over at least its minimum of gold answers; lift the flag when it is no longer
    (an auto-pause's flag stays until a manager lifts it). Both are audit events. A new flag in a stage
    that routes to review sends their earlier finished work there too (`route_earlier`). Returns
    whether the annotator is flagged now."""
    scores = [a.score for a in answers]
    n = len(scores)
    accuracy = sum(scores) / n if n else 1.0
    below = n >= int(setting(stage, "gold_min_items")) and accuracy < float(setting(stage, "gold_threshold"))
    probes = bias.probe_catch(session, stage, annotator_id)
    below = below or probes is not None
    flag = session.get(AnnotatorFlag, (stage.id, annotator_id), with_for_update=True)
    detail = {"stage": stage.id, "accuracy": round(accuracy, 4), "items": n,
              **({"probe_catch": round(probes[0], 4), "probes": probes[1]} if probes is not None else {})}
    if below and flag is None:
        session.add(AnnotatorFlag(stage_id=stage.id, annotator_id=annotator_id, accuracy=accuracy, items=n))
        audit.record(session, "gold.flagged", target=f"user:{annotator_id}", **detail)
        session.flush()
        route_earlier(session, stage, annotator_id, answers)
    elif below and flag.paused_at is None:
        flag.accuracy, flag.items = accuracy, n
    elif flag is not None and flag.paused_at is None:
        session.delete(flag)
        audit.record(session, "gold.unflagged", target=f"user:{annotator_id}", **detail)
    session.flush()
    return below


def last_pass(answers: list[GoldAnswer], window: int, threshold: float) -> int | None:
    """Where the annotator last stood clear: the annotation id of the last answer of their newest
    run of `window` consecutive gold answers scoring at least `threshold` on average; None if no run
    did. (Annotation ids order answers across transactions; their times are each transaction's start.)"""
    for end in range(len(answers), window - 1, -1):
        run = answers[end - window:end]
        if sum(a.score for a in run) / window >= threshold:
            return run[-1].annotation_id
    return None


def route_earlier(session: Session, stage: Stage, annotator_id: int, answers: list[GoldAnswer], mode: str | None = None) -> list[int]:
    """Send the newly flagged annotator's finished work in the stage back to review, as routing
    would have sent it had the flag been there: items done in this stage whose final is the automatic
    consolidation of answers that include theirs, finished since their last passing window (the
    stage's `gold_route_earlier`: "since_passing", "all" or "none"). A reviewer's final stays, and
    items that moved on to a later stage stay there (others build on them). The automatic final is
    kept (the reviewer's is appended after it); each item gets a `gold.routed_to_review` event.
    `mode` in place of the stage's setting (an auto-pause sends "all"). Returns the items' ids."""
    mode = mode or setting(stage, "gold_route_earlier")
    if not StageConfig.routes_flagged(stage.config) or mode == "none":
        return []
    theirs = sa.select(Assignment.item_id).where(
        Assignment.annotator_id == annotator_id, Assignment.stage_id == stage.id, Assignment.status == AssignmentStatus.submitted
    )
    if mode == "since_passing":
        since = last_pass(answers, int(setting(stage, "gold_min_items")), float(setting(stage, "gold_threshold")))
        if since is not None:
            theirs = theirs.where(sa.exists().where(Annotation.assignment_id == Assignment.id, Annotation.id > since))
    newest_final = (
        sa.select(ItemResult.source).where(ItemResult.item_id == Item.id, ItemResult.stage_id == stage.id)
        .order_by(ItemResult.id.desc()).limit(1).scalar_subquery()
    )
    moved = session.scalars(
        sa.update(Item)
        .where(Item.id.in_(theirs), Item.stage_id == stage.id, Item.status == ItemStatus.done, newest_final == "auto")
        .values(status=target(ItemEvent.recheck, ItemStatus.done))
        .returning(Item.id)
        .execution_options(synchronize_session="fetch")
    ).all()
    if moved:
        session.execute(sa.insert(AuditEvent), [
            {"action": "gold.routed_to_review", "target": f"item:{item_id}",
             "detail": {"stage": stage.id, "annotators": [annotator_id], "earlier": True}}
            for item_id in sorted(moved)
        ])
    return sorted(moved)


def flagged(session: Session, stage_id: int) -> dict[int, AnnotatorFlag]:
    return {f.annotator_id: f for f in session.scalars(sa.select(AnnotatorFlag).where(AnnotatorFlag.stage_id == stage_id))}


def routed_accuracy(session: Session, stage: Stage, item_ids: list[int]) -> dict[int, float]:
    """Of `item_ids`, those the stage routes to review for a flagged annotator, each with the lowest
    gold accuracy among its flagged annotators (the review queue's reason and order)."""
    if not item_ids or not StageConfig.routes_flagged(stage.config):
        return {}
    rows = session.execute(
        sa.select(Assignment.item_id, sa.func.min(AnnotatorFlag.accuracy))
        .join(AnnotatorFlag, sa.and_(AnnotatorFlag.annotator_id == Assignment.annotator_id, AnnotatorFlag.stage_id == Assignment.stage_id))
        .where(Assignment.stage_id == stage.id, Assignment.item_id.in_(item_ids), Assignment.status == AssignmentStatus.submitted)
        .group_by(Assignment.item_id)
    )
    return dict(rows.all())


def final_stages(session: Session, item_id: int) -> list[dict[str, Any]]:
    """The stages where the item has a final record that keeps it ("make this final gold" offers them)."""
    rows = session.execute(
        sa.select(Stage.id, Stage.name, ItemResult.discard)
        .join(ItemResult, ItemResult.stage_id == Stage.id)
        .where(ItemResult.item_id == item_id)
        .order_by(Stage.position, ItemResult.id)
    )
    last = {sid: (name, discard) for sid, name, discard in rows}
    return [{"id": sid, "name": name} for sid, (name, discard) in last.items() if not discard]
