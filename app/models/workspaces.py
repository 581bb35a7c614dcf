"""Workspaces: the projects and members of one team on a shared server.

A member's role (annotator, reviewer, manager) holds in the whole workspace, or in one of its
projects when `project_id` is set. Global admins (users.role) manage workspaces and need no
membership. One workspace is the default: a project created without a workspace lands there
(the column's server default, `default_workspace_id()`), and an upgrade puts every existing
project and user into it.
"""

from datetime import datetime
from enum import StrEnum

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at


class MemberRole(StrEnum):
    annotator = "annotator"
    reviewer = "reviewer"
    manager = "manager"

    @property
    def rank(self) -> int:
        return ["annotator", "reviewer", "manager"].index(self.value)


class Workspace(Base):
    __tablename__ = "workspaces"
    __table_args__ = (sa.Index("workspaces_one_default", "is_default", unique=True, postgresql_where=sa.text("is_default")),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(200), unique=True)
    is_default: Mapped[bool] = mapped_column(server_default=sa.false())
    created_at: Mapped[datetime] = created_at()


class WorkspaceMember(Base):
    """One role of one user in a workspace (project_id NULL) or in one of its projects."""

    __tablename__ = "workspace_members"
    __table_args__ = (
        sa.CheckConstraint("role IN ('annotator', 'reviewer', 'manager')", name="member_role"),
        sa.Index(
            "workspace_members_workspace_wide",
            "workspace_id",
            "user_id",
            unique=True,
            postgresql_where=sa.text("project_id IS NULL"),
        ),
        sa.Index(
            "workspace_members_per_project",
            "workspace_id",
            "user_id",
            "project_id",
            unique=True,
            postgresql_where=sa.text("project_id IS NOT NULL"),
        ),
        sa.Index("workspace_members_user", "user_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(sa.ForeignKey("workspaces.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"))
    project_id: Mapped[int | None] = mapped_column(sa.ForeignKey("projects.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(sa.String(16))
    # Given by single sign-on from the user's groups (app.services.users.sso), which replaces these rows at
    # every sign-in; rows added by hand (false) are never touched by it.
    sso_managed: Mapped[bool] = mapped_column(server_default=sa.false())
    created_at: Mapped[datetime] = created_at()
