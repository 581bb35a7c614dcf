"""Project pages: the list with progress bars, the new-project form, a project's stages and counts,
import, and the project's items."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, BackgroundTasks, Depends, File, HTTPException, Request, UploadFile
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session

from app import jsontext
from app.datasets import all_workflows, follow_on, get_workflow
from app.errors import DomainError, Invalid, ascii_digits
from app.lifecycle import ItemStatus
from app.models import Role
from app.services.imports import items
from app.services.projects import projects
from app.services.quality import figures
from app.services.users import workspace_admin, workspaces
from app.settings import Settings
from app.web.deps import BigId, Db, Id, LiveProject, Posted, Principal, csrf_protect, form_id, page_role, page_user, savepoint
from app.web.flash import flash, take_flash
from app.web.templating import is_htmx, render, render_error
from app.web.uploads import run_upload_import

router = APIRouter(dependencies=[Depends(csrf_protect), LiveProject])


def _list_context(session: Session, user: Principal, archived: bool = False) -> dict:
    visible = workspaces.visible_projects(user.id, user.role)
    # A workspace manager's way to their workspaces and work logs (an admin's is the menu).
    managed = workspaces.managed_workspaces(session, user.id, user.role) if user.role != Role.admin and not archived else []
    return {"projects": projects.progress(session, archived=archived, visible=visible), "archived": archived, "managed": managed}


@router.get("/")
def project_list(request: Request, session: Db, archived: bool = False, user: Principal = Depends(page_user)):
    """The projects the user sees (all of them for a global admin), with their progress; `archived=1`
    (admin) lists the deleted ones, to restore."""
    if archived and not user.at_least(Role.admin):
        raise HTTPException(403, "The archived projects are for admins.")
    return render(request, "projects/list.html", {**_list_context(session, user, archived), "notice": take_flash(request)})


# -- the new-project form ----------------------------------------------------------------------------

PROJECT_FIELDS = {"name": "", "description": "", "workflow": "generic.choice", "overlap": "1", "sample_size": "", "choices": "",
                  "workspace_id": ""}


def _workspace_choices(session: Session) -> list:
    """The workspaces a new project may go in; none shown while there is only the default one."""
    found = workspace_admin.list_workspaces(session)
    return found if len(found) > 1 else []


def _new_context(form: Mapping[str, Any], error: DomainError | None = None, stage_errors: dict[int, str] | None = None) -> dict:
    """The form as typed: the project's fields, and one fieldset per stage of the chosen workflow's
    pipeline (its name, guidelines and configuration, and the keys that configuration may set)."""
    values = {k: str(form.get(k, default)) for k, default in PROJECT_FIELDS.items()}
    try:
        chain = (get_workflow(values["workflow"]).name, *follow_on(values["workflow"]))
    except Invalid:
        chain = ()
    stages = [
        {
            "index": i, "workflow": w, "title": get_workflow(w).title, "settings": get_workflow(w).config_schema.descriptions(),
            "name": str(form.get(f"stage_name_{i}", "")), "guidelines": str(form.get(f"guidelines_{i}", "")),
            "config": str(form.get(f"config_{i}", "")), "error": (stage_errors or {}).get(i),
        }
        for i, w in enumerate(chain)
    ]
    return {
        # A workflow that builds on another is added with it, never chosen on its own.
        "workflows": [{"name": t.name, "title": t.title, "follow_on": follow_on(t.name)} for t in all_workflows() if not t.requires],
        "form": values, "stages": stages,
        "error": error.message if error else None, "errors": error.errors if error else [],
        # The field in error takes the focus (and so scrolls into view) and shows the message beside it.
        "focus": error.field if error else None,
    }


@router.get("/projects/new")
def new_project(request: Request, session: Db, user: Principal = Depends(page_role(Role.admin))):
    """The form; with query parameters (the workflow select asks for its stages), the form as typed."""
    return render(request, "projects/new.html", {**_new_context(request.query_params), "workspaces": _workspace_choices(session)})


@router.post("/projects/preview")
def preview_guidelines(request: Request, posted: Posted, user: Principal = Depends(page_role(Role.admin))):
    """Guidelines as annotators will see them: the same Markdown filter as the screens (raw HTML shown as text)."""
    text = next((str(v) for k, v in posted.items() if k.startswith("guidelines")), "")
    return render(request, "projects/new.html", {"text": text}, block="preview")


def _sample_size(text: str) -> int | None:
    try:
        sample = int(text) if text.strip() else None
    except ValueError:
        sample = 0
    if sample is not None and sample < 1:
        raise Invalid("The sample size is a whole number of items (1 or more), or empty for all items.", field="sample_size")
    return sample


def _overlap(text: str) -> int:
    if not ascii_digits(text.strip()) or not 1 <= int(text) <= 50:
        raise Invalid("Annotators per item is a whole number from 1 to 50.", field="overlap")
    return int(text)


def _stage_specs(form: Mapping[str, Any]) -> tuple[list[projects.StageSpec], dict[int, str]]:
    """The stages the form describes, and a message for each stage whose configuration is refused."""
    specs = projects.stage_specs_for(form["workflow"], overlap=_overlap(form["overlap"]), sample_size=_sample_size(form["sample_size"]))
    problems: dict[int, str] = {}
    for i, spec in enumerate(specs):
        text = str(form.get(f"config_{i}", "")).strip()
        try:
            config = jsontext.loads(text) if text else {}
        except jsontext.NumberRefused as exc:
            problems[i] = f"A number JSON does not allow: {exc}."
            continue
        except json.JSONDecodeError as exc:
            problems[i] = f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
            continue
        if i == 0 and form["choices"].strip() and isinstance(config, dict):
            config = {**config, "choices": [c.strip() for c in form["choices"].split(",") if c.strip()]}
        try:
            spec.config = get_workflow(spec.workflow).config_schema.check_stage(config, spec.workflow)
        except Invalid as exc:
            problems[i] = " ".join([exc.message, *exc.errors])
        spec.name = str(form.get(f"stage_name_{i}", "")).strip() or None
        spec.guidelines = str(form.get(f"guidelines_{i}", ""))
    return specs, problems


@router.post("/projects")
def create_project(request: Request, session: Db, posted: Posted, user: Principal = Depends(page_role(Role.admin))):
    form = {**PROJECT_FIELDS, **{k: str(v) for k, v in posted.items() if k != "csrf_token"}}
    problems: dict[int, str] = {}
    try:
        specs, problems = _stage_specs(form)
        if problems:
            first = min(problems)
            raise Invalid(f"Stage {first + 1}'s configuration is not valid: the message is under it, where the cursor is.",
                          field=f"config_{first}")
        with savepoint(session):
            workspace = form_id(form["workspace_id"], "workspace_id")
            project = projects.create_project(session, form["name"], specs, description=form["description"].strip(), actor_id=user.id,
                                              workspace_id=workspace)
    except DomainError as exc:
        ctx = {**_new_context(form, exc, problems), "workspaces": _workspace_choices(session)}
        return render(request, "projects/new.html", ctx, status_code=exc.status_code)
    return RedirectResponse(f"/projects/{project.id}", status_code=303)


def _detail_context(session: Session, project_id: int, settings: Settings, **extra) -> dict:
    return {
        "project": projects.project_progress(session, project_id),
        "stage_rows": projects.stages_of(session, project_id),
        "breakdown": figures.breakdown(session, project_id),
        "figures": figures.figures(session, project_id),
        "charts": figures.charts(session, project_id),
        "acceptance": figures.suggestion_acceptance(session, project_id),
        "upload_limit": settings.max_upload_bytes, "image_limit": settings.max_image_bytes,
        **extra,
    }


@router.get("/projects/{project_id}")
def project_detail(request: Request, project_id: Id, session: Db, user: Principal = Depends(page_user)):
    notice = None if is_htmx(request) else take_flash(request)  # a poll must not eat the notice
    deleting = None if is_htmx(request) else take_flash(request, "delete")
    return render(request, "projects/detail.html", _detail_context(session, project_id, request.app.state.settings, import_message=notice,
                                                                   import_ok=True, delete_error=deleting))


@router.post("/projects/{project_id}/import")
def import_page(
    request: Request,
    project_id: Id,
    session: Db,
    jobs_after: BackgroundTasks,
    file: UploadFile = File(...),
    images: UploadFile | None = File(None),
    user: Principal = Depends(page_role(Role.admin)),
):
    """Import; on success back to the project page (a reload never imports twice), else the errors."""
    try:
        with savepoint(session):
            result = run_upload_import(request, session, project_id, file, images, user.id, jobs_after)
    except DomainError as exc:
        ctx = _detail_context(session, project_id, request.app.state.settings, import_message=exc.message, import_errors=exc.errors, import_ok=False)
        return render(request, "projects/detail.html", ctx, status_code=exc.status_code)
    flash(request, f"Imported {result.created:,} items ({result.images:,} images, {result.new_images:,} new).")
    return RedirectResponse(f"/projects/{project_id}#import", status_code=303)


# -- the items of a project (reviewers and admins) ------------------------------------------------------


@router.get("/projects/{project_id}/items")
def items_page(
    request: Request, project_id: Id, session: Db, stage: str = "", status: str = "", annotator: str = "", q: str = "",
    after: BigId | None = None, before: BigId | None = None, user: Principal = Depends(page_role(Role.reviewer)),
):
    """Filter by stage, status, annotator and text; pages by id (keyset), each row opening the item's history."""
    project = projects.get_project(session, project_id)
    typed = {"stage": stage, "status": status, "annotator": annotator, "q": q}
    ctx = {"project": project, "stages": projects.stages_of(session, project_id), "statuses": list(ItemStatus),
           "annotators": items.annotator_choices(session), "filters": typed}
    try:
        found = items.list_items(session, project_id, items.ItemFilter.parse(stage, status, annotator, q), after=after, before=before)
    except DomainError as exc:
        return render_error(request, "projects/items.html", {**ctx, "page": items.ItemPage([], None, None)}, exc)
    query = {k: v for k, v in typed.items() if v}
    return render(request, "projects/items.html", {
        **ctx, "page": found, "window": items.SCAN_WINDOW,
        "next_url": f"?{urlencode({**query, 'after': found.after})}" if found.after else None,
        "prev_url": f"?{urlencode({**query, 'before': found.before})}" if found.before else None,
    })
