"""Item and assignment lifecycles: their statuses, the events that move them, and one transition table each.

Statuses are `StrEnum`s, so a status is still the very string stored in the database, compared
in SQL and sent as JSON. The tables say every move the queue, submit, pipeline and review code
makes; a move that is not in them raises `IllegalTransition` instead of writing a status that no
screen or query expects. The database holds the same values in CHECK constraints (a test keeps
them equal to these enums).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from app.errors import Conflict


class IllegalTransition(Conflict):
    """A status change the lifecycle does not allow (most often: someone else moved the row first)."""


class ItemStatus(StrEnum):
    active = "active"  # in a stage, annotators may take it (or revise it after a send-back)
    review = "review"  # the stage's annotations disagree; waits for a reviewer
    done = "done"  # passed its last stage
    discarded = "discarded"  # unusable; ends the item
    gold = "gold"  # a gold item of its stage: served as a honeypot, never finalized, counted or exported

    def next(self, event: ItemEvent) -> ItemStatus:
        return transition(self, event)


class ItemEvent(StrEnum):
    escalate = "escalate"  # consolidation found no majority
    advance = "advance"  # a final record is written and a later stage applies
    finish = "finish"  # a final record is written and no later stage applies
    discard = "discard"  # the final record says the item is unusable
    send_back = "send_back"  # a reviewer returns it to its annotators
    take_back = "take_back"  # a reviewer brings a sent-back item back to review
    make_gold = "make_gold"  # an admin makes it a gold item of a stage (its correct answer is known)
    recheck = "recheck"  # its annotator was flagged for low gold accuracy: the automatic final waits for a reviewer


class AssignmentStatus(StrEnum):
    active = "active"  # leased to the annotator
    submitted = "submitted"  # the annotator's work counts
    skipped = "skipped"  # given back, to come back later; the slot went back
    released = "released"  # given back for good; the slot went back
    expired = "expired"  # the lease ran out; the slot went back
    returned = "returned"  # a reviewer sent the item back; the annotator revises their annotation

    def next(self, event: AssignmentEvent) -> AssignmentStatus:
        return transition(self, event)


class AssignmentEvent(StrEnum):
    claim = "claim"  # the queue leases it (again) to its annotator
    skip = "skip"
    release = "release"
    expire = "expire"
    submit = "submit"  # also a later revision of a submitted annotation
    send_back = "send_back"
    reinstate = "reinstate"  # take-back: the annotator's earlier annotation counts again
    withdraw = "withdraw"  # take-back: the annotator never answered; the place goes


# Where rows start: imports insert items, the queue inserts assignments.
ITEM_START = ItemStatus.active
ASSIGNMENT_START = AssignmentStatus.active

_I, _IE = ItemStatus, ItemEvent
# A final record can be written while the item waits for review (a reviewer resolves it, or a
# late submit from an expired lease is consolidated again), so the final moves leave `review` too.
ITEM_TRANSITIONS: Mapping[tuple[ItemStatus, ItemEvent], ItemStatus] = {
    (_I.active, _IE.escalate): _I.review,
    (_I.review, _IE.escalate): _I.review,
    **{(s, _IE.advance): _I.active for s in (_I.active, _I.review)},
    **{(s, _IE.finish): _I.done for s in (_I.active, _I.review)},
    **{(s, _IE.discard): _I.discarded for s in (_I.active, _I.review)},
    (_I.review, _IE.send_back): _I.active,
    (_I.active, _IE.take_back): _I.review,
    # A finished item goes back to review when an annotator it was finished by is flagged; the
    # reviewer's final is appended after the automatic one (nothing is rewritten).
    (_I.done, _IE.recheck): _I.review,
    # A gold item's answer may be corrected by marking it gold again.
    **{(s, _IE.make_gold): _I.gold for s in (_I.active, _I.review, _I.done, _I.gold)},
}

_A, _AE = AssignmentStatus, AssignmentEvent
_GIVEN_BACK = (_A.skipped, _A.released, _A.expired)
ASSIGNMENT_TRANSITIONS: Mapping[tuple[AssignmentStatus, AssignmentEvent], AssignmentStatus] = {
    **{(s, _AE.claim): _A.active for s in (*_GIVEN_BACK, _A.returned)},
    (_A.active, _AE.skip): _A.skipped,
    (_A.active, _AE.release): _A.released,
    (_A.active, _AE.expire): _A.expired,
    # Late work is accepted while a slot is free, and a submitted annotation may be revised.
    **{(s, _AE.submit): _A.submitted for s in _A},
    (_A.submitted, _AE.send_back): _A.returned,
    # A returned assignment always has an annotation, so take-back never withdraws it.
    **{(s, _AE.reinstate): _A.submitted for s in (_A.active, _A.returned, *_GIVEN_BACK)},
    **{(s, _AE.withdraw): _A.released for s in (_A.active, *_GIVEN_BACK)},
}


def transition(current: str, event: ItemEvent | AssignmentEvent) -> ItemStatus | AssignmentStatus:
    """The status after `event` from `current`; raises IllegalTransition if the lifecycle has no such move."""
    if isinstance(event, ItemEvent):
        status_type, table, noun = ItemStatus, ITEM_TRANSITIONS, "an item"
    else:
        status_type, table, noun = AssignmentStatus, ASSIGNMENT_TRANSITIONS, "an assignment"
    try:
        return table[status_type(current), event]
    except (KeyError, ValueError):
        raise IllegalTransition(f"Cannot {event.replace('_', ' ')} {noun} that is {current}.") from None


def target(event: ItemEvent | AssignmentEvent, *sources: str) -> ItemStatus | AssignmentStatus:
    """The one status `event` leads to from every one of `sources`: for SQL that moves many rows at once."""
    found = {transition(s, event) for s in sources}
    if len(found) != 1:
        raise ValueError(f"{event} leads from {sources} to {sorted(found)}, not to one status.")
    return found.pop()


def sql_values(statuses) -> str:
    """Statuses as a SQL list of literals, e.g. "'active', 'review'" (the values are fixed identifiers)."""
    return ", ".join(f"'{s.value}'" for s in statuses)
