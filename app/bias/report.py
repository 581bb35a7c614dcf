"""The draft-bias report from plain rows: per stage, per model and prompt version, per annotator.

Figures, each with its seeded bootstrap interval: the share of drafts accepted unchanged and edited in
each arm (in the control arm: how often an answer made without the draft still matches or nearly
matches it, the baseline the shown arm's acceptance is read against), the task's distance of answers
from drafts, the probe catch rate, the gold agreement in each arm and the time per item in each arm;
and the shift of each label between the shown and control arms (difference in proportions with
intervals, chi-square test) and of the edit size (difference in means, permutation test).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.bias import arms, stats


@dataclass(frozen=True)
class Answer:
    """An annotator's newest answer to an item of the stage."""

    annotator: str
    arm: str | None
    gold: bool
    labels: Mapping[str, Any]  # the answer's nominal facets (the label distribution's values)
    gold_score: float | None  # its agreement with the gold answer (gold items)
    probe_caught: bool | None
    seconds: float | None  # active time, else the time the screen was open


@dataclass(frozen=True)
class Outcome:
    """What an answer did with one of the item's drafts, shown or hidden."""

    annotator: str
    model: str  # the draft's kind, model and version in words
    prompt_id: int | None
    shown: bool
    outcome: str  # accepted, edited, rejected
    edit_distance: float | None


@dataclass(frozen=True)
class Options:
    samples: int = 1000
    seed: int = 0


def _mean(values: Sequence[float], o: Options) -> dict:
    return stats.mean(values, samples=o.samples, seed=o.seed).as_dict()


def _by_arm(outcomes: Sequence[Outcome], value: Callable[[Outcome], float | None], o: Options) -> dict:
    """A figure of the outcomes with drafts shown and with drafts hidden (the control arm)."""
    out = {}
    for arm, shown in ((arms.SHOWN, True), (arms.CONTROL, False)):
        values = [v for x in outcomes if x.shown == shown and (v := value(x)) is not None]
        out[arm] = _mean(values, o)
    return out


def outcome_figures(outcomes: Sequence[Outcome], o: Options) -> dict:
    """Acceptance, edit rate and edit distance in each arm."""
    return {
        "drafts": {"shown": sum(x.shown for x in outcomes), "hidden": sum(not x.shown for x in outcomes)},
        "acceptance": _by_arm(outcomes, lambda x: float(x.outcome == "accepted"), o),
        "edit_rate": _by_arm(outcomes, lambda x: float(x.outcome == "edited"), o),
        "edit_distance": _by_arm(outcomes, lambda x: x.edit_distance, o),
    }


def label_shift(answers: Sequence[Answer], o: Options) -> dict:
    """Per label facet, its distribution in the shown and control arms (ordinary items only): counts,
    the difference in proportions (shown - control) of each value with its interval, and a chi-square test."""
    ordinary = [a for a in answers if not a.gold and a.arm in (arms.SHOWN, arms.CONTROL)]
    facets = sorted({f for a in ordinary for f in a.labels})
    out = {}
    for facet in facets:
        given = {arm: [str(a.labels.get(facet)) for a in ordinary if a.arm == arm] for arm in (arms.SHOWN, arms.CONTROL)}
        counts = {arm: dict(Counter(values)) for arm, values in given.items()}
        values = sorted({v for c in counts.values() for v in c})
        difference = {
            v: stats.difference([float(x == v) for x in given[arms.SHOWN]], [float(x == v) for x in given[arms.CONTROL]],
                                samples=o.samples, seed=o.seed).as_dict()
            for v in values
        }
        out[facet] = {"counts": counts, "difference": difference, "chi_square": stats.chi_square(counts)}
    return out


def edit_shift(outcomes: Sequence[Outcome], o: Options) -> dict:
    """The edit size's difference between the arms (shown - hidden) with its interval and a permutation p-value."""
    shown = [x.edit_distance for x in outcomes if x.shown and x.edit_distance is not None]
    hidden = [x.edit_distance for x in outcomes if not x.shown and x.edit_distance is not None]
    return {"difference": stats.difference(shown, hidden, samples=o.samples, seed=o.seed).as_dict(),
            "p": stats.permutation_p(shown, hidden, seed=o.seed)}


def section(answers: Sequence[Answer], outcomes: Sequence[Outcome], o: Options) -> dict:
    """Every figure over one group of answers and their drafts' outcomes."""
    per_arm = {}
    for arm in arms.ARMS:
        mine = [a for a in answers if a.arm == arm]
        per_arm[arm] = {
            "answers": len(mine),
            "time": _mean([a.seconds for a in mine if a.seconds is not None], o),
            "gold_agreement": _mean([a.gold_score for a in mine if a.gold and a.gold_score is not None], o),
        }
    probes = [float(a.probe_caught) for a in answers if a.arm == arms.PROBE and a.probe_caught is not None]
    return {
        "arms": per_arm,
        **outcome_figures(outcomes, o),
        "probe_catch": _mean(probes, o),
        "shift": {"labels": label_shift(answers, o), "edit_size": edit_shift(outcomes, o)},
    }


def _grouped(rows: Iterable[Any], key: Callable[[Any], Any]) -> dict[Any, list[Any]]:
    groups: dict[Any, list[Any]] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    return groups


def build(answers: Sequence[Answer], outcomes: Sequence[Outcome], *, samples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The whole report: the stage's figures, each model and prompt version's, each annotator's."""
    o = Options(samples, seed)
    by_annotator = _grouped(answers, lambda a: a.annotator)
    outcomes_by_annotator = _grouped(outcomes, lambda x: x.annotator)
    by_model = _grouped(outcomes, lambda x: (x.model, x.prompt_id))
    return {
        "samples": samples,
        "seed": seed,
        "overall": section(answers, outcomes, o),
        "models": [{"model": model, "prompt_id": prompt_id, **outcome_figures(rows, o)}
                   for (model, prompt_id), rows in sorted(by_model.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0))],
        "annotators": [{"annotator": name, **section(rows, outcomes_by_annotator.get(name, []), o)}
                       for name, rows in sorted(by_annotator.items())],
    }
