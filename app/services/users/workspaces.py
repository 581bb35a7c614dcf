"""Workspaces and membership: who belongs to which team's projects, and in which role."""

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.models import MemberRole, Role, User, Workspace, WorkspaceMember


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
