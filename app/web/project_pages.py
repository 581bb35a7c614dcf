"""Project pages: the list with progress bars, a project's stages and counts, creation and import."""

from __future__ import annotations

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from app.datasets import all_tasks, follow_on
from app.db import transaction
from app.errors import DomainError
from app.models import Role
from app.services import figures, projects
from app.web.deps import Principal, csrf_protect, page_role, page_user
from app.web.templating import is_htmx, render
from app.web.uploads import run_upload_import

router = APIRouter(dependencies=[Depends(csrf_protect)])


def _list_context(request: Request, form: dict | None = None, error: str | None = None) -> dict:
    with transaction(request.app.state.sessions) as session:
        rows = projects.progress(session)
    return {
        "projects": rows,
        # A workflow that builds on another is added with it, never chosen on its own.
        "workflows": [{"name": t.name, "title": t.title, "follow_on": follow_on(t.name)} for t in all_tasks() if not t.requires],
        "form": form or {"name": "", "workflow": "generic.choice", "overlap": 1, "sample_size": "", "choices": ""},
        "error": error,
    }


@router.get("/")
def project_list(request: Request, user: Principal = Depends(page_user)):
    if user.must_change_password:
        return RedirectResponse("/account/password", status_code=303)
    return render(request, "projects/list.html", _list_context(request))


@router.post("/projects")
def create_project(
    request: Request,
    name: str = Form(""),
    workflow: str = Form(""),
    overlap: int = Form(1),
    sample_size: str = Form(""),
    choices: str = Form(""),
    user: Principal = Depends(page_role(Role.admin)),
):
    form = {"name": name, "workflow": workflow, "overlap": overlap, "sample_size": sample_size, "choices": choices}
    config = {}
    if choices.strip():
        config["choices"] = [c.strip() for c in choices.split(",") if c.strip()]
    try:
        sample = int(sample_size) if sample_size.strip() else None
        if sample is not None and sample < 1:
            raise ValueError
    except ValueError:
        return render(request, "projects/list.html", _list_context(request, form, "The sample size is a whole number of items (1 or more), or empty for all items."), status_code=422)
    try:
        with transaction(request.app.state.sessions) as session:
            specs = [
                projects.StageSpec(
                    workflow=w, overlap=max(1, overlap), sample_size=sample, config=config if w == workflow else {}
                )
                for w in (workflow, *follow_on(workflow))
            ]
            project = projects.create_project(session, name, specs, actor_id=user.id)
            project_id = project.id
    except DomainError as exc:
        return render(request, "projects/list.html", _list_context(request, form, exc.message), status_code=422)
    return RedirectResponse(f"/projects/{project_id}", status_code=303)


def _detail_context(request: Request, project_id: int) -> dict:
    with transaction(request.app.state.sessions) as session:
        progress = projects.project_progress(session, project_id)
        stages = projects.stages_of(session, project_id)
        breakdown = figures.breakdown(session, project_id)
        stage_figures = figures.figures(session, project_id)
        acceptance = figures.suggestion_acceptance(session, project_id)
    return {
        "project": progress,
        "stage_rows": stages,
        "breakdown": breakdown,
        "figures": stage_figures,
        "acceptance": acceptance,
    }


@router.get("/projects/{project_id}")
def project_detail(request: Request, project_id: int, user: Principal = Depends(page_user)):
    ctx = _detail_context(request, project_id)
    block = "progress" if is_htmx(request) and request.headers.get("hx-target") == "progress" else None
    return render(request, "projects/detail.html", ctx, block=block)


@router.post("/projects/{project_id}/import")
async def import_page(
    request: Request,
    project_id: int,
    file: UploadFile = File(...),
    images: UploadFile | None = File(None),
    user: Principal = Depends(page_role(Role.admin)),
):
    message, errors, status = None, [], 200
    try:
        result = await run_upload_import(request, project_id, file, images, user.id)
        message = f"Imported {result.created:,} items ({result.images:,} images, {result.new_images:,} new)."
    except DomainError as exc:
        message, errors, status = exc.message, exc.errors, exc.status_code
    ctx = await run_in_threadpool(_detail_context, request, project_id)
    ctx.update({"import_message": message, "import_errors": errors, "import_ok": status == 200})
    return render(request, "projects/detail.html", ctx, status_code=status)
