"""A workspace's work log: per annotator, calendar day and project, the items answered, active and wall
hours and gold accuracy. One function makes the rows for the page, the API and the CSV / Parquet files,
so the three always agree (docs/work-log.md).

Every submitted answer (revisions too) counts on the day it was stored, in the work log's time zone
(VLCURATE_WORKLOG_TIMEZONE): its active seconds, and its wall seconds (claim to submit; an answer stored
before the work log kept them counts the time its screen was open). `items` counts first answers only, so
a revision adds time, not an item. Gold accuracy: gold answers fully right (the app's answer score is 1)
over the gold answers, each on the day it was stored, counted as the stage's gold accuracy counts
them: an assignment's latest revision once it is submitted, qualification quiz answers left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from datetime import date
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.agreement import gold as scoring
from app.datasets import get_workflow
from app.errors import NotFound
from app.models import Project, User, Workspace
from app.services.users.workspaces import manages

BATCH = 2000  # rows read from the server-side cursor at a time


@dataclass(frozen=True)
class WorkLogFilter:
    """Days from `start` to `end` (both included, in `timezone`; None: unbounded), one annotator
    (username) or one project when given."""

    timezone: str = "UTC"
    start: date | None = None
    end: date | None = None
    annotator: str = ""
    project_id: int | None = None


@dataclass(frozen=True)
class WorkLogRow:
    day: date
    annotator: str
    project_id: int
    project: str
    items: int  # first answers (revisions add time, not items)
    answers: int  # every submitted revision
    active_hours: float
    wall_hours: float
    gold_answers: int
    gold_correct: int
    gold_accuracy: float | None  # gold_correct / gold_answers; None without gold answers

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


COLUMNS = [f.name for f in fields(WorkLogRow)]
HOURS_DIGITS = 4  # 0.36 s: the page, the API and the files show the same rounded figure


def workspace_for(session: Session, user: User, workspace_id: int) -> Workspace:
    """The workspace whose log `user` may read (a global admin, or its manager); NotFound for anyone
    else, as for a workspace that does not exist, so that no workspace's name or existence leaks."""
    workspace = session.get(Workspace, workspace_id)
    if workspace is None or not manages(session, user, workspace_id):
        raise NotFound(f"No workspace {workspace_id}.")
    return workspace


def _where(f: WorkLogFilter) -> tuple[str, dict[str, Any]]:
    """The filter as SQL conditions over `n` (annotations), `p` (projects), `u` (users), with parameters."""
    conditions, params = ["p.workspace_id = :workspace", "p.archived_at IS NULL"], {"tz": f.timezone}
    if f.start is not None:
        conditions.append("n.created_at >= (CAST(:start AS date)::timestamp AT TIME ZONE :tz)")
        params["start"] = f.start
    if f.end is not None:
        conditions.append("n.created_at < ((CAST(:end AS date) + 1)::timestamp AT TIME ZONE :tz)")
        params["end"] = f.end
    if f.annotator:
        conditions.append("u.username = :annotator")
        params["annotator"] = f.annotator
    if f.project_id is not None:
        conditions.append("p.id = :project")
        params["project"] = f.project_id
    return " AND ".join(conditions), params


_FROM = """FROM annotations n JOIN stages s ON s.id = n.stage_id JOIN projects p ON p.id = s.project_id
    JOIN users u ON u.id = n.annotator_id"""
_DAY = "(n.created_at AT TIME ZONE :tz)::date"
_TOTALS = f"""SELECT {_DAY} AS day, u.username AS annotator, p.id AS project_id, p.name AS project,
           count(*) FILTER (WHERE n.revision = 1) AS items, count(*) AS answers,
           COALESCE(sum(n.active_seconds), 0) AS active_seconds,
           COALESCE(sum(COALESCE(n.wall_seconds, n.seconds_spent)), 0) AS wall_seconds
    {_FROM}
    WHERE {{where}}
    GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3"""
# The answers the stage's gold accuracy scores (`gold.scored_answers`): each submitted assignment's
# latest revision, quiz answers left out.
_GOLD = f"""SELECT {_DAY} AS day, u.username AS annotator, p.id AS project_id, s.workflow, g.answer AS truth, n.payload
    {_FROM} JOIN gold_items g ON g.item_id = n.item_id AND g.stage_id = n.stage_id
    JOIN assignments a ON a.id = n.assignment_id AND a.status = 'submitted'
    WHERE {{where}} AND NOT EXISTS (SELECT 1 FROM quiz_answers q WHERE q.annotation_id = n.id)
      AND NOT EXISTS (SELECT 1 FROM annotations m WHERE m.assignment_id = n.assignment_id AND m.revision > n.revision)"""


def _gold_tally(session: Session, where: str, params: dict[str, Any]) -> dict[tuple, tuple[int, int]]:
    """(day, annotator, project id) → (gold answers, fully right ones), each answer scored as the app scores gold."""
    answered, right = Counter(), Counter()
    rows = session.execute(sa.text(_GOLD.format(where=where)).execution_options(yield_per=BATCH), params)
    for row in rows:
        workflow = get_workflow(row.workflow)
        key = (row.day, row.annotator, row.project_id)
        answered[key] += 1
        score = scoring.answer_score(workflow.facets, workflow.facet_values(row.truth), workflow.facet_values(row.payload))
        right[key] += score >= 1.0
    return {k: (n, right[k]) for k, n in answered.items()}


def rows(session: Session, workspace_id: int, f: WorkLogFilter) -> Iterator[WorkLogRow]:
    """The work log's rows by day, annotator and project, streamed from a server-side cursor (the gold
    tally, one entry per row with gold answers, is read first)."""
    where, params = _where(f)
    params["workspace"] = workspace_id
    gold = _gold_tally(session, where, params)
    for row in session.execute(sa.text(_TOTALS.format(where=where)).execution_options(yield_per=BATCH), params):
        answered, right = gold.get((row.day, row.annotator, row.project_id), (0, 0))
        yield WorkLogRow(
            day=row.day, annotator=row.annotator, project_id=row.project_id, project=row.project, items=row.items, answers=row.answers,
            active_hours=round(row.active_seconds / 3600, HOURS_DIGITS), wall_hours=round(row.wall_seconds / 3600, HOURS_DIGITS),
            gold_answers=answered, gold_correct=right, gold_accuracy=round(right / answered, 4) if answered else None,
        )


def totals(found: list[WorkLogRow]) -> dict[str, Any]:
    """The rows' sums (the page's last line): items, answers, hours, gold answers and accuracy."""
    gold = sum(r.gold_answers for r in found)
    right = sum(r.gold_correct for r in found)
    return {
        "items": sum(r.items for r in found), "answers": sum(r.answers for r in found),
        "active_hours": round(sum(r.active_hours for r in found), HOURS_DIGITS), "wall_hours": round(sum(r.wall_hours for r in found), HOURS_DIGITS),
        "gold_answers": gold, "gold_correct": right, "gold_accuracy": round(right / gold, 4) if gold else None,
    }


def projects_of(session: Session, workspace_id: int) -> list[tuple[int, str]]:
    """The workspace's projects not archived (id, name), for the page's filter."""
    query = sa.select(Project.id, Project.name).where(Project.workspace_id == workspace_id, Project.archived_at.is_(None))
    return [tuple(r) for r in session.execute(query.order_by(Project.name))]


def managed(session: Session, user: User) -> list[Workspace]:
    """The workspaces whose log `user` may read, by name."""
    return [w for w in session.scalars(sa.select(Workspace).order_by(Workspace.name)) if manages(session, user, w.id)]
