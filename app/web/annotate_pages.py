"""Annotation pages: take the next item, show its workflow's screen, autosave, submit, skip."""

from __future__ import annotations

import time
import uuid

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy.orm import Session
from vlcurate.models import MAX_SECONDS_SPENT

from app.datasets import get_workflow
from app.db import transaction
from app.errors import Conflict, Invalid, NotFound
from app.lifecycle import ItemStatus
from app.services.annotation import annotation, drafts
from app.services.projects import projects
from app.services.quality import qualification
from app.web.deps import (
    Answer, AnswerForm, BigId, Db, Id, LiveProject, Principal, Sessions, csrf_protect, own_assignment_user, page_user, savepoint,
    signed_in,
)
from app.web.templating import is_htmx, render, render_error

router = APIRouter(dependencies=[Depends(csrf_protect)])

BAR_TTL_SECONDS = 3.0
MAX_PREFETCH = 16  # images of the next item fetched ahead (a ColorSwap pair has up to a dozen)


@router.get("/stages/{stage_id}/annotate", dependencies=[LiveProject])
def stage_page(request: Request, stage_id: Id, session: Db, user: Principal = Depends(page_user)):
    """The user's live item in the stage, or a page whose button starts annotating. A GET never
    leases: a prefetched, crawled or reloaded link would otherwise hold an item from everyone else
    for a lease's length. The button posts (`start`)."""
    held = annotation.held(session, stage_id, user.id)
    if held is not None:
        return RedirectResponse(f"/assignments/{held.assignment_id}", status_code=303)
    return render(request, "annotate/start.html", _stage_context(session, stage_id, user))


@router.post("/stages/{stage_id}/annotate", dependencies=[LiveProject])
def start(request: Request, stage_id: Id, session: Db, user: Principal = Depends(page_user)):
    """Resume the user's live lease in the stage, or claim the next item."""
    claimed = annotation.resume_or_claim(session, stage_id, user.id)
    if claimed is not None:
        return RedirectResponse(f"/assignments/{claimed.assignment_id}", status_code=303)
    return _nothing_left(request, session, stage_id, user)


def _stage_context(session: Session, stage_id: int, user: Principal) -> dict:
    progress = projects.project_progress(session, projects.get_stage(session, stage_id).project_id)
    here = next(s for s in progress.stages if s.id == stage_id)
    done = annotation.user_stage_counts(session, stage_id, user.id)
    return {"project": progress, "stage_id": stage_id, "stage": here, "done": done}


def _nothing_left(request: Request, session: Session, stage_id: int, user: Principal):
    """The page that says nothing is left for the user in the stage, and where work still waits."""
    ctx = _stage_context(session, stage_id, user)
    here = ctx["stage"].position
    # Where work still waits: the stages after this one first, then the earlier ones.
    waiting = sorted((s for s in ctx["project"].stages if s.id != stage_id and s.active), key=lambda s: (s.position < here, s.position))
    return render(request, "annotate/done.html", {**ctx, "waiting": waiting, "page_url": f"/stages/{stage_id}/annotate"})


def _screen_context(request: Request, session: Session, assignment_id: int, user: Principal, values: dict | None = None) -> dict:
    screen = annotation.open_assignment(session, assignment_id, user.id)
    workflow = get_workflow(screen.stage.workflow)
    if values is None:
        if screen.draft:
            values = screen.draft
        elif screen.previous is not None:  # sent back or opened again: the annotator revises what they gave
            values = workflow.payload_values(screen.item_context, screen.previous)
        else:
            values = workflow.initial_values(screen.item_context)
    return {
        **workflow_screen(workflow, screen, values, f"/assignments/{assignment_id}/check"),
        "assignment": screen.assignment,
        "project": {"id": screen.stage.project_id, "name": screen.project_name},
        "mine": screen.mine,
        "bar": stage_bar(request, session, screen.stage.id),
        "returned": screen.returned,
        "quiz": (quiz := qualification.quiz_banner(session, screen.stage.config, screen.stage.id, user.id)),
        "quiz_item": quiz is not None and screen.item.status == ItemStatus.gold,  # no skip (app.gate.keep_quiz_item)
        # A submitted item takes a revision while it is still open in this stage.
        "revisable": screen.item.stage_id == screen.stage.id and screen.item.status == ItemStatus.active,
        "idempotency_key": uuid.uuid4().hex,
        "opened_at": time.time(),
    }


def workflow_screen(workflow, screen, values: dict, check_url: str) -> dict:
    """What a workflow's template needs, for an annotator's screen or a reviewer's editor;
    `screen` has the item, stage, earlier results and suggestions."""
    ctx = screen.item_context
    return {
        "item": ctx.item,
        "item_id": screen.item.id,
        "assets": screen.item.assets,
        "stage": screen.stage,
        "workflow": workflow,
        "values": values,
        "extra": workflow.screen_context(ctx, values),
        "live": workflow.live_check(ctx, values) if workflow.has_live_check else None,
        "check_url": check_url,
    }


def stage_bar(request: Request, session: Session, stage_id: int):
    """The stage's progress for the screen's bar, shared by this process's screens for
    BAR_TTL_SECONDS (a submit drops it, so that the annotator sees their own submit counted)."""
    cache = request.app.state.progress_cache
    hit = cache.get(stage_id)
    if hit is None or time.monotonic() - hit[0] > BAR_TTL_SECONDS:
        hit = cache[stage_id] = (time.monotonic(), projects.stage_progress(session, stage_id))
    return hit[1]


@router.get("/assignments/{assignment_id}", dependencies=[LiveProject])
def screen(request: Request, assignment_id: BigId, session: Db, user: Principal = Depends(own_assignment_user)):
    return _screen_page(request, session, assignment_id, user)


def _screen_page(request: Request, session: Session, assignment_id: int, user: Principal):
    """The screen of an assignment. Also the answer to a submit or skip that led to it: the page
    names its own address (`page_url`), which the browser puts in place of the POST's, so a reload
    asks for the screen with a GET and Back finds the item before.

    The screen comes whole, in one request: the stage's progress bar (`stage_bar`) and prefetch
    links for the images of the item a claim would most likely give next (nothing is leased; the
    browser fetches them at its lowest priority while the annotator works, and the next screen
    draws them from its cache). They were two fragments the screen asked for once shown: two more
    requests per item, each with its own threadpool hop, session cookie, connection checkout and
    transaction, for two one-row reads: without them the browser loop's app CPU an item fell by a
    fifth to a third (bench/cycle_bench.py --modes pages)."""
    ctx = _screen_context(request, session, assignment_id, user)
    ahead = annotation.upcoming_images(session, ctx["stage"].id, user.id, ctx["item_id"])[:MAX_PREFETCH]
    ctx.update(page_url=f"/assignments/{assignment_id}", ahead=ahead)
    response = render(request, "annotate/screen.html", ctx)
    # Never shown again from a cache: Back to a submitted item asks anew and says it was submitted.
    response.headers["Cache-Control"] = "no-store"
    return response


def _submit(session: Session, assignment_id: int, user: Principal, answer: AnswerForm) -> int:
    """Submit the posted answer; returns the stage's id."""
    opened_at = answer.meta.get("opened_at")
    try:
        spent = max(0.0, time.time() - float(opened_at or 0)) if opened_at else None
    except ValueError:
        spent = None
    if spent is not None and not spent <= MAX_SECONDS_SPENT:  # opened_at forged or broken (-inf, -1e308): not known
        spent = None
    key = answer.meta.get("idempotency_key") or ""
    return annotation.submit(session, assignment_id, user.id, answer.values, key, seconds_spent=spent,
                             active_seconds=answer.meta.get("active_seconds"), form=True).stage_id


@router.post("/assignments/{assignment_id}/submit")
def submit(request: Request, assignment_id: BigId, answer: Answer, sessions: Sessions):
    """Store the answer, then claim and render the next item's screen (see `_next_screen`), in two
    transactions: committing the answer first frees the counter rows its triggers updated
    (`app/models/counts.py`), which other annotators' submits wait for, while the next screen is
    claimed and rendered. A refused answer is rolled back whole and answered with the same screen,
    the error and what was posted (no savepoint: it would cost every submit two round trips)."""
    try:
        with transaction(sessions) as session:
            user = signed_in(request, session)
            stage_id = _submit(session, assignment_id, user, answer)
    except (Invalid, Conflict) as error:
        with transaction(sessions) as session:
            return _refused_screen(request, session, assignment_id, user, answer, error)
    request.app.state.progress_cache.pop(stage_id, None)  # the annotator sees their submit counted
    with transaction(sessions) as session:
        return _next_screen(request, session, stage_id, user)


def _refused_screen(request: Request, session: Session, assignment_id: int, user: Principal, answer: AnswerForm, error: Invalid | Conflict):
    """The screen again after a refused submit: the error, and the fields as they were posted."""
    ctx = _screen_context(request, session, assignment_id, user, answer.values)
    # A revision of a submitted item goes in under a new key; anything else keeps the posted one.
    keep = {} if isinstance(error, annotation.AlreadySubmitted) else {"idempotency_key": answer.meta.get("idempotency_key")}
    return render_error(request, "annotate/screen.html", ctx, error, **keep)


@router.post("/assignments/{assignment_id}/skip")
def skip(request: Request, assignment_id: BigId, sessions: Sessions):
    """Give the item back for later, then claim and render the next one, in two transactions."""
    with transaction(sessions) as session:
        user = signed_in(request, session)
        stage_id, _ = annotation.assignment_stage(session, assignment_id, user.id)
        annotation.give_back(session, assignment_id, user.id, skip=True)
    with transaction(sessions) as session:
        return _next_screen(request, session, stage_id, user)


def _next_screen(request: Request, session: Session, stage_id: int, user: Principal):
    """What an answered or skipped item leads to: the next item's screen, claimed and rendered in the
    same request (no redirect and no second request between items; in a transaction after the one
    that stored the answer), or the page that says nothing is left."""
    claimed = annotation.resume_or_claim(session, stage_id, user.id)
    if claimed is None:
        return _go(request, f"/stages/{stage_id}/annotate") if is_htmx(request) else _nothing_left(request, session, stage_id, user)
    if is_htmx(request):
        return _go(request, f"/assignments/{claimed.assignment_id}")
    return _screen_page(request, session, claimed.assignment_id, user)


@router.post("/assignments/{assignment_id}/check", dependencies=[LiveProject])
def live_check(request: Request, assignment_id: BigId, session: Db, answer: Answer, user: Principal = Depends(own_assignment_user)):
    """The workflow's live check of what the annotator has typed so far, as a fragment."""
    return live_check_fragment(request, annotation.open_assignment(session, assignment_id, user.id), answer.values)


def live_check_fragment(request: Request, screen, values: dict) -> HTMLResponse:
    """Re-render the workflow's `live_check` block for the posted form values; `screen` has the item,
    stage and earlier results (an annotator's assignment or a reviewed item)."""
    workflow = get_workflow(screen.stage.workflow)
    if not workflow.has_live_check:
        raise NotFound("This workflow has no live check.")
    live = workflow.live_check(screen.item_context, values)
    # This endpoint answers with the fragment whoever asks: each workflow's block targets its own element.
    return render(request, workflow.template, {"live": live, "values": values}, block="live_check")


@router.post("/assignments/{assignment_id}/draft", dependencies=[LiveProject])
def draft(request: Request, assignment_id: BigId, session: Db, answer: Answer, user: Principal = Depends(own_assignment_user)):
    try:
        with savepoint(session):
            drafts.save_draft(session, assignment_id, user.id, answer.values, answer.meta.get("active_seconds"))
    except Conflict as exc:
        return render(request, "annotate/screen.html", {"draft_error": exc.message}, status_code=409, block="draft_state")
    return render(request, "annotate/screen.html", {"draft_saved": time.strftime("%H:%M:%S")}, block="draft_state")


def _go(request: Request, url: str):
    if is_htmx(request):
        return HTMLResponse("", headers={"HX-Redirect": url})
    return RedirectResponse(url, status_code=303)
