"""The submit's statements: lock the assignment and its item, read what the decision needs, write
everything; and `SubmitRead`, the named view of what the first two read."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app import queue
from app.bias import arms
from app.datasets.workflow import ItemContext
from app.decision import Decision, Situation, StageSettings
from app.errors import Invalid, NotFound
from app.lifecycle import AssignmentStatus
from app.services.webhooks import events as webhook_events
from app.services.users.workspaces import member_sql

MAX_KEY_LENGTH = 100
_A = AssignmentStatus

# A submit in three round trips: lock the assignment and its item (the stage comes along), read what
# the decision needs in one statement taken after the lock (so it sees every submit committed before
# it; an archived project's assignment is not found), then write everything in one statement of data-modifying CTEs. Validation, suggestion outcomes
# and the decision (app.decision) run in Python between them; no ORM object is loaded on the way,
# except for a gold item's answer (rare; app.services.quality.gold scores it).
# Reads of an item's finals are fenced (OFFSET 0) to the item's own rows: with statistics gone stale
# the planner otherwise combined them with every final of the stage through ix_item_results_stage_id.
# The lock also says whether the stage is within the annotator's workspaces (no round trip of its own).
LOCK_FOR_SUBMIT = sa.text(
    f"""
    SELECT a.annotator_id, a.status AS assignment_status, i.id AS item_id, i.status AS item_status,
           i.stage_id AS item_stage, i.slots_left AS slots, i.data,
           s.id AS stage_id, s.project_id, s.position, s.workflow, s.config, s.overlap, s.sample_size, s.lease_seconds,
           extract(epoch FROM clock_timestamp() - (a.lease_until - make_interval(secs => s.lease_seconds)))::float8 AS held_seconds,
           {member_sql("p.id", "p.workspace_id")} AS member
    FROM assignments a JOIN items i ON i.id = a.item_id JOIN stages s ON s.id = a.stage_id
    JOIN projects p ON p.id = s.project_id AND p.archived_at IS NULL
    WHERE a.id = :assignment
    FOR UPDATE OF a, i
    """
)

SUBMIT_CONTEXT = sa.text(
    f"""
    SELECT
        (SELECT json_build_object('id', e.id, 'assignment_id', e.assignment_id, 'payload', e.payload, 'revision', e.revision)
         FROM annotations e WHERE e.annotator_id = :user AND e.idempotency_key = :key) AS earlier,
        (SELECT max(revision) FROM annotations WHERE assignment_id = :assignment) AS last_revision,
        (SELECT active_seconds FROM drafts WHERE assignment_id = :assignment) AS draft_active,
        (SELECT json_agg(json_build_object('workflow', s.workflow, 'payload', r.payload, 'position', s.position) ORDER BY r.id)
         FROM (SELECT id, stage_id, payload FROM item_results WHERE item_id = :item OFFSET 0) r JOIN stages s ON s.id = r.stage_id) AS finals,
        (SELECT min(gs.position) FROM gold_items g JOIN stages gs ON gs.id = g.stage_id WHERE g.item_id = :item) AS gold_from,
        (SELECT json_agg(json_build_object('id', g.id, 'kind', g.kind, 'model', g.model, 'model_version', g.model_version,
                                           'payload', g.payload) ORDER BY g.kind)
         FROM (SELECT DISTINCT ON (kind) id, kind, model, model_version, payload FROM suggestions
               WHERE item_id = :item AND stage_id = :stage ORDER BY kind, created_at DESC, id DESC) g) AS shown,
        (SELECT json_agg(json_build_object('assignment_id', x.assignment_id, 'payload', x.payload) ORDER BY x.assignment_id)
         FROM (SELECT DISTINCT ON (n.assignment_id) n.assignment_id, n.payload
               FROM annotations n JOIN assignments o ON o.id = n.assignment_id
               WHERE n.item_id = :item AND n.stage_id = :stage AND o.status = '{_A.submitted}' AND o.id <> :assignment
               ORDER BY n.assignment_id, n.revision DESC) x) AS others,
        EXISTS (SELECT 1 FROM stage_samples WHERE stage_id = :stage AND item_id = :item) AS sampled,
        (SELECT json_agg(json_build_object('id', s.id, 'workflow', s.workflow, 'config', s.config, 'overlap', s.overlap,
                         'sample_size', s.sample_size,
                         'sampled', EXISTS (SELECT 1 FROM stage_samples ss WHERE ss.stage_id = s.id AND ss.item_id = :item))
                         ORDER BY s.position)
         FROM stages s WHERE s.project_id = :project AND s.position > :position) AS later,
        (SELECT array_agg(f.annotator_id ORDER BY f.annotator_id) FROM annotator_flags f
         WHERE f.stage_id = :stage AND f.annotator_id IN (
             SELECT annotator_id FROM assignments
             WHERE item_id = :item AND stage_id = :stage AND (status = '{_A.submitted}' OR id = :assignment))) AS flagged,
        {webhook_events.HOOKED_SQL} AS hooked
    """
)


@functools.cache
def write_statement(outcomes: bool, final: bool, item: bool) -> sa.TextClause:
    """The submit's writes as one statement; its optional parts by what this submit changes."""
    parts = [
        """ann AS (
            INSERT INTO annotations (assignment_id, item_id, stage_id, annotator_id, revision, idempotency_key, payload, seconds_spent,
                                     arm, active_seconds, wall_seconds)
            VALUES (:assignment, :item, :stage, :user, :revision, :key, CAST(:payload AS jsonb), :seconds, :arm, :active, :wall)
            RETURNING id)""",
        "asg AS (UPDATE assignments SET status = :assignment_status, submitted_at = now() WHERE id = :assignment)",
        "dra AS (DELETE FROM drafts WHERE assignment_id = :assignment)",
    ]
    if outcomes:
        parts.append(
            """sug AS (
            INSERT INTO suggestion_outcomes (annotation_id, suggestion_id, stage_id, kind, model, model_version, outcome, shown, edit_distance)
            SELECT ann.id, o.id, :stage, o.kind, o.model, o.model_version, o.outcome, o.shown, o.edit_distance
            FROM ann, jsonb_to_recordset(CAST(:outcomes AS jsonb))
                 AS o(id bigint, kind text, model text, model_version text, outcome text, shown boolean, edit_distance float8)
            ON CONFLICT (annotation_id, suggestion_id) DO NOTHING)"""
        )
    if final:
        parts.append(
            "fin AS (INSERT INTO item_results (item_id, stage_id, payload, discard, source)"
            " VALUES (:item, :stage, CAST(:final AS jsonb), :discard, 'auto'))"
        )
    if item:
        parts.append("itm AS (UPDATE items SET status = :item_status, stage_id = :item_stage, slots_left = :slots WHERE id = :item)")
    return sa.text("WITH " + ",\n".join(parts) + "\nSELECT id FROM ann")


@dataclass(frozen=True)
class SubmitRead:
    """What a submit read: the locked row and the context (both named rows), with the views on them it needs."""

    lock: Mapping[str, Any]
    ctx: Mapping[str, Any]

    @functools.cached_property
    def stage(self) -> StageSettings:
        lock = self.lock
        return StageSettings(lock["stage_id"], lock["workflow"], lock["config"], lock["overlap"], lock["sample_size"], self.ctx["sampled"])

    def answer_times(self, seconds_spent: float | None, active_seconds: float | None) -> tuple[float | None, float | None]:
        """This answer's wall time (claim to submit: since its lease began; a revision of a submitted or
        sent-back answer, the time its screen was open) and its active time (what the screen posted or its
        drafts gathered, whichever is more, capped by app.bias.arms.active_seconds at the wall time
        and the stage's lease length)."""
        lock = self.lock
        revision = lock["assignment_status"] in (_A.submitted, _A.returned)  # no lease of its own (a sent-back one not claimed again)
        wall = seconds_spent if revision else max(0.0, lock["held_seconds"])
        posted = [v for v in (arms.active_seconds(active_seconds), arms.active_seconds(self.ctx["draft_active"])) if v is not None]
        return wall, arms.active_seconds(max(posted), wall, lease=lock["lease_seconds"]) if posted else None

    def shows(self, position: int) -> bool:
        """A gold item shows only the finals before its gold stage (its own final there is the truth)."""
        return self.ctx["gold_from"] is None or position < self.ctx["gold_from"]

    @functools.cached_property
    def results(self) -> dict[str, Any]:
        return {f["workflow"]: f["payload"] for f in self.ctx["finals"] or () if self.shows(f["position"])}

    @functools.cached_property
    def item_context(self) -> ItemContext:
        """The item as the workflow's hooks read it."""
        return ItemContext(self.lock["data"], self.lock["config"], self.results)

    def answers(self, assignment_id: int, clean: dict[str, Any]) -> list[dict[str, Any]]:
        """The stage's answers with this one, in assignment order (the order consolidation reads them in)."""
        mine = {"assignment_id": assignment_id, "payload": clean}
        return [a["payload"] for a in sorted([*(self.ctx["others"] or ()), mine], key=lambda a: a["assignment_id"])]

    def situation(self, answers: list[dict[str, Any]], flagged, *, status: str, slots: int, ordinary: bool = False) -> Situation:
        """The decision's input; `ordinary` as if the item were not gold (outside any sample, showing its own final)."""
        stage = replace(self.stage, sampled=False) if ordinary else self.stage
        return Situation(
            stage, [StageSettings(**s) for s in self.ctx["later"] or ()], status, slots, self.lock["data"],
            self.results, ordinary or self.shows(self.lock["position"]), answers, flagged,
        )


def announce_final(session: Session, read: SubmitRead, decision: Decision) -> None:
    """Tell the workspace's webhooks that the submit finalized the item, if any listens (the context's `hooked`)."""
    if decision.final is not None and read.ctx["hooked"] is not None:
        lock = read.lock
        webhook_events.finalized(session, read.ctx["hooked"], {
            "item_id": lock["item_id"], "project_id": lock["project_id"], "stage_id": lock["stage_id"],
            "record": decision.final, "discard": decision.discard, "source": "auto"})


def read_for_submit(session: Session, assignment_id: int, user_id: int, key: str) -> tuple[SubmitRead, dict[str, Any]]:
    """Lock the user's assignment and its item, then read the submit's context; with the statements' parameters."""
    if not key or len(key) > MAX_KEY_LENGTH:
        raise Invalid(f"An idempotency key of 1 to {MAX_KEY_LENGTH} characters is required.")
    # The row lock on the assignment serializes concurrent posts of the same submit.
    lock = session.execute(LOCK_FOR_SUBMIT, {"assignment": assignment_id, "user": user_id}).mappings().first()
    if lock is None or lock["annotator_id"] != user_id or not lock["member"]:
        raise NotFound(queue.NO_SUCH_ASSIGNMENT)
    params = {"assignment": assignment_id, "user": user_id, "key": key, "item": lock["item_id"], "stage": lock["stage_id"],
              "project": lock["project_id"], "position": lock["position"]}
    return SubmitRead(lock, session.execute(SUBMIT_CONTEXT, params).mappings().one()), params
