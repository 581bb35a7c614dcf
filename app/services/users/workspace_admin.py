"""Managing workspaces: create, rename, delete, members in and out, projects moved between them; every
change is an audit event."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.errors import Conflict, Invalid, NotFound
from app.models import MemberRole, Project, User, Workspace, WorkspaceMember
from app.services.users.audit import record
from app.services.users.workspaces import default_workspace_id

MAX_NAME = 200


@dataclass(frozen=True)
class WorkspaceView:
    id: int
    name: str
    is_default: bool
    projects: int
    members: int


@dataclass(frozen=True)
class MemberView:
    id: int
    user_id: int
    username: str
    role: str
    project_id: int | None
    project_name: str | None  # None: workspace-wide


def _name(name: str) -> str:
    name = (name or "").strip()
    if not 1 <= len(name) <= MAX_NAME:
        raise Invalid(f"A workspace's name has 1 to {MAX_NAME} characters.", field="name")
    return name


def _free(session: Session, name: str, but: int | None = None) -> None:
    taken = session.scalar(sa.select(Workspace.id).where(Workspace.name == name, Workspace.id != (but or 0)))
    if taken is not None:
        raise Conflict(f"A workspace named '{name}' already exists.", field="name")


def get_workspace(session: Session, workspace_id: int) -> Workspace:
    workspace = session.get(Workspace, workspace_id)
    if workspace is None:
        raise NotFound(f"No workspace with id {workspace_id}.")
    return workspace


def list_workspaces(session: Session, only: list[int] | None = None) -> list[WorkspaceView]:
    """Every workspace (or those in `only`) with its counts of projects and memberships, by name."""
    projects = sa.select(sa.func.count()).where(Project.workspace_id == Workspace.id).scalar_subquery()
    members = sa.select(sa.func.count()).where(WorkspaceMember.workspace_id == Workspace.id).scalar_subquery()
    query = sa.select(Workspace.id, Workspace.name, Workspace.is_default, projects, members).order_by(Workspace.name)
    if only is not None:
        query = query.where(Workspace.id.in_(only))
    return [WorkspaceView(*row) for row in session.execute(query)]


def create_workspace(session: Session, name: str, *, actor_id: int | None = None) -> Workspace:
    name = _name(name)
    _free(session, name)
    workspace = Workspace(name=name)
    session.add(workspace)
    session.flush()
    record(session, "workspace.create", actor_id=actor_id, target=f"workspace:{workspace.id}", name=name)
    return workspace


def rename_workspace(session: Session, workspace_id: int, name: str, *, actor_id: int | None = None) -> Workspace:
    workspace = get_workspace(session, workspace_id)
    name = _name(name)
    _free(session, name, but=workspace.id)
    if name != workspace.name:
        record(session, "workspace.rename", actor_id=actor_id, target=f"workspace:{workspace.id}",
               before={"name": workspace.name}, after={"name": name})
        workspace.name = name
        session.flush()
    return workspace


def delete_workspace(session: Session, workspace_id: int, *, actor_id: int | None = None) -> None:
    """Delete an empty workspace (its memberships go with it); the default one stays."""
    workspace = get_workspace(session, workspace_id)
    if workspace.is_default:
        raise Conflict("The default workspace cannot be deleted: projects made without a workspace go there.")
    held = session.scalar(sa.select(sa.func.count()).where(Project.workspace_id == workspace.id))
    if held:
        raise Conflict(f"The workspace '{workspace.name}' still holds {held} project(s): move or delete them first.")
    record(session, "workspace.delete", actor_id=actor_id, target=f"workspace:{workspace.id}", name=workspace.name)
    session.delete(workspace)
    session.flush()


def members(session: Session, workspace_id: int) -> list[MemberView]:
    m = WorkspaceMember
    rows = session.execute(
        sa.select(m.id, m.user_id, User.username, m.role, m.project_id, Project.name)
        .join(User, User.id == m.user_id)
        .outerjoin(Project, Project.id == m.project_id)
        .where(m.workspace_id == workspace_id)
        .order_by(User.username, m.project_id.nulls_first(), m.id)
    )
    return [MemberView(*row) for row in rows]


def _role(role: str) -> MemberRole:
    try:
        return MemberRole(role)
    except ValueError:
        raise Invalid(f"Unknown member role '{role}': annotator, reviewer or manager.", field="role") from None


def add_member(session: Session, workspace_id: int, user_id: int, role: str, *, project_id: int | None = None,
               actor_id: int | None = None) -> WorkspaceMember:
    """Give the user `role` in the workspace, or in one of its projects; an existing membership of the
    same reach takes the new role."""
    workspace, role_ = get_workspace(session, workspace_id), _role(role)
    if session.get(User, user_id) is None:
        raise NotFound("No such user.")
    if project_id is not None:
        project = session.get(Project, project_id)
        if project is None or project.workspace_id != workspace.id:
            raise NotFound(f"No project with id {project_id} in this workspace.")
    m = WorkspaceMember
    row = session.scalar(sa.select(m).where(m.workspace_id == workspace.id, m.user_id == user_id,
                                            m.project_id.is_(None) if project_id is None else m.project_id == project_id))
    before = None if row is None else row.role
    if row is None:
        row = WorkspaceMember(workspace_id=workspace.id, user_id=user_id, project_id=project_id, role=role_.value)
        session.add(row)
    row.role = role_.value
    session.flush()
    if before != role_.value:
        record(session, "workspace.member", actor_id=actor_id, target=f"workspace:{workspace.id}", user=user_id,
               project=project_id, before={"role": before}, after={"role": role_.value})
    return row


def remove_member(session: Session, workspace_id: int, member_id: int, *, actor_id: int | None = None) -> None:
    row = session.get(WorkspaceMember, member_id)
    if row is None or row.workspace_id != workspace_id:
        raise NotFound(f"No membership with id {member_id} in this workspace.")
    record(session, "workspace.member", actor_id=actor_id, target=f"workspace:{workspace_id}", user=row.user_id,
           project=row.project_id, before={"role": row.role}, after={"role": None})
    session.delete(row)
    session.flush()


def move_project(session: Session, project_id: int, workspace_id: int, *, actor_id: int | None = None) -> None:
    """Put the project in another workspace; its own (per-project) memberships go along with it."""
    project = session.get(Project, project_id)
    if project is None:
        raise NotFound(f"No project with id {project_id}.")
    target = get_workspace(session, workspace_id)
    if project.workspace_id == target.id:
        return
    before = project.workspace_id
    session.execute(sa.update(WorkspaceMember).where(WorkspaceMember.project_id == project.id).values(workspace_id=target.id))
    project.workspace_id = target.id
    session.flush()
    record(session, "project.workspace", actor_id=actor_id, target=f"project:{project.id}",
           before={"workspace": before}, after={"workspace": target.id})


def join(session: Session, user: User, workspace_id: int | None, role: str | None, *, actor_id: int | None = None) -> None:
    """A new user's first membership: in `workspace_id` with `role` (default: their global role), or, with
    no workspace named, the default workspace with their global role (a global admin needs none)."""
    if workspace_id is None and user.role not in (MemberRole.annotator, MemberRole.reviewer):
        return
    role = role or (user.role if user.role in (MemberRole.annotator, MemberRole.reviewer) else MemberRole.manager.value)
    add_member(session, workspace_id or default_workspace_id(session), user.id, role, actor_id=actor_id)


def follow_role(session: Session, user: User, old_role: str, *, actor_id: int | None = None) -> None:
    """A changed global role carries along the default workspace's membership that held the old one
    (so that, on a one-team server, promoting an annotator to reviewer lets them review, as before);
    a global admin made annotator or reviewer joins the default workspace with that role."""
    if user.role not in (MemberRole.annotator, MemberRole.reviewer):
        return
    m, default = WorkspaceMember, default_workspace_id(session)
    if old_role not in (MemberRole.annotator, MemberRole.reviewer):
        if session.scalar(sa.select(m.id).where(m.user_id == user.id)) is None:
            add_member(session, default, user.id, user.role, actor_id=actor_id)
        return
    moved = session.execute(
        sa.update(m)
        .where(m.user_id == user.id, m.project_id.is_(None), m.role == old_role, m.workspace_id == default)
        .values(role=user.role)
        .returning(m.id)
    ).first()
    if moved is not None:
        record(session, "workspace.member", actor_id=actor_id, target=f"workspace:{default}", user=user.id, project=None,
               before={"role": old_role}, after={"role": user.role})


def projects_of(session: Session, workspace_id: int) -> list[tuple[int, str]]:
    """The workspace's projects, (id, name) by name."""
    rows = session.execute(sa.select(Project.id, Project.name).where(Project.workspace_id == workspace_id).order_by(Project.name))
    return [(pid, name) for pid, name in rows]
