"""Request and response models of the API's workspace calls: workspaces, their members, a project's
move between them; `vlcurate.models` re-exports them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

__all__ = ["MemberIn", "MemberOut", "ProjectMove", "WorkspaceIn", "WorkspaceOut"]

WorkspaceName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
MemberRoleName = Literal["annotator", "reviewer", "manager"]


class WorkspaceIn(BaseModel):
    name: WorkspaceName


class WorkspaceOut(BaseModel):
    id: int
    name: str
    is_default: bool = Field(description="Projects and users made without a workspace land here")
    projects: int = Field(description="How many projects it holds")
    members: int = Field(description="How many memberships it has (workspace-wide and per project)")


class MemberIn(BaseModel):
    """A user's role in the workspace, or in one of its projects (`project_id`); given again, the role changes."""

    user_id: int | None = Field(None, ge=1, le=2**31 - 1, description="The user, by id (or give `username`)")
    username: str | None = Field(None, max_length=64)
    role: MemberRoleName
    project_id: int | None = Field(None, ge=1, le=2**31 - 1, description="Only this project of the workspace (none: the whole workspace)")


class MemberOut(BaseModel):
    id: int
    user_id: int
    username: str
    role: MemberRoleName
    project_id: int | None = None


class ProjectMove(BaseModel):
    workspace_id: int = Field(ge=1, le=2**31 - 1, description="The workspace the project goes to")
