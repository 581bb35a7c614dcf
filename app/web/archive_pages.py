"""Deleting a project from its page (admin, its name typed again) archives it; the projects list's
archived filter (`/?archived=1`, admin) shows the deleted ones, each with a restore button. The
restore route is the one page route that takes an archived project's id (no `LiveProject` here)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse

from app.errors import DomainError
from app.models import Role
from app.services.projects import archive
from app.web.deps import Db, Id, Posted, Principal, csrf_protect, page_role, savepoint
from app.web.flash import flash

router = APIRouter(dependencies=[Depends(csrf_protect)])
admin_only = page_role(Role.admin)


@router.post("/projects/{project_id}/delete")
def delete_project(request: Request, project_id: Id, session: Db, posted: Posted, user: Principal = Depends(admin_only)):
    """Archive the project once the form repeats its name; a wrong name changes nothing and says so."""
    try:
        with savepoint(session):
            project = archive.archive_project(session, project_id, str(posted.get("confirm", "")), actor_id=user.id)
    except DomainError as exc:
        if exc.status_code == 404:
            raise
        flash(request, exc.message, "delete")
        return RedirectResponse(f"/projects/{project_id}#delete", status_code=303)
    flash(request, f"Project {project.name!r} was deleted: it is archived, its annotations kept; an admin can restore it from the archived projects.")
    return RedirectResponse("/", status_code=303)


@router.post("/projects/{project_id}/restore")
def restore_project(request: Request, project_id: Id, session: Db, user: Principal = Depends(admin_only)):
    project = archive.restore_project(session, project_id, actor_id=user.id)
    flash(request, f"Project {project.name!r} was restored.")
    return RedirectResponse(f"/projects/{project_id}", status_code=303)
