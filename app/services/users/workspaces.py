"""Workspaces and membership: who belongs to which team's projects, and in which role.

The policy (README "Workspaces"): a global admin sees and manages everything. Anyone else sees a
project only through a membership that covers it (workspace-wide, or that project); their rank in it
is the highest such membership (annotator < reviewer < manager). Whatever they do not see answers 404,
as a missing row does, so no name leaks. The global role stays a ceiling for annotating and reviewing
(a global annotator made a reviewer member still only annotates); managing a project's settings,
stages, imports, exports, splits, gold, drafts and leaks needs a manager membership that covers it.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.models import MemberRole, Project, Role, User, Workspace, WorkspaceMember

MANAGER = MemberRole.manager.rank
# A rank for someone who belongs to a workspace only through one of its projects: they see that the
# workspace exists (403, not 404, on its pages) and may do nothing there.
NO_RIGHTS = -1

_RANK_SQL = "CASE m.role WHEN 'annotator' THEN 0 WHEN 'reviewer' THEN 1 WHEN 'manager' THEN 2 END"


def member_sql(project: str, workspace: str, user: str = ":user") -> str:
    """An SQL condition: the user is a global admin, or a member covering the project (`project` and
    `workspace` are SQL expressions for its id and its workspace's). For statements that already run,
    so that the check costs no round trip of its own (the claim, the submit, the screen)."""
    return (
        f"(EXISTS (SELECT 1 FROM users mu WHERE mu.id = {user} AND mu.role = '{Role.admin}')"
        f" OR EXISTS (SELECT 1 FROM workspace_members m WHERE m.user_id = {user} AND m.workspace_id = {workspace}"
        f" AND (m.project_id IS NULL OR m.project_id = {project})))"
    )


def member_of_stage(stage: str = ":stage") -> str:
    """An SQL condition: the user (:user) may work in the stage (`stage`, an SQL expression for its id):
    its project is live (not archived) and within their workspaces."""
    return (
        "EXISTS (SELECT 1 FROM stages ms JOIN projects mp ON mp.id = ms.project_id"
        f" WHERE ms.id = {stage} AND mp.archived_at IS NULL AND {member_sql('mp.id', 'mp.workspace_id')})"
    )

# How each object a route can name leads to its project (`:v` is the id named).
_PROJECT_OF = {
    "project_id": "SELECT id FROM projects WHERE id = :v",
    "stage_id": "SELECT project_id FROM stages WHERE id = :v",
    "item_id": "SELECT project_id FROM items WHERE id = :v",
    "assignment_id": "SELECT s.project_id FROM assignments a JOIN stages s ON s.id = a.stage_id WHERE a.id = :v",
    "export_id": "SELECT project_id FROM exports WHERE id = :v",
    "prompt_id": "SELECT s.project_id FROM prompts pr JOIN stages s ON s.id = pr.stage_id WHERE pr.id = :v",
}
NAMED = (*_PROJECT_OF, "workspace_id")


def _rank_part(name: str) -> str:
    """One row (name, rank) for an object named `name` (bound as :v_name), none when it does not exist;
    rank NULL when the user sees nothing of it."""
    v = f":v_{name}"
    if name == "workspace_id":
        return (
            f"SELECT '{name}' AS name, coalesce("
            f"(SELECT max({_RANK_SQL}) FROM workspace_members m WHERE m.workspace_id = w.id AND m.user_id = :user AND m.project_id IS NULL),"
            f" (SELECT {NO_RIGHTS} FROM workspace_members m WHERE m.workspace_id = w.id AND m.user_id = :user LIMIT 1)) AS rank"
            f" FROM workspaces w WHERE w.id = {v}"
        )
    return (
        f"SELECT '{name}' AS name, (SELECT max({_RANK_SQL}) FROM workspace_members m"
        " WHERE m.user_id = :user AND m.workspace_id = p.workspace_id AND (m.project_id IS NULL OR m.project_id = p.id)) AS rank"
        f" FROM projects p WHERE p.id = ({_PROJECT_OF[name].replace(':v', v)})"
    )


def ranks(session: Session, user_id: int, named: dict[str, int]) -> dict[str, int | None]:
    """The user's rank (MemberRole.rank) in the project of each named object, or in the named
    workspace, in one statement; None where they see nothing of it. An object that does not exist
    is left out (the route answers its own 404)."""
    if not named:
        return {}
    sql = " UNION ALL ".join(_rank_part(name) for name in named)
    params = {"user": user_id, **{f"v_{name}": value for name, value in named.items()}}
    return {row.name: row.rank for row in session.execute(sa.text(sql), params)}


def default_workspace_id(session: Session) -> int:
    """The workspace that takes projects and users when none is named (one always exists)."""
    return session.scalar(sa.select(Workspace.id).where(Workspace.is_default))


def manages(session: Session, user: User, workspace_id: int) -> bool:
    """Whether `user` may manage the workspace: a global admin, or its manager workspace-wide."""
    if user.role == Role.admin:
        return True
    return bool(
        session.scalar(
            sa.select(WorkspaceMember.id).where(
                WorkspaceMember.workspace_id == workspace_id,
                WorkspaceMember.user_id == user.id,
                WorkspaceMember.project_id.is_(None),
                WorkspaceMember.role == MemberRole.manager,
            )
        )
    )


def visible_projects(user_id: int, role: str) -> sa.ColumnElement[bool] | None:
    """A condition on `Project` for the projects the user sees (None: every project, a global admin)."""
    if role == Role.admin:
        return None
    m = WorkspaceMember
    return sa.exists().where(
        m.user_id == user_id, m.workspace_id == Project.workspace_id, sa.or_(m.project_id.is_(None), m.project_id == Project.id)
    )


def managed_workspaces(session: Session, user_id: int, role: str) -> list[Workspace]:
    """The workspaces the user manages (every one for a global admin), by name."""
    query = sa.select(Workspace).order_by(Workspace.name)
    if role != Role.admin:
        m = WorkspaceMember
        query = query.where(
            sa.exists().where(m.workspace_id == Workspace.id, m.user_id == user_id, m.project_id.is_(None), m.role == MemberRole.manager)
        )
    return list(session.scalars(query))
