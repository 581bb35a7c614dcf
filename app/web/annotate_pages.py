"""Annotation pages: take the next item, show its workflow's screen, autosave, submit, skip."""

from __future__ import annotations

import time
import uuid

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from markupsafe import escape
from starlette.concurrency import run_in_threadpool

from app import queue
from app.datasets import get_task
from app.db import transaction
from app.errors import Conflict, Invalid, NotFound
from app.services import annotation, projects
from app.web.deps import Principal, csrf_protect, form_values, page_user
from app.web.templating import is_htmx, render

router = APIRouter(dependencies=[Depends(csrf_protect)])

BAR_TTL_SECONDS = 3.0


@router.get("/stages/{stage_id}/annotate")
def next_item(request: Request, stage_id: int, user: Principal = Depends(page_user)):
    """Resume the user's live lease in the stage, or claim the next item."""
    with transaction(request.app.state.sessions) as session:
        stage = projects.get_stage(session, stage_id)
        current = queue.current_assignment(session, stage_id, user.id)
        if current is not None:
            return RedirectResponse(f"/assignments/{current.id}", status_code=303)
        claimed = queue.claim_next(session, stage, user.id)
        if claimed is not None:
            return RedirectResponse(f"/assignments/{claimed.assignment_id}", status_code=303)
        progress = projects.project_progress(session, stage.project_id)
        done = annotation.user_stage_counts(session, stage_id, user.id)
    return render(request, "annotate/done.html", {"project": progress, "stage_id": stage_id, "done": done})


def _screen_context(request: Request, assignment_id: int, user: Principal, values: dict | None = None) -> dict:
    with transaction(request.app.state.sessions) as session:
        screen = annotation.open_assignment(session, assignment_id, user.id)
        project = projects.get_project(session, screen.stage.project_id)
        mine = annotation.user_stage_counts(session, screen.stage.id, user.id)
    workflow = get_task(screen.stage.workflow)
    item, config = screen.item.data, screen.stage.config
    if values is None:
        if screen.draft:
            values = screen.draft
        elif screen.previous is not None:  # sent back: the annotator revises what they gave
            values = workflow.payload_values(screen.previous, item, config, screen.results)
        else:
            values = workflow.initial_values(item, config, results=screen.results, suggestions=screen.suggestions)
    return {
        **workflow_screen(workflow, screen, values, f"/assignments/{assignment_id}/check"),
        "assignment": screen.assignment,
        "project": {"id": project.id, "name": project.name},
        "mine": mine,
        "returned": screen.returned,
        "idempotency_key": uuid.uuid4().hex,
        "opened_at": time.time(),
    }


def workflow_screen(workflow, screen, values: dict, check_url: str) -> dict:
    """What a workflow's template needs, for an annotator's screen or a reviewer's editor;
    `screen` has the item, stage, earlier results and suggestions."""
    item, config = screen.item.data, screen.stage.config
    return {
        "item": item,
        "item_id": screen.item.id,
        "assets": screen.item.assets,
        "stage": screen.stage,
        "workflow": workflow,
        "values": values,
        "extra": workflow.screen_context(
            item, config, assets=screen.item.assets, results=screen.results, suggestions=screen.suggestions, values=values
        ),
        "live": workflow.live_check(item, values, config, screen.results) if workflow.has_live_check else None,
        "check_url": check_url,
    }


@router.get("/stages/{stage_id}/bar")
def stage_bar(request: Request, stage_id: int, user: Principal = Depends(page_user)):
    """The stage's progress bar, loaded after the screen so that counting never delays an item.
    Counts are shared for a few seconds: with many items and annotators they are the costly part."""
    cache = request.app.state.progress_cache
    hit = cache.get(stage_id)
    if hit is None or time.monotonic() - hit[0] > BAR_TTL_SECONDS:
        with transaction(request.app.state.sessions) as session:
            stage = projects.get_stage(session, stage_id)
            progress = projects.project_progress(session, stage.project_id)
        hit = (time.monotonic(), next(s for s in progress.stages if s.id == stage_id))
        cache[stage_id] = hit
    return render(request, "projects/_bar.html", {"s": hit[1]})


@router.get("/assignments/{assignment_id}")
def screen(request: Request, assignment_id: int, user: Principal = Depends(page_user)):
    return render(request, "annotate/screen.html", _screen_context(request, assignment_id, user))


@router.post("/assignments/{assignment_id}/submit")
async def submit(request: Request, assignment_id: int, user: Principal = Depends(page_user)):
    values, meta = await form_values(request)

    def work():
        with transaction(request.app.state.sessions) as session:
            screen = annotation.open_assignment(session, assignment_id, user.id)
            workflow = get_task(screen.stage.workflow)
            try:
                spent = max(0.0, time.time() - float(meta.get("opened_at") or 0)) if meta.get("opened_at") else None
            except ValueError:
                spent = None
            annotation.submit(
                session,
                assignment_id,
                user.id,
                workflow.form_to_payload(values),
                meta.get("idempotency_key") or "",
                seconds_spent=spent,
            )
            return screen.stage.id

    try:
        stage_id = await run_in_threadpool(work)
    except (Invalid, Conflict) as exc:
        ctx = await run_in_threadpool(_screen_context, request, assignment_id, user, values)
        ctx.update({"error": exc.message, "errors": exc.errors, "idempotency_key": meta.get("idempotency_key")})
        return render(request, "annotate/screen.html", ctx, status_code=exc.status_code)
    request.app.state.progress_cache.pop(stage_id, None)  # the annotator sees their submit counted
    return _go(request, f"/stages/{stage_id}/annotate")


@router.post("/assignments/{assignment_id}/skip")
def skip(request: Request, assignment_id: int, user: Principal = Depends(page_user)):
    with transaction(request.app.state.sessions) as session:
        screen = annotation.open_assignment(session, assignment_id, user.id)
        annotation.give_back(session, assignment_id, user.id, skip=True)
        stage_id = screen.stage.id
    return _go(request, f"/stages/{stage_id}/annotate")


@router.post("/assignments/{assignment_id}/check")
async def live_check(request: Request, assignment_id: int, user: Principal = Depends(page_user)):
    """The workflow's live check of what the annotator has typed so far, as a fragment."""

    def screen(session):
        return annotation.open_assignment(session, assignment_id, user.id)

    return await live_check_fragment(request, screen)


async def live_check_fragment(request: Request, open_screen) -> HTMLResponse:
    """Re-render the workflow's `live_check` block for the posted form values; `open_screen(session)`
    gives the item, stage and earlier results (an annotator's assignment or a reviewed item)."""
    values, _ = await form_values(request)

    def work():
        with transaction(request.app.state.sessions) as session:
            screen = open_screen(session)
        workflow = get_task(screen.stage.workflow)
        live = workflow.live_check(screen.item.data, values, screen.stage.config, screen.results) if workflow.has_live_check else None
        return workflow, live

    workflow, live = await run_in_threadpool(work)
    if live is None:
        raise NotFound("This workflow has no live check.")
    return render(request, workflow.template, {"live": live, "values": values}, block="live_check")


@router.post("/assignments/{assignment_id}/draft")
async def draft(request: Request, assignment_id: int, user: Principal = Depends(page_user)):
    values, _ = await form_values(request)

    def work():
        with transaction(request.app.state.sessions) as session:
            annotation.save_draft(session, assignment_id, user.id, values)

    try:
        await run_in_threadpool(work)
    except Conflict as exc:
        return HTMLResponse(f'<small class="draft-state error">{escape(exc.message)}</small>', status_code=409)
    return HTMLResponse(f'<small class="draft-state">Draft saved {time.strftime("%H:%M:%S")}</small>')


def _go(request: Request, url: str):
    if is_htmx(request):
        return HTMLResponse("", headers={"HX-Redirect": url})
    return RedirectResponse(url, status_code=303)
