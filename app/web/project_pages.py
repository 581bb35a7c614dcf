"""Project pages: the list with progress bars, a project's stages and counts, creation and import."""

from __future__ import annotations

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session

from app.datasets import all_tasks, follow_on
from app.errors import DomainError, Invalid
from app.models import Role
from app.services import figures, projects
from app.web.deps import Db, Id, Principal, csrf_protect, page_role, page_user, savepoint
from app.web.templating import render
from app.web.uploads import run_upload_import

router = APIRouter(dependencies=[Depends(csrf_protect)])


def _list_context(session: Session, form: dict | None = None, error: str | None = None) -> dict:
    return {
        "projects": projects.progress(session),
        # A workflow that builds on another is added with it, never chosen on its own.
        "workflows": [{"name": t.name, "title": t.title, "follow_on": follow_on(t.name)} for t in all_tasks() if not t.requires],
        "form": form or {"name": "", "workflow": "generic.choice", "overlap": 1, "sample_size": "", "choices": ""},
        "error": error,
    }


@router.get("/")
def project_list(request: Request, session: Db, user: Principal = Depends(page_user)):
    return render(request, "projects/list.html", _list_context(session))


def _sample_size(text: str) -> int | None:
    try:
        sample = int(text) if text.strip() else None
    except ValueError:
        sample = 0
    if sample is not None and sample < 1:
        raise Invalid("The sample size is a whole number of items (1 or more), or empty for all items.")
    return sample


@router.post("/projects")
def create_project(
    request: Request,
    session: Db,
    name: str = Form(""),
    workflow: str = Form(""),
    overlap: int = Form(1),
    sample_size: str = Form(""),
    choices: str = Form(""),
    user: Principal = Depends(page_role(Role.admin)),
):
    form = {"name": name, "workflow": workflow, "overlap": overlap, "sample_size": sample_size, "choices": choices}
    config = {"choices": [c.strip() for c in choices.split(",") if c.strip()]} if choices.strip() else {}
    try:
        specs = projects.stage_specs_for(workflow, overlap=max(1, overlap), sample_size=_sample_size(sample_size), config=config)
        with savepoint(session):
            project = projects.create_project(session, name, specs, actor_id=user.id)
    except DomainError as exc:
        return render(request, "projects/list.html", _list_context(session, form, exc.message), status_code=422)
    return RedirectResponse(f"/projects/{project.id}", status_code=303)


def _detail_context(session: Session, project_id: int, **extra) -> dict:
    return {
        "project": projects.project_progress(session, project_id),
        "stage_rows": projects.stages_of(session, project_id),
        "breakdown": figures.breakdown(session, project_id),
        "figures": figures.figures(session, project_id),
        "charts": figures.charts(session, project_id),
        "acceptance": figures.suggestion_acceptance(session, project_id),
        **extra,
    }


@router.get("/projects/{project_id}")
def project_detail(request: Request, project_id: Id, session: Db, user: Principal = Depends(page_user)):
    return render(request, "projects/detail.html", _detail_context(session, project_id))


@router.post("/projects/{project_id}/import")
def import_page(
    request: Request,
    project_id: Id,
    session: Db,
    file: UploadFile = File(...),
    images: UploadFile | None = File(None),
    user: Principal = Depends(page_role(Role.admin)),
):
    message, errors, status = None, [], 200
    try:
        with savepoint(session):
            result = run_upload_import(request, session, project_id, file, images, user.id)
        message = f"Imported {result.created:,} items ({result.images:,} images, {result.new_images:,} new)."
    except DomainError as exc:
        message, errors, status = exc.message, exc.errors, exc.status_code
    ctx = _detail_context(session, project_id, import_message=message, import_errors=errors, import_ok=status == 200)
    return render(request, "projects/detail.html", ctx, status_code=status)
