"""Qualification quiz and auto-pause on the gold section of a stage's dashboard: lift an annotator's pause,
reset their quiz tries (an admin or the workspace's manager). The settings are the stage's settings page's."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse

from app.errors import Conflict, Forbidden
from app.services.quality import qualification
from app.web.deps import Db, Id, LiveProject, Principal, csrf_protect, page_user, savepoint
from app.web.flash import flash

router = APIRouter(dependencies=[Depends(csrf_protect), LiveProject])


@router.post("/stages/{stage_id}/annotators/{annotator_id}/lift-pause")
def lift_pause(request: Request, stage_id: Id, annotator_id: Id, session: Db, user: Principal = Depends(page_user)):
    """Lift the annotator's auto-pause; back to the stage's gold section."""
    return _act(request, session, stage_id, annotator_id, user, qualification.lift_pause, "Pause lifted: {name} gets items in this stage again.")


@router.post("/stages/{stage_id}/annotators/{annotator_id}/reset-quiz")
def reset_quiz(request: Request, stage_id: Id, annotator_id: Id, session: Db, user: Principal = Depends(page_user)):
    """Give the annotator every try of the stage's quiz again; back to the stage's gold section."""
    return _act(request, session, stage_id, annotator_id, user, qualification.reset_quiz, "Quiz reset: {name} has every try of the stage's quiz again.")


def _act(request: Request, session, stage_id: int, annotator_id: int, user: Principal, do, done: str):
    try:
        with savepoint(session):
            do(session, stage_id, annotator_id, user)
    except (Conflict, Forbidden) as exc:
        flash(request, {"error": exc.message}, slot="gold")
    else:
        flash(request, {"notice": done.format(name=qualification.username(session, annotator_id))}, slot="gold")
    return RedirectResponse(f"/stages/{stage_id}/agreement#gold", status_code=303)
