"""Gold item and leak pages: import gold answers, make a final gold, find leaks, keep groups together (admins)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import RedirectResponse

from app.errors import DomainError
from app.models import Role
from app.services.quality import gold
from app.web.deps import BigId, Db, INT4_MAX, Id, LiveProject, Principal, csrf_protect, page_role, savepoint
from app.web.flash import flash
from app.web.uploads import spooled

router = APIRouter(dependencies=[Depends(csrf_protect), LiveProject])
admin_only = page_role(Role.admin)


@router.post("/stages/{stage_id}/gold")
def import_gold(request: Request, stage_id: Id, session: Db, file: UploadFile = File(...), user: Principal = Depends(admin_only)):
    """Mark the items a JSONL file names as gold items of the stage, with their answers; back to the dashboard."""
    try:
        with savepoint(session):
            body = spooled(file, request.app.state.settings.max_upload_bytes).read()
            n = gold.import_answers(session, stage_id, body, actor_id=user.id)
    except DomainError as exc:
        flash(request, {"error": exc.message, "errors": exc.errors[:20]}, slot="gold")
        return RedirectResponse(f"/stages/{stage_id}/agreement#gold", status_code=303)
    flash(request, {"notice": f"{n:,} gold items imported."}, slot="gold")
    return RedirectResponse(f"/stages/{stage_id}/agreement#gold", status_code=303)


@router.post("/items/{item_id}/gold")
def make_final_gold(request: Request, item_id: BigId, session: Db, stage_id: int = Form(..., ge=0, le=INT4_MAX), user: Principal = Depends(admin_only)):
    """Make the item's final record in the stage the truth of a gold item; back to its history."""
    try:
        with savepoint(session):
            gold.make_final_gold(session, item_id, stage_id, actor_id=user.id)
    except DomainError as exc:
        flash(request, {"error": exc.message}, slot="gold")
    else:
        flash(request, {"notice": "This item is now a gold item of the stage: it is served as a honeypot and no longer exported."}, slot="gold")
    return RedirectResponse(f"/items/{item_id}/history", status_code=303)


@router.post("/projects/{project_id}/leaks")
def find_leaks(request: Request, project_id: Id, session: Db, user: Principal = Depends(admin_only)):
    """Queue the worker job that finds the newest split version's leaks; back to the export page."""
    from app.services.projects import projects
    from app.worker import jobs

    projects.get_project(session, project_id)  # 404 for an unknown project
    job_id = jobs.defer_leaks(request.app.state.settings, project_id)
    flash(request, f"Job {job_id} queued: the worker finds the leaks." if job_id else "A leak search is already queued.")
    return RedirectResponse(f"/projects/{project_id}/export#leaks", status_code=303)


@router.post("/projects/{project_id}/leaks/keep-together")
def keep_together(request: Request, project_id: Id, session: Db, user: Principal = Depends(admin_only)):
    """Put each leaked group of the newest report into one split, as a new split version."""
    from app.services.leaks import leaks

    try:
        with savepoint(session):
            new = leaks.keep_newest_together(session, project_id, actor_id=user.id)
    except DomainError as exc:
        flash(request, exc.message)
    else:
        flash(request, f"Saved split version {new.version} with every leaked group in one split: "
              + ", ".join(f"{k} {v:,}" for k, v in new.ordered_counts.items()) + ". Find leaks again to check it.")
    return RedirectResponse(f"/projects/{project_id}/export#leaks", status_code=303)
