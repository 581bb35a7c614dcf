"""REST API for workspaces: create, rename and delete them (admin); their members, and moving a
project between them (admin, or the workspace's manager)."""

from __future__ import annotations

from fastapi import Depends, Response

from app.errors import Forbidden, NotFound
from app.models import Role
from app.services.users import users as users_service, workspace_admin, workspaces
from app.web.deps import Db, Id, LiveProject, Principal, api_role, api_user
from app.web.limits import ApiRouter
from app.web.schemas import MemberIn, MemberOut, ProjectMove, WorkspaceIn, WorkspaceOut

router = ApiRouter(tags=["workspaces"], dependencies=[LiveProject])
admin = api_role(Role.admin, scoped=False)  # workspaces themselves: global admins only
manager = api_role(Role.admin)  # what a workspace holds: also its manager (app.web.scope)


def _out(session, workspace_id: int) -> WorkspaceOut:
    return WorkspaceOut(**vars(workspace_admin.list_workspaces(session, [workspace_id])[0]))


@router.get("/workspaces", response_model=list[WorkspaceOut])
def list_workspaces(session: Db, user: Principal = Depends(api_user)):
    """The workspaces you manage (every one for a global admin), by name."""
    ids = [w.id for w in workspaces.managed_workspaces(session, user.id, user.role)]
    return [WorkspaceOut(**vars(w)) for w in workspace_admin.list_workspaces(session, ids)]


@router.post("/workspaces", status_code=201, response_model=WorkspaceOut)
def create_workspace(body: WorkspaceIn, session: Db, user: Principal = Depends(admin)):
    return _out(session, workspace_admin.create_workspace(session, body.name, actor_id=user.id).id)


@router.patch("/workspaces/{workspace_id}", response_model=WorkspaceOut)
def rename_workspace(workspace_id: Id, body: WorkspaceIn, session: Db, user: Principal = Depends(admin)):
    workspace_admin.rename_workspace(session, workspace_id, body.name, actor_id=user.id)
    return _out(session, workspace_id)


@router.delete("/workspaces/{workspace_id}", status_code=204, response_class=Response)
def delete_workspace(workspace_id: Id, session: Db, user: Principal = Depends(admin)) -> None:
    """Delete an empty workspace (not the default one); its memberships go with it."""
    workspace_admin.delete_workspace(session, workspace_id, actor_id=user.id)


@router.get("/workspaces/{workspace_id}/members", response_model=list[MemberOut])
def list_members(workspace_id: Id, session: Db, user: Principal = Depends(manager)):
    workspace_admin.get_workspace(session, workspace_id)
    return [MemberOut(id=m.id, user_id=m.user_id, username=m.username, role=m.role, project_id=m.project_id)
            for m in workspace_admin.members(session, workspace_id)]


@router.post("/workspaces/{workspace_id}/members", response_model=MemberOut)
def add_member(workspace_id: Id, body: MemberIn, session: Db, user: Principal = Depends(manager)):
    """Give a user (`user_id` or `username`) a role in the workspace, or in one of its projects; given
    again, the role changes."""
    if body.user_id is not None:
        target = users_service.get_user(session, body.user_id)
    elif body.username:
        target = users_service.user_by_name(session, body.username)
    else:
        raise NotFound("Name the user: `user_id` or `username`.")
    row = workspace_admin.add_member(session, workspace_id, target.id, body.role, project_id=body.project_id, actor_id=user.id)
    return MemberOut(id=row.id, user_id=target.id, username=target.username, role=row.role, project_id=row.project_id)


@router.delete("/workspaces/{workspace_id}/members/{member_id}", status_code=204, response_class=Response)
def remove_member(workspace_id: Id, member_id: Id, session: Db, user: Principal = Depends(manager)) -> None:
    workspace_admin.remove_member(session, workspace_id, member_id, actor_id=user.id)


@router.put("/projects/{project_id}/workspace", status_code=204, response_class=Response)
def move_project(project_id: Id, body: ProjectMove, session: Db, user: Principal = Depends(manager)) -> None:
    """Move the project to another workspace (you manage both); its own memberships go along."""
    check_target(session, user, body.workspace_id)
    workspace_admin.move_project(session, project_id, body.workspace_id, actor_id=user.id)


def check_target(session, user: Principal, workspace_id: int) -> None:
    """The workspace a project moves to: one the user manages (404 when they see nothing of it)."""
    if user.role == Role.admin:
        return
    rank = workspaces.ranks(session, user.id, {"workspace_id": workspace_id}).get("workspace_id")
    if rank is None:
        raise NotFound(f"No workspace with id {workspace_id}.")
    if rank < workspaces.MANAGER:
        raise Forbidden("You can move a project only to a workspace you manage.")
