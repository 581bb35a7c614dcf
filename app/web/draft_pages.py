"""The drafts page of a stage (admins): its draft kinds and prompt versions, a new version, a run
with its progress, failed drafts, and two versions evaluated side by side against the finals."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import RedirectResponse
from pydantic import ValidationError
from sqlalchemy.orm import Session

from app.errors import DomainError, Invalid, ascii_digits
from app.models import Role
from app.services.drafting import draft_eval, eval_report, prompts
from app.services.projects import projects
from app.web.deps import Db, Id, LiveProject, Posted, Principal, csrf_protect, page_role, savepoint
from app.web.draft_api import create_version, evaluation_parquet, stage_prompts
from app.web.flash import flash, take_flash
from app.web.schemas import PromptIn
from app.web.templating import is_htmx, render, target_fragment

router = APIRouter(dependencies=[Depends(csrf_protect), LiveProject])
admin_only = page_role(Role.admin)
PAGE = "drafting/page.html"
VERSION_FIELDS = ("drafter", "template", "system", "max_tokens", "temperature", "seed", "note")
RUN_FIELDS = ("prompt_id", "scope", "sample", "seed")


def _version_form(kind, latest, drafters: list[str] | None) -> dict[str, str]:
    """The new-version form of a kind, filled from its newest version, else from the kind's default."""
    source = latest.settings if latest else dict(kind.settings)
    drafter = latest.drafter if latest else (drafters[0] if drafters else "")
    return {
        "drafter": drafter, "template": latest.template if latest else kind.template, "system": latest.system if latest else kind.system,
        **{k: "" if source.get(k) is None else str(source[k]) for k in prompts.SAMPLING_KEYS}, "note": "",
    }


def _compared(session: Session, stage_id: int, versions, query) -> dict[str, Any]:
    """The evaluation the page shows: the two versions chosen (by default the two newest of the first
    kind that has any), against the finals or the gold answers."""
    chosen = [query.get("a", ""), query.get("b", "")]
    if not any(chosen) and versions:
        newest = [v for v in versions if v.draft_kind == versions[0].draft_kind][-2:]
        chosen = [str(v.id) for v in reversed(newest)]
    gold = query.get("gold") in ("1", "on", "true")
    out: dict[str, Any] = {"a": chosen[0], "b": chosen[1] if len(chosen) > 1 else "", "gold": gold, "ids": ""}
    try:
        ids = draft_eval.parse_ids([c for c in chosen if c])
        if not ids:
            return out
        evaluation = draft_eval.evaluate(session, stage_id, ids, gold=gold)
    except DomainError as exc:
        return {**out, "error": exc.message}
    return {**out, "ids": ",".join(map(str, ids)), "result": evaluation, "chart": eval_report.chart(evaluation)}


def _context(request: Request, session: Session, stage_id: int, *, forms: dict | None = None, **extra) -> dict[str, Any]:
    """What the page shows; the progress poll (its `runs` fragment) gets the versions alone."""
    stage = projects.get_stage(session, stage_id)
    versions = stage_prompts(session, stage_id)
    ctx: dict[str, Any] = {"stage": stage, "versions": versions, "running": any(v.run and v.run.active for v in versions),
                           "failures": draft_eval.failures(session, [v.id for v in versions]), **extra}
    if target_fragment(request, PAGE) == "runs":
        return ctx
    try:
        drafters, drafters_error = prompts.drafter_names(request.app.state.settings), None
    except DomainError as exc:
        drafters, drafters_error = [], exc.message
    kinds = prompts.kinds_for(stage)
    forms = forms or {}
    latest = {v.draft_kind: v for v in versions}
    return {
        **ctx, "project": projects.get_project(session, stage.project_id), "kinds": kinds, "drafters": drafters,
        "drafters_error": drafters_error, "forms": {k.name: forms.get(k.name) or _version_form(k, latest.get(k.name), drafters) for k in kinds},
        "run_form": forms.get("run", {}), "evaluation": _compared(session, stage_id, versions, request.query_params),
    }


@router.get("/stages/{stage_id}/drafts")
def drafts_page(request: Request, stage_id: Id, session: Db, user: Principal = Depends(admin_only)):
    notice = None if is_htmx(request) else take_flash(request)  # the progress poll must not eat the notice
    return render(request, PAGE, _context(request, session, stage_id, notice=notice))


def _refused(request: Request, session: Session, stage_id: int, exc: DomainError, forms: dict, form_id: str):
    """The page again with what was typed, the message beside the field in error, and the focus on it."""
    ctx = _context(request, session, stage_id, forms=forms, error=exc.message, errors=exc.errors, focus=exc.field, form_id=form_id)
    return render(request, PAGE, ctx, status_code=exc.status_code)


@router.post("/stages/{stage_id}/prompts")
def new_version(request: Request, stage_id: Id, session: Db, posted: Posted, user: Principal = Depends(admin_only)):
    """Save the next version of a kind's prompt; back to the page, where it is listed."""
    kind = str(posted.get("draft_kind", ""))
    typed = {k: str(posted.get(k, "")) for k in VERSION_FIELDS}
    try:
        try:
            body = PromptIn(draft_kind=kind, **{k: (v if v.strip() or k in ("template", "system", "note") else None) for k, v in typed.items()})
        except ValidationError as exc:
            first = exc.errors()[0]
            field = str(first["loc"][0]) if first["loc"] else None
            raise Invalid(f"{field}: {first['msg']}." if field else first["msg"], field=field) from None
        with savepoint(session):
            made = create_version(session, request.app.state.settings, stage_id, body, user.id)
    except DomainError as exc:
        return _refused(request, session, stage_id, exc, {kind: typed}, f"new-{kind}")
    flash(request, f"Saved {made.draft_kind} version {made.version}. Run it below.")
    return RedirectResponse(f"/stages/{stage_id}/drafts#kind-{made.draft_kind}", status_code=303)


@router.post("/stages/{stage_id}/drafts/run")
def run_version(request: Request, stage_id: Id, session: Db, posted: Posted, user: Principal = Depends(admin_only)):
    """Queue draft jobs for a version over the chosen items; the page shows their progress."""
    typed = {k: str(posted.get(k, "")) for k in RUN_FIELDS}
    try:
        prompt_id = _number(typed["prompt_id"], "prompt_id", "Choose the version to run.")
        prompt = prompts.get(session, prompt_id)
        if prompt.stage_id != stage_id:
            raise Invalid("That version is not one of this stage's.", field="prompt_id")
        scope = typed["scope"] or "missing"
        sample = _number(typed["sample"], "sample", "The sample size is a whole number of items.") if scope == "sample" else None
        seed = _number(typed["seed"], "seed", "The seed is a whole number.") if typed["seed"].strip() else 0
        started = prompts.start_run(session, request.app.state.settings, prompt.id, scope, sample=sample, seed=seed, actor_id=user.id)
    except DomainError as exc:
        return _refused(request, session, stage_id, exc, {"run": typed}, "run")
    if not started.items:
        flash(request, "No item to draft: every item in the scope has a valid draft of this version.")
    else:
        waiting = started.batches - len(started.job_ids)
        flash(request, f"Queued {len(started.job_ids):,} draft jobs for {started.items:,} items with {prompt.draft_kind} version "
              f"{prompt.version}{f' ({waiting:,} batches were waiting already)' if waiting else ''}; `vlcurate worker` runs them.")
    return RedirectResponse(f"/stages/{stage_id}/drafts#runs", status_code=303)


def _number(text: str, field: str, message: str) -> int:
    text = text.strip()
    if not ascii_digits(text) or int(text) > 2**31 - 1:
        raise Invalid(message, field=field)
    return int(text)


@router.get("/stages/{stage_id}/drafts/evaluation.parquet")
def evaluation_download(stage_id: Id, session: Db, ids: str = Query("", alias="prompts", max_length=200), gold: bool = False,
                        user: Principal = Depends(admin_only)):
    """The side-by-side evaluation's per-item rows as Parquet."""
    return evaluation_parquet(session, stage_id, ids, gold)
