"""REST API under /api/v1 (bearer tokens). Everything the CLI does is possible here."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, File, Query, Request, Response, UploadFile
from fastapi.responses import FileResponse
from pydantic import BaseModel, Field

from app.db import transaction
from app.errors import Invalid, NotFound
from app.models import Export, Role
from app.services import agreement, annotation, export, projects, splits
from app.services import users as users_service
from app.web.deps import Principal, api_role, api_user
from app.web.uploads import run_upload_import

router = APIRouter(prefix="/api/v1", tags=["api"])
admin = api_role(Role.admin)


class ProjectIn(BaseModel):
    name: str
    description: str = ""
    stages: list[projects.StageSpec] = Field(min_length=1)


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
    seconds_spent: float | None = Field(default=None, ge=0)


class SubmitOut(BaseModel):
    annotation_id: int
    revision: int
    replayed: bool
    item_status: str


class DraftIn(BaseModel):
    payload: dict[str, Any]


class UserIn(BaseModel):
    username: str
    role: Role = Role.annotator
    password: str


class TokenIn(BaseModel):
    name: str = ""


def _tx(request: Request):
    return transaction(request.app.state.sessions)


@router.get("/projects")
def list_projects(request: Request, user: Principal = Depends(api_user)) -> list[dict[str, Any]]:
    with _tx(request) as session:
        return [p.as_dict() for p in projects.progress(session)]


@router.get("/projects/{project_id}")
def get_project(request: Request, project_id: int, user: Principal = Depends(api_user)) -> dict[str, Any]:
    with _tx(request) as session:
        return projects.project_progress(session, project_id).as_dict()


@router.post("/projects", status_code=201)
def create_project(request: Request, body: ProjectIn, user: Principal = Depends(admin)) -> dict[str, Any]:
    with _tx(request) as session:
        project = projects.create_project(session, body.name, body.stages, description=body.description, actor_id=user.id)
        project_id = project.id
    with _tx(request) as session:
        return projects.project_progress(session, project_id).as_dict()


@router.post("/projects/{project_id}/items", status_code=201)
async def import_items(
    request: Request,
    project_id: int,
    file: UploadFile = File(..., description="JSONL, JSON array or CSV of records"),
    images: UploadFile | None = File(None, description="zip of the images the records name"),
    user: Principal = Depends(admin),
) -> dict[str, int]:
    result = await run_upload_import(request, project_id, file, images, user.id)
    return {"created": result.created, "images": result.images, "new_images": result.new_images}


@router.post("/stages/{stage_id}/claim", response_model=ClaimOut, responses={204: {"description": "Nothing left for you"}})
def claim(request: Request, stage_id: int, user: Principal = Depends(api_user)):
    with _tx(request) as session:
        claimed = annotation.claim(session, stage_id, user.id)
        if claimed is None:
            return Response(status_code=204)
        screen = annotation.open_assignment(session, claimed.assignment_id, user.id)
        return ClaimOut(
            assignment_id=claimed.assignment_id,
            item_id=claimed.item_id,
            lease_until=claimed.lease_until.isoformat(),
            data=screen.item.data,
            assets=screen.item.assets,
            results=screen.results,
            suggestions=[s.__dict__ for s in screen.suggestions.values()],
        )


@router.post("/assignments/{assignment_id}/submit", response_model=SubmitOut)
def submit(request: Request, assignment_id: int, body: SubmitIn, user: Principal = Depends(api_user)):
    with _tx(request) as session:
        result = annotation.submit(
            session, assignment_id, user.id, body.payload, body.idempotency_key, seconds_spent=body.seconds_spent
        )
    return SubmitOut(**result.__dict__)


@router.post("/assignments/{assignment_id}/skip", status_code=204)
def skip(request: Request, assignment_id: int, user: Principal = Depends(api_user)):
    with _tx(request) as session:
        annotation.give_back(session, assignment_id, user.id, skip=True)
    return Response(status_code=204)


@router.post("/assignments/{assignment_id}/release", status_code=204)
def release(request: Request, assignment_id: int, user: Principal = Depends(api_user)):
    with _tx(request) as session:
        annotation.give_back(session, assignment_id, user.id, skip=False)
    return Response(status_code=204)


@router.put("/assignments/{assignment_id}/draft", status_code=204)
def save_draft(request: Request, assignment_id: int, body: DraftIn, user: Principal = Depends(api_user)):
    with _tx(request) as session:
        annotation.save_draft(session, assignment_id, user.id, body.payload)
    return Response(status_code=204)


@router.get("/stages/{stage_id}/agreement")
def stage_agreement(
    request: Request,
    stage_id: int,
    samples: int = Query(1000, ge=0, le=10_000),
    seed: int = 0,
    stored: bool = Query(False, description="The newest report the worker stored (what the dashboard shows) instead of computing now"),
    user: Principal = Depends(api_role(Role.reviewer)),
) -> dict[str, Any]:
    """Inter-annotator agreement of the stage: every facet's figures with bootstrap 95% intervals, per annotator pair.
    Computed now, or with `stored=true` the worker's newest report with its time (that one includes the
    soft-matched Jaccard, which needs the worker's text model)."""
    with _tx(request) as session:
        if stored:
            row = agreement.latest(session, stage_id)
            if row is None:
                projects.get_stage(session, stage_id)  # 404 for an unknown stage
                raise NotFound("No stored agreement report for this stage yet: recompute it on the dashboard.")
            return {**row.report, "computed_at": row.created_at.isoformat()}
        return agreement.stage_report(session, stage_id, samples=samples, seed=seed)


@router.get("/projects/{project_id}/splits")
def list_splits(request: Request, project_id: int, user: Principal = Depends(admin)) -> list[dict[str, Any]]:
    """The project's split definition versions, newest first, with their counts."""
    with _tx(request) as session:
        projects.get_project(session, project_id)
        return [{"version": d.version, "config": d.config, "counts": d.ordered_counts, "created_at": d.created_at.isoformat()}
                for d in splits.definitions(session, project_id)]


@router.post("/projects/{project_id}/splits", status_code=201)
def save_splits(request: Request, project_id: int, config: dict[str, Any] = Body(...), user: Principal = Depends(admin)) -> dict[str, Any]:
    """Save a new split version: {"ratios"|"counts": {...}, "seed", "rest", "held_out": {"field", "values", "split"}, "stratify"}."""
    with _tx(request) as session:
        d = splits.save_definition(session, project_id, config, actor_id=user.id)
        return {"version": d.version, "config": d.config, "counts": d.ordered_counts}


class ExportIn(BaseModel):
    format: str
    version: int | None = Field(default=None, description="Split version; default the newest")
    splits: bool = Field(default=True, description="False: one split, 'all'")
    target: str | None = Field(default=None, description="s3://bucket/prefix; default this server (download from /api/v1/exports/{id}/files/...)")


def _export_out(row) -> dict[str, Any]:
    return {"id": row.id, "project_id": row.project_id, "format": row.format, "status": row.status, "done": row.done,
            "total": row.total, "error": row.error, "target": row.target if row.target.startswith("s3://") else None,
            "manifest": row.manifest}


@router.post("/projects/{project_id}/exports", status_code=202)
def start_export(request: Request, project_id: int, body: ExportIn, user: Principal = Depends(admin)) -> dict[str, Any]:
    """Queue an export on the worker; poll GET /api/v1/exports/{id}."""
    from app.worker import jobs

    if body.target and not body.target.startswith("s3://"):
        raise Invalid("target is s3://bucket/prefix, or absent for this server.")
    with _tx(request) as session:
        row = export.create_export(session, project_id, body.format, settings=request.app.state.settings, version=body.version,
                                   use_splits=body.splits, target=body.target, actor_id=user.id)
        out = _export_out(row)
    jobs.defer_export(request.app.state.settings, out["id"])
    return out


@router.get("/exports/{export_id}")
def get_export(request: Request, export_id: int, user: Principal = Depends(admin)) -> dict[str, Any]:
    with _tx(request) as session:
        row = session.get(Export, export_id)
        if row is None:
            raise NotFound(f"No export with id {export_id}.")
        return _export_out(row)


@router.get("/exports/{export_id}/files/{path:path}")
def export_file(request: Request, export_id: int, path: str, user: Principal = Depends(admin)):
    """A file of a finished export, by its path in the manifest."""
    with _tx(request) as session:
        target = export.find_file(session, export_id, path)
    return FileResponse(target, filename=path.rsplit("/", 1)[-1])


@router.get("/users")
def list_users(request: Request, user: Principal = Depends(admin)) -> list[dict[str, Any]]:
    with _tx(request) as session:
        return [
            {"id": u.id, "username": u.username, "role": u.role, "is_active": u.is_active}
            for u in users_service.list_users(session)
        ]


@router.post("/users", status_code=201)
def create_user(request: Request, body: UserIn, user: Principal = Depends(admin)) -> dict[str, Any]:
    with _tx(request) as session:
        created = users_service.create_user(session, body.username, body.role.value, body.password, actor_id=user.id)
        return {"id": created.id, "username": created.username, "role": created.role}


@router.post("/users/{user_id}/tokens", status_code=201)
def create_token(request: Request, user_id: int, body: TokenIn, user: Principal = Depends(admin)) -> dict[str, Any]:
    with _tx(request) as session:
        target = users_service.get_user(session, user_id)
        token, plain = users_service.create_token(session, target, body.name, actor_id=user.id)
        return {"id": token.id, "token": plain}


@router.delete("/tokens/{token_id}", status_code=204)
def revoke_token(request: Request, token_id: int, user: Principal = Depends(api_user)):
    with _tx(request) as session:
        actor = users_service.get_user(session, user.id)
        users_service.revoke_token(session, token_id, actor=actor)
    return Response(status_code=204)
