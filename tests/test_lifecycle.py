"""The item and assignment lifecycles: the transition tables, and the database holding exactly the enums' values."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from app import lifecycle, queue
from app.errors import Conflict
from app.lifecycle import (
    ASSIGNMENT_TRANSITIONS,
    ITEM_TRANSITIONS,
    AssignmentEvent,
    AssignmentStatus,
    IllegalTransition,
    ItemEvent,
    ItemStatus,
    transition,
)
from app.models import Assignment, Item, Project, Stage, User

A, AE, I, IE = AssignmentStatus, AssignmentEvent, ItemStatus, ItemEvent
APP = Path(__file__).resolve().parents[1] / "app"

# Every move the code makes, as it makes it (queue, submit, pipeline, review).
MOVES = [
    (I.active, IE.escalate, I.review),  # consolidation found no majority
    (I.review, IE.escalate, I.review),  # a late submit re-consolidated while waiting for review
    (I.active, IE.advance, I.active),  # a final record, and a later stage applies
    (I.review, IE.advance, I.active),  # a reviewer's final record
    (I.active, IE.finish, I.done),
    (I.review, IE.finish, I.done),
    (I.active, IE.discard, I.discarded),
    (I.review, IE.discard, I.discarded),
    (I.review, IE.send_back, I.active),
    (I.active, IE.take_back, I.review),
    (I.done, IE.recheck, I.review),  # a flagged annotator's finished work goes back to review
    (A.returned, AE.claim, A.active),  # a sent-back item comes first in its annotator's queue
    (A.skipped, AE.claim, A.active),
    (A.released, AE.claim, A.active),
    (A.expired, AE.claim, A.active),
    (A.active, AE.skip, A.skipped),
    (A.active, AE.release, A.released),
    (A.active, AE.expire, A.expired),
    (A.active, AE.submit, A.submitted),
    (A.submitted, AE.submit, A.submitted),  # a new revision
    (A.returned, AE.submit, A.submitted),
    (A.expired, AE.submit, A.submitted),  # late work, kept while a slot is free
    (A.submitted, AE.send_back, A.returned),
    (A.returned, AE.reinstate, A.submitted),
    (A.active, AE.withdraw, A.released),
]

ILLEGAL = [
    (I.done, IE.send_back),
    (I.discarded, IE.advance),
    (I.done, IE.escalate),
    (I.active, IE.send_back),  # only an item waiting for review is sent back
    (I.review, IE.take_back),
    (A.submitted, AE.skip),
    (A.released, AE.release),
    (A.active, AE.claim),  # a live lease is not claimed twice
    (A.returned, AE.withdraw),
    (A.active, AE.send_back),
    (A.submitted, AE.expire),
]


@pytest.mark.parametrize("current, event, after", MOVES)
def test_the_moves_the_code_makes_are_in_the_tables(current, event, after):
    assert transition(current, event) is after
    assert current.next(event) is after
    assert transition(str(current), event) is after  # a plain string from the database works too


@pytest.mark.parametrize("current, event", ILLEGAL)
def test_illegal_moves_raise_a_conflict(current, event):
    with pytest.raises(IllegalTransition) as raised:
        transition(current, event)
    assert isinstance(raised.value, Conflict) and raised.value.status_code == 409
    assert str(current) in raised.value.message and event.replace("_", " ") in raised.value.message


def test_an_unknown_status_is_an_illegal_move():
    with pytest.raises(IllegalTransition, match="that is bogus"):
        transition("bogus", IE.advance)


def test_every_event_moves_something_and_done_and_discarded_are_final():
    assert {e for _, e in ITEM_TRANSITIONS} == set(ItemEvent)
    assert {e for _, e in ASSIGNMENT_TRANSITIONS} == set(AssignmentEvent)
    # Only making an item gold (its final becomes the truth of a gold item) and a flagged annotator's
    # recheck (its automatic final waits for a reviewer) leave a finished item.
    assert {s for s, e in ITEM_TRANSITIONS if e not in (IE.make_gold, IE.recheck)} == {I.active, I.review}
    assert {s for s, e in ITEM_TRANSITIONS if e == IE.recheck} == {I.done}
    assert set(ITEM_TRANSITIONS.values()) | {lifecycle.ITEM_START} == set(ItemStatus)
    assert set(ASSIGNMENT_TRANSITIONS.values()) | {lifecycle.ASSIGNMENT_START} == set(AssignmentStatus)
    assert {(s, e, t) for (s, e), t in {**ITEM_TRANSITIONS, **ASSIGNMENT_TRANSITIONS}.items()} >= set(MOVES)


def test_the_events_the_code_uses_are_exactly_the_events_in_the_tables():
    used = set()
    for path in APP.rglob("*.py"):
        if path.name != "lifecycle.py":
            used |= set(re.findall(r"\b((?:Item|Assignment)Event\.\w+)", path.read_text()))
    declared = {f"ItemEvent.{e.name}" for e in ItemEvent} | {f"AssignmentEvent.{e.name}" for e in AssignmentEvent}
    assert used == declared


def test_the_queue_sql_moves_assignments_as_the_table_says():
    assert queue._RENEWED is A.active and queue._EXPIRED is A.expired
    for status in (A.returned, *queue._GIVEN_BACK):
        assert transition(status, AE.claim) is queue._RENEWED
    assert f"'{A.expired}'" in queue._EXPIRE.text and f"'{lifecycle.ASSIGNMENT_START}'" in queue._take_fresh(None).text


def test_statuses_fit_their_columns():
    for column, statuses in ((Item.__table__.c.status, ItemStatus), (Assignment.__table__.c.status, AssignmentStatus)):
        assert all(len(s) <= column.type.length for s in statuses)


# -- the database --------------------------------------------------------------------------

CHECKS = [("items", "ck_items_status", ItemStatus), ("assignments", "ck_assignments_status", AssignmentStatus)]


def _values(check_sql: str) -> list[str]:
    return re.findall(r"'([^']*)'", check_sql)


@pytest.mark.parametrize("table, name, statuses", CHECKS)
def test_the_database_check_lists_exactly_the_enum(engine, table, name, statuses):
    with engine.connect() as conn:
        definition = conn.scalar(
            sa.text(
                "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c"
                " WHERE c.conname = :name AND c.conrelid = CAST(:table AS regclass) AND c.contype = 'c'"
            ),
            {"name": name, "table": table},
        )
    assert definition is not None, f"{name} is missing from the migrated database"
    assert "status" in definition
    assert sorted(_values(definition)) == sorted(s.value for s in statuses)


@pytest.mark.parametrize("table, name, statuses", CHECKS)
def test_the_model_check_lists_exactly_the_enum(table, name, statuses):
    (check,) = [
        c for c in Item.metadata.tables[table].constraints if isinstance(c, sa.CheckConstraint) and c.name == name
    ]
    assert _values(str(check.sqltext)) == [s.value for s in statuses]


@pytest.fixture
def rows(session):
    user = User(username="lifecycle-annotator", password_hash="-", role="annotator")
    project = Project(name="lifecycle")
    session.add_all([user, project])
    session.flush()
    stage = Stage(project_id=project.id, position=0, name="s", workflow="generic.choice")
    session.add(stage)
    session.flush()
    item = Item(project_id=project.id, external_id="x", data={}, stage_id=stage.id, slots_left=1)
    session.add(item)
    session.flush()
    assignment = Assignment(item_id=item.id, stage_id=stage.id, annotator_id=user.id, lease_until=sa.func.now())
    session.add(assignment)
    session.flush()
    session.expire_all()
    return item, assignment


def test_rows_start_as_the_lifecycle_says_and_load_as_enum_members(session, rows):
    item, assignment = rows
    assert session.get(Item, item.id).status is lifecycle.ITEM_START
    assert session.get(Assignment, assignment.id).status is lifecycle.ASSIGNMENT_START


@pytest.mark.parametrize("table", ["items", "assignments"])
def test_the_database_refuses_an_unknown_status_on_update(session, rows, table):
    row_id = rows[0].id if table == "items" else rows[1].id
    with pytest.raises(IntegrityError, match="_status"), session.begin_nested():
        session.execute(sa.text(f"UPDATE {table} SET status = 'finished' WHERE id = :id"), {"id": row_id})


def test_the_database_refuses_an_unknown_status_on_insert(session, rows):
    item, assignment = rows
    with pytest.raises(IntegrityError, match="ck_items_status"), session.begin_nested():
        session.add(Item(project_id=item.project_id, external_id="y", data={}, status="finished"))
        session.flush()
    user = User(username="lifecycle-other", password_hash="-", role="annotator")
    session.add(user)
    session.flush()
    with pytest.raises(IntegrityError, match="ck_assignments_status"), session.begin_nested():
        session.add(
            Assignment(
                item_id=item.id, stage_id=assignment.stage_id, annotator_id=user.id, status="leased", lease_until=sa.func.now()
            )
        )
        session.flush()
