"""Workspace pages: the workspaces (admin creates, renames and deletes them), and one workspace's
members and projects (admin, or its manager: members in and out, projects moved to another workspace
they manage)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session

from app.errors import DomainError, Forbidden, Invalid
from app.models import MemberRole, Role
from app.services.users import users as users_service, workspace_admin, workspaces
from app.web.deps import Db, Id, LiveProject, Principal, csrf_protect, form_id, page_role, page_user, savepoint
from app.web.flash import flash, take_flash
from app.web.templating import render
from app.web.workspace_api import check_target

router = APIRouter(dependencies=[Depends(csrf_protect), LiveProject])
admin = page_role(Role.admin, scoped=False)  # workspaces themselves: global admins only
manager = page_role(Role.admin)  # what a workspace holds: also its manager (app.web.scope)


def _list_context(session: Session, user: Principal, **extra) -> dict:
    ids = [w.id for w in workspaces.managed_workspaces(session, user.id, user.role)]
    return {"workspaces": workspace_admin.list_workspaces(session, ids), **extra}


@router.get("/admin/workspaces")
def workspaces_page(request: Request, session: Db, user: Principal = Depends(page_user)):
    """The workspaces the user manages (every one for a global admin); 403 for someone who manages none."""
    ctx = _list_context(session, user, notice=take_flash(request))
    if user.role != Role.admin and not ctx["workspaces"]:
        raise Forbidden("This page is for admins and workspace managers.")
    return render(request, "admin/workspaces.html", ctx)


@router.post("/admin/workspaces")
def create_workspace(request: Request, session: Db, name: str = Form(""), user: Principal = Depends(admin)):
    try:
        with savepoint(session):
            made = workspace_admin.create_workspace(session, name, actor_id=user.id)
    except DomainError as exc:
        return render(request, "admin/workspaces.html", _list_context(session, user, error=exc.message, name=name), status_code=exc.status_code)
    return RedirectResponse(f"/admin/workspaces/{made.id}", status_code=303)


def _detail_context(session: Session, user: Principal, workspace_id: int, **extra) -> dict:
    workspace = workspace_admin.get_workspace(session, workspace_id)
    targets = [w for w in workspaces.managed_workspaces(session, user.id, user.role) if w.id != workspace_id]
    return {
        "workspace": workspace, "members": workspace_admin.members(session, workspace_id),
        "projects": workspace_admin.projects_of(session, workspace_id), "targets": targets,
        "roles": [r.value for r in MemberRole], "users": [u.username for u in users_service.list_users(session)], **extra,
    }


@router.get("/admin/workspaces/{workspace_id}")
def workspace_page(request: Request, workspace_id: Id, session: Db, user: Principal = Depends(manager)):
    return render(request, "admin/workspace.html", _detail_context(session, user, workspace_id, notice=take_flash(request)))


def _done(request: Request, workspace_id: int, message: str) -> RedirectResponse:
    flash(request, message)
    return RedirectResponse(f"/admin/workspaces/{workspace_id}", status_code=303)


def _change(request: Request, session: Session, user: Principal, workspace_id: int, change, message: str):
    """Make `change` (a function of the session) and go back to the workspace's page saying `message`;
    refused, the page again with the reason, and nothing changed."""
    try:
        with savepoint(session):
            change(session)
    except DomainError as exc:
        ctx = _detail_context(session, user, workspace_id, error=exc.message)
        return render(request, "admin/workspace.html", ctx, status_code=exc.status_code)
    return _done(request, workspace_id, message)


@router.post("/admin/workspaces/{workspace_id}")
def rename_workspace(request: Request, workspace_id: Id, session: Db, name: str = Form(""), user: Principal = Depends(admin)):
    change = lambda s: workspace_admin.rename_workspace(s, workspace_id, name, actor_id=user.id)  # noqa: E731
    return _change(request, session, user, workspace_id, change, "Renamed.")


@router.post("/admin/workspaces/{workspace_id}/delete")
def delete_workspace(request: Request, workspace_id: Id, session: Db, user: Principal = Depends(admin)):
    change = lambda s: workspace_admin.delete_workspace(s, workspace_id, actor_id=user.id)  # noqa: E731
    response = _change(request, session, user, workspace_id, change, "Workspace deleted.")
    return RedirectResponse("/admin/workspaces", status_code=303) if response.status_code == 303 else response


@router.post("/admin/workspaces/{workspace_id}/members")
def add_member(request: Request, workspace_id: Id, session: Db, username: str = Form(""), role: str = Form("annotator"),
               project_id: str = Form(""), user: Principal = Depends(manager)):
    """Give a user a role in the whole workspace, or (`project_id`) in one of its projects."""
    def change(s: Session) -> None:
        project = form_id(project_id, "project_id")
        target = users_service.user_by_name(s, username.strip())
        workspace_admin.add_member(s, workspace_id, target.id, role, project_id=project, actor_id=user.id)

    return _change(request, session, user, workspace_id, change, f"{username.strip()} is {role}{' of that project' if project_id else ''}.")


@router.post("/admin/workspaces/{workspace_id}/members/{member_id}/delete")
def remove_member(request: Request, workspace_id: Id, member_id: Id, session: Db, user: Principal = Depends(manager)):
    change = lambda s: workspace_admin.remove_member(s, workspace_id, member_id, actor_id=user.id)  # noqa: E731
    return _change(request, session, user, workspace_id, change, "Membership removed.")


@router.post("/projects/{project_id}/workspace")
def move_project(request: Request, project_id: Id, session: Db, workspace_id: str = Form(""), user: Principal = Depends(manager)):
    """Move the project to another workspace the user manages; its own memberships go along."""
    workspace_id = form_id(workspace_id, "workspace_id")
    if workspace_id is None:
        raise Invalid("Choose the workspace the project goes to.", field="workspace_id")
    check_target(session, user, workspace_id)
    workspace_admin.move_project(session, project_id, workspace_id, actor_id=user.id)
    return _done(request, workspace_id, "Project moved here.")
