"""What happens to an item after an answer or a reviewer's final: one pure decision over plain values.

The decision is an ordered list of small rules (`POLICY`, in the manner of Prefect's orchestration
policy): the first rule that speaks decides whether the item waits for more answers, goes to review,
is discarded, advances to the next stage that applies (with that stage's slots) or is done. The
rules read only a `Situation` (the stage's settings, the item's answers so far, its earlier finals,
gold and sampling facts) and call the workflow's `consolidate` / `applies` hooks and the lifecycle table;
the callers (submit's SQL, review's resolve, the demo) read the situation and write the `Decision`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from app.datasets import get_workflow
from app.datasets.workflow import Consolidation, ItemContext, StageConfig
from app.lifecycle import ItemEvent, transition


@dataclass(frozen=True)
class StageSettings:
    """A stage as the decision sees it, with whether this item is in the stage's agreement sample."""

    id: int
    workflow: str
    config: Mapping[str, Any]
    overlap: int
    sample_size: int | None = None
    sampled: bool = False

    @property
    def required(self) -> int:
        """How many annotations the item needs in the stage: overlap, or one outside a sample."""
        return self.overlap if self.sample_size is None or self.sampled else 1


@dataclass(frozen=True)
class Situation:
    """Everything the decision reads. `answers` are the stage's submitted payloads in assignment
    order; `final` is a reviewer's (or the demo's) final, which skips consolidation."""

    stage: StageSettings
    later: Sequence[StageSettings]  # the project's later stages, in order
    status: str  # the item's status now
    slots: int  # the item's slots left now
    data: Mapping[str, Any]
    results: Mapping[str, Any]  # earlier stages' finals the item shows, by workflow
    shows_own_final: bool = True  # False for a gold item at or after its gold stage: its final is the truth
    answers: Sequence[dict[str, Any]] = ()
    flagged: Sequence[int] = ()  # the item's annotators in the stage with a low gold accuracy flag
    final: dict[str, Any] | None = None
    discard: bool = False  # with `final`: the final says the item is unusable

    @cached_property
    def outcome(self) -> Consolidation:
        if self.final is not None:
            return Consolidation(final=self.final, discard=self.discard)
        return get_workflow(self.stage.workflow).consolidate(ItemContext(self.data, self.stage.config, self.results), list(self.answers))


@dataclass(frozen=True)
class Decision:
    status: str
    stage_id: int
    slots: int
    final: dict[str, Any] | None = None  # the final record to write for the situation's stage
    discard: bool = False
    routed: tuple[int, ...] = field(default=())  # flagged annotators whose work went to review (an audit event)


class Rule(ABC):
    """One step of the policy: a Decision when the rule applies to the situation, else None."""

    @abstractmethod
    def decide(self, s: Situation) -> Decision | None: ...


class WaitForAnswers(Rule):
    def decide(self, s):
        if s.final is None and len(s.answers) < s.stage.required:
            return Decision(s.status, s.stage.id, s.slots)
        return None


class ReviewDisagreement(Rule):
    def decide(self, s):
        if s.outcome.needs_review or s.outcome.final is None:
            return Decision(transition(s.status, ItemEvent.escalate), s.stage.id, s.slots)
        return None


class ReviewFlaggedWork(Rule):
    """A stage may route its flagged annotators' work to review instead of finalizing it."""

    def decide(self, s):
        if s.final is None and s.flagged and StageConfig.read(s.stage.config, "gold_route_to_review"):
            return Decision(transition(s.status, ItemEvent.escalate), s.stage.id, s.slots, routed=tuple(sorted(s.flagged)))
        return None


class DiscardUnusable(Rule):
    def decide(self, s):
        if s.outcome.discard:
            return Decision(transition(s.status, ItemEvent.discard), s.stage.id, 0, s.outcome.final, True)
        return None


class AdvanceToNextStage(Rule):
    def decide(self, s):
        results = {**s.results, s.stage.workflow: s.outcome.final} if s.shows_own_final else s.results
        nxt = first_applying(s.later, s.data, results)
        if nxt is not None:
            return Decision(transition(s.status, ItemEvent.advance), nxt.id, nxt.required, s.outcome.final)
        return None


class Finish(Rule):
    def decide(self, s):
        return Decision(transition(s.status, ItemEvent.finish), s.stage.id, 0, s.outcome.final)


POLICY: tuple[Rule, ...] = (WaitForAnswers(), ReviewDisagreement(), ReviewFlaggedWork(), DiscardUnusable(), AdvanceToNextStage(), Finish())


def decide(s: Situation) -> Decision:
    """The first decision of the policy's rules, in order (the last rule always decides)."""
    return next(d for rule in POLICY if (d := rule.decide(s)) is not None)


def first_applying(stages, data: Mapping[str, Any], results: Mapping[str, Any]):
    """Routing: the first of `stages` (in order) whose workflow applies to the item, or None (done)."""
    return next((s for s in stages if get_workflow(s.workflow).applies(ItemContext(data, s.config, results))), None)
