"""Prompt versions of a stage and running one over the stage's items.

A prompt belongs to a stage and a draft kind (`app.datasets.draft`); editing it adds the next
version (rows are never changed, so every drafted suggestion names the exact text it came from).
A stage's first version is the kind's default prompt. Running a version queues `draft` jobs over
the items chosen by a scope: every item of the stage, the items lacking a valid draft of that
version, or a seeded random sample; the job skips items that already have one, so a run asked for
twice drafts each item once.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.datasets import draft_kinds
from app.datasets.draft import DraftKind
from app.errors import Invalid, NotFound
from app.lifecycle import ItemStatus
from app.models import DraftFailure, GoldItem, Item, ItemResult, Prompt, PromptRun, Stage, Suggestion
from app.services.users.audit import changes, record

Scope = Literal["all", "missing", "sample"]
SAMPLING_KEYS = {"max_tokens": int, "temperature": float, "seed": int}


def kinds_for(stage: Stage) -> list[DraftKind]:
    """The draft kinds that write suggestions this stage's workflow reads."""
    return [k for k in draft_kinds().values() if stage.workflow in k.workflows]


def kind_of(stage: Stage, name: str) -> DraftKind:
    for kind in kinds_for(stage):
        if kind.name == name:
            return kind
    known = ", ".join(k.name for k in kinds_for(stage)) or "none"
    raise Invalid(f"Draft kind '{name}' does not draft for a {stage.workflow} stage (kinds here: {known}).", field="draft_kind")


def placeholders(template: str) -> list[str]:
    """The `{name}` fields a template names (format specs and conversions refused)."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise Invalid(f"The template is not a valid format string: {exc}. Write literal braces as {{{{ and }}}}.", field="template") from None
    names = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise Invalid(f"Template field '{{{name}}}' is not a plain field name like {{caption}}.", field="template")
        names.append(name)
    return names


def check_settings(settings: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in settings.items():
        if key not in SAMPLING_KEYS:
            raise Invalid(f"Unknown prompt setting '{key}' (known: {', '.join(SAMPLING_KEYS)}).", field=key)
        if value is None or value == "":
            continue
        try:
            out[key] = SAMPLING_KEYS[key](value)
        except (TypeError, ValueError):
            raise Invalid(f"Prompt setting '{key}' must be a number.", field=key) from None
    if "max_tokens" in out and not 1 <= out["max_tokens"] <= 32768:
        raise Invalid("max_tokens is between 1 and 32768.", field="max_tokens")
    if "temperature" in out and not 0 <= out["temperature"] <= 2:
        raise Invalid("temperature is between 0 and 2.", field="temperature")
    return out


def versions(session: Session, stage_id: int, draft_kind: str | None = None) -> list[Prompt]:
    q = sa.select(Prompt).where(Prompt.stage_id == stage_id)
    if draft_kind:
        q = q.where(Prompt.draft_kind == draft_kind)
    return list(session.scalars(q.order_by(Prompt.draft_kind, Prompt.version)))


def get(session: Session, prompt_id: int) -> Prompt:
    prompt = session.get(Prompt, prompt_id)
    if prompt is None:
        raise NotFound(f"No prompt {prompt_id}.")
    return prompt


def drafter_names(app_settings) -> list[str] | None:
    """The drafters a prompt may name: those of the drafters file, or None when no file is set (the
    server then takes any name; the worker's file decides)."""
    from app.drafting.config import drafters

    if getattr(app_settings, "drafters_file", None) is None:
        return None
    return sorted(drafters(app_settings))


def new_version(
    session: Session, stage_id: int, draft_kind: str, *, drafter: str, template: str | None = None,
    system: str | None = None, settings: dict[str, Any] | None = None, note: str = "", actor_id: int | None = None,
    known_drafters: list[str] | None = None,
) -> Prompt:
    """Add the next version of a stage's prompt for a draft kind; omitted text is the kind's default.
    `known_drafters` (see `drafter_names`): the names the drafter must be one of, where known."""
    stage = session.get(Stage, stage_id)
    if stage is None:
        raise NotFound(f"No stage {stage_id}.")
    kind = kind_of(stage, draft_kind)
    drafter = (drafter or "").strip()
    if not drafter or len(drafter) > 64:
        raise Invalid("Name the drafter (one of the worker's configured drafters) in at most 64 characters.", field="drafter")
    if known_drafters is not None and drafter not in known_drafters:
        raise Invalid(
            f"No drafter named '{drafter}' in VLCURATE_DRAFTERS_FILE (configured: {', '.join(known_drafters) or 'none'}).",
            field="drafter",
        )
    template = kind.template if template is None else template
    if not template.strip():
        raise Invalid("The template is empty.", field="template")
    unknown = sorted(set(placeholders(template)) - set(kind.placeholders))
    if unknown:
        raise Invalid(
            f"The template names {', '.join('{' + u + '}' for u in unknown)}; {kind.name} fills "
            f"{', '.join('{' + p + '}' for p in kind.placeholders)}.", field="template",
        )
    values = check_settings({**kind.settings, **(settings or {})})
    # Versions are numbered per stage and kind; the row lock on the stage orders two editors.
    session.execute(sa.select(Stage.id).where(Stage.id == stage_id).with_for_update())
    last = session.scalar(sa.select(sa.func.max(Prompt.version)).where(Prompt.stage_id == stage_id, Prompt.draft_kind == kind.name))
    prompt = Prompt(
        stage_id=stage_id, draft_kind=kind.name, version=(last or 0) + 1, drafter=drafter,
        system=kind.system if system is None else system, template=template, settings=values, note=note.strip(),
        created_by=actor_id,
    )
    session.add(prompt)
    session.flush()
    previous = session.scalar(sa.select(Prompt).where(Prompt.stage_id == stage_id, Prompt.draft_kind == kind.name, Prompt.version == last)) if last else None
    record(session, "prompt.version", actor_id=actor_id, target=f"stage:{stage_id}", prompt_id=prompt.id, kind=kind.name,
           version=prompt.version, **changes(_audited(previous) if previous else {}, _audited(prompt)))
    return prompt


def _audited(prompt: Prompt) -> dict[str, Any]:
    """What a prompt version's audit event compares with the version before."""
    return {"drafter": prompt.drafter, "system": prompt.system, "template": prompt.template, "settings": prompt.settings, "note": prompt.note}


def stage_items(stage_id: int):
    """Items a stage drafts for: those in it now (active), those that finished it, and its gold items
    (served like any item, so they show drafts too; and a prompt is measured on them against the truth)."""
    finished = sa.select(ItemResult.item_id).where(ItemResult.stage_id == stage_id)
    gold = sa.select(GoldItem.item_id).where(GoldItem.stage_id == stage_id)
    return sa.select(Item.id).where(
        sa.or_(sa.and_(Item.stage_id == stage_id, Item.status == ItemStatus.active), Item.id.in_(finished), Item.id.in_(gold))
    )


def has_valid_draft(prompt_id: int):
    return sa.exists().where(Suggestion.item_id == Item.id, Suggestion.prompt_id == prompt_id)


def chosen_items(session: Session, prompt: Prompt, scope: Scope, sample: int | None = None, seed: int = 0) -> list[int]:
    """The item ids a run of `prompt` over `scope` drafts, in id order."""
    q = stage_items(prompt.stage_id)
    if scope == "missing":
        q = q.where(~has_valid_draft(prompt.id))
    elif scope == "sample":
        if not sample or sample < 1:
            raise Invalid("A sample run needs a sample size of at least 1.", field="sample")
    elif scope != "all":
        raise Invalid("The scope is all, missing or sample.", field="scope")
    ids = list(session.scalars(q.order_by(Item.id)))
    if scope == "sample" and len(ids) > sample:
        ids = sorted(random.Random(seed).sample(ids, sample))
    return ids


@dataclass(frozen=True)
class RunStarted:
    items: int
    batches: int
    job_ids: list[int]
    run_id: int | None = None  # the PromptRun row that follows its jobs


def start_run(
    session: Session, app_settings, prompt_id: int, scope: Scope = "missing", *, sample: int | None = None, seed: int = 0,
    actor_id: int | None = None,
) -> RunStarted:
    """Queue `draft` jobs for the prompt over the scope's items (batches of worker_batch_size), and
    record the run with the range of its jobs' ids, which its progress is read from. The caller
    commits (a commit here would close the caller's transaction under it); the jobs are queued at
    once on the queue's own connection and read the prompt from theirs, so the prompt must be
    committed before its first run, as every caller's is (made by an earlier request or command)."""
    from app.worker import jobs

    prompt = get(session, prompt_id)
    ids = chosen_items(session, prompt, scope, sample, seed)
    record(session, "prompt.run", actor_id=actor_id, target=f"stage:{prompt.stage_id}", prompt_id=prompt.id, scope=scope, items=len(ids))
    size = app_settings.worker_batch_size
    batches = [ids[i : i + size] for i in range(0, len(ids), size)]
    job_ids = [j for j in (jobs.defer_draft(app_settings, prompt.id, b) for b in batches) if j is not None]
    run = PromptRun(
        prompt_id=prompt.id, scope=scope, sample=sample if scope == "sample" else None, seed=seed, items=len(ids), batches=len(batches),
        first_job=min(job_ids, default=None), last_job=max(job_ids, default=None), created_by=actor_id,
    )
    session.add(run)
    session.flush()
    return RunStarted(len(ids), len(batches), job_ids, run.id)


@dataclass(frozen=True)
class RunCounts:
    items: int  # items the stage drafts for
    drafted: int  # with a valid draft of this version
    failed: int  # with a failed draft and no valid one


def counts(session: Session, prompt: Prompt) -> RunCounts:
    total = session.scalar(sa.select(sa.func.count()).select_from(stage_items(prompt.stage_id).subquery())) or 0
    drafted = session.scalar(sa.select(sa.func.count(sa.distinct(Suggestion.item_id))).where(Suggestion.prompt_id == prompt.id)) or 0
    failed = session.scalar(
        sa.select(sa.func.count()).select_from(DraftFailure).where(
            DraftFailure.prompt_id == prompt.id,
            ~sa.exists().where(Suggestion.item_id == DraftFailure.item_id, Suggestion.prompt_id == prompt.id),
        )
    ) or 0
    return RunCounts(total, drafted, failed)
