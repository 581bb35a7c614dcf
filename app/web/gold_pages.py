"""Gold item pages: import a stage's gold answers, make an item's final gold (admins); forms post, then redirect."""

from __future__ import annotations

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import RedirectResponse

from app.errors import DomainError
from app.models import Role
from app.services import gold
from app.web.deps import INT4_MAX, BigId, Db, Id, Principal, csrf_protect, page_role, savepoint
from app.web.flash import flash
from app.web.uploads import read_upload

router = APIRouter(dependencies=[Depends(csrf_protect)])
admin_only = page_role(Role.admin)


@router.post("/stages/{stage_id}/gold")
def import_gold(request: Request, stage_id: Id, session: Db, file: UploadFile = File(...), user: Principal = Depends(admin_only)):
    """Mark the items a JSONL file names as gold items of the stage, with their answers; back to the dashboard."""
    try:
        with savepoint(session):
            body = read_upload(file, request.app.state.settings.max_upload_bytes)
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
