"""Request and response models of the REST API (/api/v1): what its OpenAPI schema promises."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.models import Role
from app.services import projects


class ProjectIn(BaseModel):
    name: str = Field(max_length=200)
    description: str = ""
    stages: list[projects.StageSpec] = Field(min_length=1)


class StageCounts(BaseModel):
    active: int = Field(description="Open for annotation in this stage")
    review: int = Field(description="Waiting for review")
    finished: int = Field(description="Passed this stage (final record written)")
    discarded: int
    total: int
    annotations: int


class StageOut(BaseModel):
    id: int
    name: str
    workflow: str
    position: int
    overlap: int
    sample_size: int | None = Field(description="Overlap only on a random sample of this many items")
    counts: StageCounts
    percent: int


class ProjectOut(BaseModel):
    """A project with its stages and their progress counts."""

    id: int
    name: str
    description: str
    items: int
    done: int
    discarded: int
    stages: list[StageOut]


class ImportOut(BaseModel):
    created: int = Field(description="Items created")
    images: int = Field(description="Images the records name")
    new_images: int = Field(description="Images not stored before")


class ClaimOut(BaseModel):
    assignment_id: int
    item_id: int
    lease_until: str
    data: dict[str, Any]
    assets: dict[str, str]
    results: dict[str, dict[str, Any]] = Field(description="Earlier stages' final records, by workflow name")
    suggestions: list[dict[str, Any]]


class SubmitIn(BaseModel):
    payload: dict[str, Any]
    idempotency_key: str = Field(min_length=1, max_length=100)
    seconds_spent: float | None = Field(default=None, ge=0, allow_inf_nan=False)


class SubmitOut(BaseModel):
    annotation_id: int
    revision: int
    replayed: bool = Field(description="True when this idempotency key was submitted before: nothing new was stored")
    item_status: str


class DraftIn(BaseModel):
    payload: dict[str, Any]


class StageRef(BaseModel):
    id: int
    name: str
    workflow: str


class AgreementReport(BaseModel):
    """A stage's agreement figures. Facets and per-annotator figures depend on the workflow, so their
    insides are open dictionaries; a future top-level field passes through."""

    model_config = ConfigDict(extra="allow")

    stage: StageRef
    items: int = Field(description="Items with two or more annotators")
    annotators: list[str]
    samples: int = Field(description="Bootstrap samples of the 95% intervals")
    seed: int
    facets: dict[str, dict[str, Any]] = Field(description="Per facet: kind, metrics with estimate/low/high, pairs, ...")
    per_annotator: dict[str, dict[str, Any]]
    computed_at: str | None = Field(default=None, description="When the worker stored it (stored reports only)")


class SplitVersionOut(BaseModel):
    version: int
    config: dict[str, Any]
    counts: dict[str, int] = Field(description="Items per split, in the order exports write them")


class SplitVersionListed(SplitVersionOut):
    created_at: str


class ExportIn(BaseModel):
    format: str
    version: int | None = Field(default=None, ge=1, le=2**31 - 1, description="Split version; default the newest")
    splits: bool = Field(default=True, description="False: one split, 'all'")
    target: str | None = Field(default=None, description="s3://bucket/prefix; default this server (download from /api/v1/exports/{id}/files/...)")


class ExportOut(BaseModel):
    id: int
    project_id: int
    format: str
    status: str
    done: int
    total: int
    error: str | None
    target: str | None = Field(description="The s3:// target; null for this server")
    manifest: dict[str, Any] | None = Field(description="Counts, split config and sha256 of every file, once done")


class UserIn(BaseModel):
    username: str
    role: Role = Role.annotator
    password: str


class UserCreated(BaseModel):
    id: int
    username: str
    role: str


class UserOut(UserCreated):
    is_active: bool


class TokenIn(BaseModel):
    name: str = Field(default="", max_length=100)


class TokenOut(BaseModel):
    id: int
    token: str = Field(description="Shown once; only its hash is stored")


FILE = {200: {"description": "The file", "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}}
