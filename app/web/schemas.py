"""Request and response models of the REST API (/api/v1): what its OpenAPI schema promises. The models the
client shares live in `vlcurate.models` (the light client distribution); the ones here need the server."""

from __future__ import annotations

from pydantic import BaseModel, Field

from app.models import Role
from app.services.projects import projects
from vlcurate.models import *  # noqa: F403  (the shared models, re-exported for the routes)
from vlcurate.models_workspaces import MemberRoleName
from vlcurate.models import __all__ as _shared

__all__ = ["FILE", "ProjectIn", "UserIn", *_shared]


class ProjectIn(BaseModel):
    name: str = Field(max_length=200)
    description: str = ""
    stages: list[projects.StageSpec] = Field(min_length=1)
    workspace_id: int | None = Field(None, ge=1, le=2**31 - 1, description="The workspace it goes in (default: the default workspace)")


class UserIn(BaseModel):
    username: str
    role: Role = Role.annotator
    password: str
    workspace_id: int | None = Field(None, ge=1, le=2**31 - 1, description="The workspace they join (default: the default workspace)")
    member_role: MemberRoleName | None = Field(None, description="Their role in that workspace (default: `role`; admins need none)")


FILE = {200: {"description": "The file", "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}}
