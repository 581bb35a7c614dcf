"""Qualification quiz and auto-pause on the gold section of a stage's dashboard: lift an annotator's pause,
reset their quiz tries (an admin or the workspace's manager), and set the stage's quiz and pause (admin)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse

from app.errors import Conflict, DomainError, Forbidden
from app.models import Role
from app.services.projects import admin as project_admin
from app.services.projects import projects
from app.services.quality import qualification
from app.web.deps import Db, Id, Principal, csrf_protect, page_role, page_user, savepoint
from app.web.flash import flash
from vlcurate.models_manage import ProjectUpdate, StageUpdate

router = APIRouter(dependencies=[Depends(csrf_protect)])


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


@router.post("/stages/{stage_id}/qualification")
def set_gate(request: Request, stage_id: Id, session: Db, user: Principal = Depends(page_role(Role.admin)),
             quiz_items: int = Form(0), quiz_pass: float = Form(1.0), quiz_tries: int = Form(1),
             pause_window: int = Form(0), pause_threshold: float = Form(0.7)):
    """The stage's quiz and auto-pause settings, checked and audited as the API's project update."""
    stage = projects.get_stage(session, stage_id)
    config = {"quiz_items": quiz_items, "quiz_pass": quiz_pass, "quiz_tries": quiz_tries, "pause_window": pause_window,
              "pause_threshold": pause_threshold}
    try:
        with savepoint(session):
            project_admin.update_project(session, stage.project_id, ProjectUpdate(stages=[StageUpdate(id=stage_id, config=config)]),
                                         actor_id=user.id)
    except DomainError as exc:
        flash(request, {"error": exc.message, "errors": exc.errors[:20]}, slot="gold")
    else:
        flash(request, {"notice": "Quiz and auto-pause settings saved."}, slot="gold")
    return RedirectResponse(f"/stages/{stage_id}/agreement#gold", status_code=303)
