"""Drafts measured against people: how far each prompt version's drafts agree with what people
finished in the stage (or with the truth of its gold items), and what the drafts cost.

A draft is shaped as the stage's answer by its kind (`DraftKind.as_answer`) and compared with the
item's final with the workflow's own measure: where every facet of the workflow is a label
(`Workflow.facets` all nominal), Cohen's kappa between drafts and finals per facet; otherwise the mean
of `workflow.compare(draft, final)` over items. Both come with seeded bootstrap intervals over items
(`app.agreement`), the share of items where draft and final agree fully beside kappa. Each version
also gets the share of its shown drafts that annotators accepted unchanged, its schema-valid share,
latency percentiles and mean token counts. The per-item rows go to Parquet for a closer look.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.orm import Session

from app.agreement import categorical
from app.agreement.bootstrap import Interval, bootstrap, mean_from, mean_stats, resample_weights
from app.datasets import draft_kinds, get_workflow
from app.datasets.suggest import ItemInput
from app.errors import Invalid, ascii_digits
from app.models import DraftFailure, GoldItem, Item, ItemResult, Prompt, Stage, Suggestion, SuggestionOutcome
from app.services.drafting import prompts as prompt_service
from app.services.projects.projects import get_stage
from app.services.review.agreement import nominal_label

MAX_VERSIONS = 8
MEAN = "mean agreement"
SHARE = "share agreeing"


@dataclass(frozen=True)
class Figure:
    """One agreement figure of a version: its estimate and 95 % bootstrap interval (None: undefined)."""

    name: str
    estimate: float | None
    low: float | None
    high: float | None
    items: int


@dataclass(frozen=True)
class Compared:
    """One item a version drafted and people finished: the draft, the final and their agreement."""

    item_id: int
    external_id: str
    prompt_id: int
    version: int
    draft: dict[str, Any]
    final: dict[str, Any]
    score: float


@dataclass(frozen=True)
class VersionReport:
    prompt_id: int
    draft_kind: str
    version: int
    drafter: str
    note: str
    items: int  # finished (or gold) items with a draft of this version that could be compared
    figures: list[Figure]  # the headline first
    uncomparable: int  # drafts of finished items the kind cannot shape as an answer
    accepted: int  # shown drafts annotators took unchanged
    shown: int  # drafts with an outcome recorded (accepted, edited or rejected)
    valid: int  # items with a valid draft
    failed: int  # items whose draft failed (and no valid one)
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    prompt_tokens: float | None  # means per model call
    completion_tokens: float | None

    @property
    def accepted_share(self) -> float | None:
        return self.accepted / self.shown if self.shown else None

    @property
    def valid_share(self) -> float | None:
        return self.valid / (self.valid + self.failed) if self.valid + self.failed else None

    @property
    def headline(self) -> Figure | None:
        return self.figures[0] if self.figures else None


@dataclass(frozen=True)
class Evaluation:
    stage_id: int
    workflow: str
    measure: str  # "Cohen's kappa" or "mean agreement"
    gold: bool
    samples: int
    seed: int
    versions: list[VersionReport]
    rows: list[Compared] = field(repr=False)


def _finite(value: float) -> float | None:
    return None if value is None or np.isnan(value) else float(value)


def _figure(name: str, ci: Interval, items: int) -> Figure:
    return Figure(name, _finite(ci.estimate), _finite(ci.low), _finite(ci.high), items)


def parse_ids(text: str | list[int] | None) -> list[int]:
    """Prompt ids as typed ("1,2" or "1 2"), in order, each once; refused with a message otherwise."""
    if text is None:
        return []
    parts = text if isinstance(text, list) else str(text).replace(",", " ").split()
    ids: list[int] = []
    for part in parts:
        if not ascii_digits(str(part).strip()) or int(part) > 2**62:
            raise Invalid(f"Prompt ids are whole numbers separated by commas, e.g. 1,2 (not '{part}').", field="prompts")
        if int(part) not in ids:
            ids.append(int(part))
    return ids


def _truths(session: Session, stage: Stage, gold: bool) -> dict[int, tuple[str, dict, dict]]:
    """item id -> (external id, item data, what the draft is measured against): the newest final of
    each item people finished in the stage and kept, or the stage's gold answers."""
    if gold:
        q = sa.select(Item.id, Item.external_id, Item.data, GoldItem.answer).join(GoldItem, GoldItem.item_id == Item.id).where(
            GoldItem.stage_id == stage.id
        )
    else:
        newest = (
            sa.select(ItemResult.item_id, ItemResult.payload, ItemResult.discard)
            .where(ItemResult.stage_id == stage.id)
            .order_by(ItemResult.item_id, ItemResult.id.desc())
            .ext(distinct_on(ItemResult.item_id))
            .subquery()
        )
        q = sa.select(Item.id, Item.external_id, Item.data, newest.c.payload).join(newest, newest.c.item_id == Item.id).where(~newest.c.discard)
    return {i: (ext, data, truth) for i, ext, data, truth in session.execute(q)}


def _earlier_results(session: Session, stage: Stage, item_ids: list[int]) -> dict[int, dict[str, dict]]:
    """item id -> the newest finals of the stages before `stage`, by workflow (what a draft kind may build on)."""
    if not item_ids:
        return {}
    return _nested(session.execute(
        sa.select(ItemResult.item_id, Stage.workflow, ItemResult.payload)
        .join(Stage, Stage.id == ItemResult.stage_id)
        .where(Stage.project_id == stage.project_id, Stage.position < stage.position, ItemResult.item_id.in_(item_ids))
        .order_by(ItemResult.item_id, ItemResult.stage_id, ItemResult.id.desc())
        .ext(distinct_on(ItemResult.item_id, ItemResult.stage_id))
    ))


def _drafts(session: Session, prompt_ids: list[int]) -> dict[int, dict[int, dict]]:
    """prompt id -> item id -> the newest valid draft's payload."""
    return _nested(session.execute(
        sa.select(Suggestion.prompt_id, Suggestion.item_id, Suggestion.payload)
        .where(Suggestion.prompt_id.in_(prompt_ids))
        .order_by(Suggestion.prompt_id, Suggestion.item_id, Suggestion.id.desc())
        .ext(distinct_on(Suggestion.prompt_id, Suggestion.item_id))
    ))


def _nested(rows) -> dict[Any, dict[Any, Any]]:
    """(outer, inner, value) rows as {outer: {inner: value}}."""
    out: dict[Any, dict[Any, Any]] = defaultdict(dict)
    for outer, inner, value in rows:
        out[outer][inner] = value
    return out


def _outcomes(session: Session, prompt_ids: list[int]) -> dict[int, tuple[int, int]]:
    """prompt id -> (accepted, shown) over the outcomes recorded for its drafts."""
    rows = session.execute(
        sa.select(Suggestion.prompt_id, sa.func.count().filter(SuggestionOutcome.outcome == "accepted"), sa.func.count())
        .join(Suggestion, Suggestion.id == SuggestionOutcome.suggestion_id)
        .where(Suggestion.prompt_id.in_(prompt_ids))
        .group_by(Suggestion.prompt_id)
    )
    return {p: (int(a), int(n)) for p, a, n in rows}


def _costs(session: Session, prompt_ids: list[int]) -> dict[int, tuple[float | None, ...]]:
    """prompt id -> (latency p50, p95, mean prompt tokens, mean completion tokens) over every model
    call of the version, valid drafts and failed ones alike (both took the server's time)."""
    calls = sa.union_all(
        sa.select(Suggestion.prompt_id, Suggestion.latency_ms, Suggestion.prompt_tokens, Suggestion.completion_tokens)
        .where(Suggestion.prompt_id.in_(prompt_ids)),
        sa.select(DraftFailure.prompt_id, DraftFailure.latency_ms, DraftFailure.prompt_tokens, DraftFailure.completion_tokens)
        .where(DraftFailure.prompt_id.in_(prompt_ids)),
    ).subquery()
    rows = session.execute(
        sa.select(
            calls.c.prompt_id,
            sa.func.percentile_cont(0.5).within_group(calls.c.latency_ms),
            sa.func.percentile_cont(0.95).within_group(calls.c.latency_ms),
            sa.func.avg(calls.c.prompt_tokens),
            sa.func.avg(calls.c.completion_tokens),
        ).group_by(calls.c.prompt_id)
    )
    return {p: tuple(None if v is None else float(v) for v in rest) for p, *rest in rows}


def _kappas(workflow, pairs: list[tuple[dict, dict]], weights: np.ndarray) -> list[Figure]:
    """Cohen's kappa between drafts and finals for each facet the drafts speak to, with its interval."""
    figures = []
    for facet in workflow.facets:
        raw = [
            [None if d.get(facet) is None else nominal_label(d[facet]), None if f.get(facet) is None else nominal_label(f[facet])]
            for d, f in pairs
        ]
        if not any(r[0] is not None for r in raw):
            continue  # this kind drafts nothing for the facet
        ratings, labels = categorical.codes(raw)
        k = max(len(labels), 1)
        stats = categorical.cohen_stats(ratings[:, 0], ratings[:, 1], k)
        ci = bootstrap(stats, lambda s, k=k: categorical.cohen_from(s, k), weights=weights)
        both = int(((ratings[:, 0] >= 0) & (ratings[:, 1] >= 0)).sum())
        figures.append(_figure(f"Cohen's kappa · {facet}" if len(workflow.facets) > 1 else "Cohen's kappa", ci, both))
    return figures


def evaluate(
    session: Session, stage_id: int, prompt_ids: list[int], *, gold: bool = False, samples: int = 1000, seed: int = 0
) -> Evaluation:
    """Each prompt version's drafts against the stage's finals (or its gold answers, `gold`)."""
    stage = get_stage(session, stage_id)
    workflow = get_workflow(stage.workflow)
    chosen = _chosen_prompts(session, stage, prompt_ids)
    nominal = all(kind == "nominal" for kind in workflow.facets.values())
    truths = _truths(session, stage, gold)
    drafts = _drafts(session, prompt_ids)
    earlier = _earlier_results(session, stage, sorted({i for d in drafts.values() for i in d if i in truths}))
    outcomes, costs = _outcomes(session, prompt_ids), _costs(session, prompt_ids)
    # Resampling depends only on the number of items: every figure of every version over as many
    # items shares one draw (and gets the interval a bootstrap of its own with this seed would).
    weights: dict[int, np.ndarray] = {}
    reports, rows = [], []
    for prompt in chosen:
        kind = draft_kinds()[prompt.draft_kind]
        against_reference = kind.score is not None  # a draft that is no answer: scored against the record
        labels = nominal and not against_reference
        pairs, scores, uncomparable = _scored(workflow, kind, prompt, drafts.get(prompt.id, {}), truths, earlier, rows)
        if scores and len(scores) not in weights:
            weights[len(scores)] = resample_weights(len(scores), samples, seed)
        w = weights.get(len(scores))
        name = (kind.score_name or "score against the reference") if against_reference else (SHARE if labels else MEAN)
        share = _figure(name, bootstrap(mean_stats(np.array(scores)), mean_from, weights=w), len(scores))
        figures = [*_kappas(workflow, pairs, w), share] if labels else [share]
        run = prompt_service.counts(session, prompt)
        accepted, shown = outcomes.get(prompt.id, (0, 0))
        p50, p95, prompt_tokens, completion_tokens = costs.get(prompt.id, (None, None, None, None))
        reports.append(VersionReport(
            prompt.id, prompt.draft_kind, prompt.version, prompt.drafter, prompt.note, len(scores), figures, uncomparable,
            accepted, shown, run.drafted, run.failed, p50, p95, prompt_tokens, completion_tokens,
        ))
    return Evaluation(stage.id, stage.workflow, "Cohen's kappa" if nominal else MEAN, gold, samples, seed, reports, rows)


def _chosen_prompts(session: Session, stage: Stage, prompt_ids: list[int]) -> list[Prompt]:
    """The prompt versions asked for: 1 to MAX_VERSIONS of the stage's, with their draft kind installed."""
    if not prompt_ids:
        raise Invalid("Choose the prompt versions to evaluate.", field="prompts")
    if len(prompt_ids) > MAX_VERSIONS:
        raise Invalid(f"Evaluate at most {MAX_VERSIONS} prompt versions at once.", field="prompts")
    chosen: list[Prompt] = []
    for pid in prompt_ids:
        prompt = session.get(Prompt, pid)
        if prompt is None or prompt.stage_id != stage.id:
            raise Invalid(f"Prompt {pid} is not a prompt version of stage '{stage.name}'.", field="prompts")
        if prompt.draft_kind not in draft_kinds():
            raise Invalid(f"Prompt {pid}'s draft kind {prompt.draft_kind} is no longer installed.", field="prompts")
        chosen.append(prompt)
    return chosen


def _scored(workflow, kind, prompt: Prompt, drafts: dict[int, dict], truths, earlier, rows: list[Compared]):
    """One version's drafts scored against the truths: (facet pairs for kappa, scores, drafts that could not
    be compared); each compared item's row goes to `rows`."""
    against_reference = kind.score is not None
    pairs, scores, uncomparable = [], [], 0
    for item_id, payload in sorted(drafts.items()):
        if item_id not in truths:
            continue
        external_id, data, final = truths[item_id]
        item = ItemInput(item_id, data, {}, earlier.get(item_id, {}))
        if against_reference:
            found = kind.score(payload, item)
            if found is None:
                uncomparable += 1
                continue
            score = float(found)
        else:
            answer = kind.as_answer(payload, item)
            if answer is None:
                uncomparable += 1
                continue
            score = float(workflow.compare(answer, final))
            pairs.append((workflow.facet_values(answer), workflow.facet_values(final)))
        scores.append(score)
        rows.append(Compared(item_id, external_id, prompt.id, prompt.version, payload, final, score))
    return pairs, scores, uncomparable


@dataclass(frozen=True)
class FailureRow:
    item_id: int
    external_id: str
    reason: str
    raw: str  # the model's text, cut to `RAW_SHOWN` characters
    cut: bool  # whether it was cut
    created_at: Any


RAW_SHOWN = 400


def failures(session: Session, prompt_ids: list[int], limit: int = 20) -> dict[int, list[FailureRow]]:
    """Per prompt version, its newest failed drafts (items with no valid draft of it): why, and what the model said."""
    if not prompt_ids:
        return {}
    ranked = (
        sa.select(
            DraftFailure.prompt_id, DraftFailure.item_id, Item.external_id, DraftFailure.reason,
            sa.func.left(DraftFailure.raw, RAW_SHOWN + 1).label("raw"), DraftFailure.created_at,
            sa.func.row_number().over(partition_by=DraftFailure.prompt_id, order_by=DraftFailure.id.desc()).label("n"),
        )
        .join(Item, Item.id == DraftFailure.item_id)
        .where(
            DraftFailure.prompt_id.in_(prompt_ids),
            ~sa.exists().where(Suggestion.item_id == DraftFailure.item_id, Suggestion.prompt_id == DraftFailure.prompt_id),
        )
        .subquery()
    )
    out: dict[int, list[FailureRow]] = {p: [] for p in prompt_ids}
    for r in session.execute(sa.select(ranked).where(ranked.c.n <= limit).order_by(ranked.c.prompt_id, ranked.c.n)):
        out[r.prompt_id].append(FailureRow(r.item_id, r.external_id, r.reason, r.raw[:RAW_SHOWN], len(r.raw) > RAW_SHOWN, r.created_at))
    return out
