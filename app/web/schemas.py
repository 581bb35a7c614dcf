"""Request and response models of the REST API (/api/v1): what its OpenAPI schema promises. The models the
client shares live in `vlcurate.models` (the light client distribution); the ones here need the server."""

from __future__ import annotations

from pydantic import BaseModel, Field

from app.models import Role
from app.services.projects import projects
from vlcurate.models import *  # noqa: F403  (the shared models, re-exported for the routes)
from vlcurate.models import __all__ as _shared

__all__ = ["FILE", "ProjectIn", "UserIn", *_shared]


class ProjectIn(BaseModel):
    name: str = Field(max_length=200)
    description: str = ""
    stages: list[projects.StageSpec] = Field(min_length=1)


class UserIn(BaseModel):
    username: str
    role: Role = Role.annotator
    password: str


FILE = {200: {"description": "The file", "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}}
