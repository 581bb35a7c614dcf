"""A stage's settings page (admins): its configuration (arms, probes, gold items and the workflow's own
keys) changed once the project runs, checked as at creation and kept in the audit log."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse

from app import jsontext
from app.datasets import get_workflow
from app.errors import DomainError, Invalid
from app.models import Role
from app.services.projects import admin as project_admin
from app.services.projects import projects
from app.web.deps import Db, Id, Principal, csrf_protect, page_role, savepoint
from app.web.flash import flash, take_flash
from app.web.schemas import ProjectUpdate, StageUpdate
from app.web.templating import render, render_error

router = APIRouter(dependencies=[Depends(csrf_protect)])
admin_only = page_role(Role.admin)
TEMPLATE = "projects/stage_settings.html"
MAX_CONFIG = 100_000  # characters of the configuration's JSON


def _context(session: Db, stage_id: int, config_text: str | None = None) -> dict[str, Any]:
    stage = projects.get_stage(session, stage_id)
    return {"stage": stage, "project": projects.get_project(session, stage.project_id),
            "settings": get_workflow(stage.workflow).config_schema.descriptions(),
            "config": config_text if config_text is not None else json.dumps(stage.config or {}, indent=2, ensure_ascii=False)}


def _parsed(text: str, settings) -> dict[str, Any]:
    """The posted configuration, held to the JSON limits the API holds request bodies to (app.jsontext)."""
    if (why := jsontext.problem(text, max_bytes=settings.max_json_bytes, max_depth=settings.max_json_depth)) is not None:
        raise Invalid(f"The configuration is refused: {why}.", field="config")
    try:
        config = jsontext.loads(text) if text.strip() else {}
    except jsontext.NumberRefused as exc:
        raise Invalid(f"A number JSON does not allow: {exc}.", field="config") from None
    except json.JSONDecodeError as exc:
        raise Invalid(f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).", field="config") from None
    if not isinstance(config, dict):
        raise Invalid("The configuration is a JSON object, e.g. {}.", field="config")
    return config


@router.get("/stages/{stage_id}/settings")
def stage_settings(request: Request, stage_id: Id, session: Db, user: Principal = Depends(admin_only)):
    """The stage's configuration as JSON, with the keys its workflow reads."""
    return render(request, TEMPLATE, {**_context(session, stage_id), "notice": take_flash(request, "stage_settings")})


@router.post("/stages/{stage_id}/settings")
def save_stage_settings(request: Request, stage_id: Id, session: Db, config: str = Form("", max_length=MAX_CONFIG),
                        user: Principal = Depends(admin_only)):
    """Replace the stage's configuration with the one posted (a key left out goes back to its default)."""
    stage = projects.get_stage(session, stage_id)
    try:
        new = _parsed(config, request.app.state.settings)
        changes = {**dict.fromkeys(stage.config or {}), **new}  # keys taken out of the text: None, their default
        with savepoint(session):
            project_admin.update_project(session, stage.project_id, ProjectUpdate(stages=[StageUpdate(id=stage_id, config=changes)]),
                                         actor_id=user.id)
    except DomainError as exc:
        return render_error(request, TEMPLATE, _context(session, stage_id, config), exc, focus=exc.field)
    flash(request, "Saved: the new settings apply from the next claim; the audit log keeps the values before.", slot="stage_settings")
    return RedirectResponse(f"/stages/{stage_id}/settings", status_code=303)
