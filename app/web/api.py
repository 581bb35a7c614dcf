"""REST API under /api/v1 (bearer tokens). Everything the CLI does is possible here."""

from __future__ import annotations

from typing import Any

from fastapi import BackgroundTasks, Body, Depends, File, HTTPException, Query, Request, Response, UploadFile
from fastapi.responses import FileResponse

from app.db import transaction
from app.errors import NotFound
from app.models import Export, Role
from app.services.annotation import annotation, drafts
from app.services.exports import export, splits, targets
from app.services.projects import archive, projects
from app.services.review import agreement
from app.services.users import users as users_service, workspaces
from app.web.deps import ApiTurn, BigId, Db, Id, LiveProject, Principal, api_role, api_user, token_user
from app.web.limits import ApiRouter
from app.web.schemas import (
    FILE,
    AgreementReport,
    ClaimOut,
    DraftIn,
    ExportIn,
    ExportOut,
    ImportOut,
    ProjectIn,
    ProjectOut,
    SplitVersionListed,
    SplitVersionOut,
    SubmitIn,
    SubmitOut,
    TokenIn,
    TokenOut,
    UserCreated,
    UserIn,
    UserOut,
)
from app.web.uploads import run_upload_import

router = ApiRouter(tags=["api"])
admin = api_role(Role.admin)


@router.get("/projects", response_model=list[ProjectOut])
def list_projects(session: Db, archived: bool = Query(False, description="The deleted (archived) projects instead (admin)"),
                  user: Principal = Depends(api_user)):
    """The live projects you see (all of them for a global admin), with their progress; with
    `archived=true` (admin), the deleted ones, which can be restored."""
    if archived and not user.at_least(Role.admin):
        raise HTTPException(403, "This needs the admin role.")
    return [p.as_dict() for p in projects.progress(session, archived=archived, visible=workspaces.visible_projects(user.id, user.role))]


@router.post("/projects/{project_id}/restore", response_model=ProjectOut)
def restore_project(project_id: Id, session: Db, user: Principal = Depends(admin)):
    """Bring a deleted (archived) project back with everything it held; an audit event records it."""
    archive.restore_project(session, project_id, actor_id=user.id)
    return projects.project_progress(session, project_id).as_dict()


@router.get("/projects/{project_id}", response_model=ProjectOut, dependencies=[LiveProject])
def get_project(project_id: Id, session: Db, user: Principal = Depends(api_user)):
    return projects.project_progress(session, project_id).as_dict()


@router.post("/projects", status_code=201, response_model=ProjectOut)
def create_project(body: ProjectIn, session: Db, user: Principal = Depends(admin)):
    project = projects.create_project(session, body.name, body.stages, description=body.description, actor_id=user.id,
                                      workspace_id=body.workspace_id)
    return projects.project_progress(session, project.id).as_dict()


@router.post("/projects/{project_id}/items", status_code=201, response_model=ImportOut, dependencies=[LiveProject])
def import_items(
    request: Request,
    project_id: Id,
    session: Db,
    jobs_after: BackgroundTasks,
    file: UploadFile = File(..., description="JSONL, JSON array or CSV of records"),
    images: UploadFile | None = File(None, description="zip of the images the records name"),
    user: Principal = Depends(admin),
):
    result = run_upload_import(request, session, project_id, file, images, user.id, jobs_after)
    return ImportOut(created=result.created, images=result.images, new_images=result.new_images)


# The annotation routes are the hot path: each opens its one transaction itself, the token's owner read
# in it (one threadpool hop a request, see deps.ApiTurn); answers encoded once (the claim's JSON by
# PostgreSQL, the submit's by pydantic-core); their schemas are still declared for OpenAPI.
@router.post("/stages/{stage_id}/claim", response_model=ClaimOut, responses={204: {"description": "Nothing left for you"}})
def claim(stage_id: Id, turn: ApiTurn):
    """Your live lease in the stage if you hold one (a client that lost the answer gets it back),
    else the next item for you; 204 when nothing is left."""
    with transaction(turn.sessions) as session:
        user = token_user(session, turn.token)
        claimed = annotation.resume_or_claim(session, stage_id, user.id, answer=True)
        body = None if claimed is None else annotation.claim_json(session, claimed, stage_id)
    return Response(status_code=204) if body is None else Response(body, media_type="application/json")


@router.post("/assignments/{assignment_id}/submit", response_model=SubmitOut)
def submit(assignment_id: BigId, body: SubmitIn, turn: ApiTurn):
    with transaction(turn.sessions) as session:
        user = token_user(session, turn.token)
        result = annotation.submit(session, assignment_id, user.id, body.payload, body.idempotency_key, seconds_spent=body.seconds_spent,
                                   active_seconds=body.active_seconds)
    out = SubmitOut(annotation_id=result.annotation_id, revision=result.revision, replayed=result.replayed, item_status=result.item_status)
    return Response(out.model_dump_json(), media_type="application/json")


@router.post("/assignments/{assignment_id}/skip", status_code=204, response_class=Response)
def skip(assignment_id: BigId, turn: ApiTurn) -> None:
    """Give the item back for later; 409 for an item of the stage's qualification quiz (answer it instead)."""
    with transaction(turn.sessions) as session:
        annotation.give_back(session, assignment_id, token_user(session, turn.token).id, skip=True)


@router.post("/assignments/{assignment_id}/release", status_code=204, response_class=Response)
def release(assignment_id: BigId, turn: ApiTurn) -> None:
    """Give the item back for good; 409 for an item of the stage's qualification quiz (answer it instead)."""
    with transaction(turn.sessions) as session:
        annotation.give_back(session, assignment_id, token_user(session, turn.token).id, skip=False)


@router.put("/assignments/{assignment_id}/draft", status_code=204, response_class=Response)
def save_draft(assignment_id: BigId, body: DraftIn, turn: ApiTurn) -> None:
    with transaction(turn.sessions) as session:
        drafts.save_draft(session, assignment_id, token_user(session, turn.token).id, body.payload, body.active_seconds)


@router.get("/stages/{stage_id}/agreement", response_model=AgreementReport, response_model_exclude_unset=True, dependencies=[LiveProject])
def stage_agreement(
    stage_id: Id,
    session: Db,
    samples: int = Query(1000, ge=0, le=10_000),
    seed: int = Query(0, ge=0, le=2**31 - 1),
    stored: bool = Query(False, description="The newest report the worker stored (what the dashboard shows) instead of computing now"),
    user: Principal = Depends(api_role(Role.reviewer)),
):
    """Inter-annotator agreement of the stage: every facet's figures with bootstrap 95% intervals, per annotator pair.
    Computed now, or with `stored=true` the worker's newest report with its time (that one includes the
    soft-matched Jaccard, which needs the worker's text model)."""
    if not stored:
        return AgreementReport(**agreement.stage_report(session, stage_id, samples=samples, seed=seed))
    row = agreement.latest(session, stage_id)
    if row is None:
        projects.get_stage(session, stage_id)  # 404 for an unknown stage
        raise NotFound("No stored agreement report for this stage yet: recompute it on the dashboard.")
    return AgreementReport.model_validate({**row.report, "computed_at": row.created_at.isoformat()})


@router.get("/projects/{project_id}/splits", response_model=list[SplitVersionListed], dependencies=[LiveProject])
def list_splits(project_id: Id, session: Db, user: Principal = Depends(admin)):
    """The project's split definition versions, newest first, with their counts."""
    projects.get_project(session, project_id)
    return [SplitVersionListed(version=d.version, config=d.config, counts=d.ordered_counts, created_at=d.created_at.isoformat())
            for d in splits.definitions(session, project_id)]


@router.post("/projects/{project_id}/splits", status_code=201, response_model=SplitVersionOut, dependencies=[LiveProject])
def save_splits(project_id: Id, session: Db, config: dict[str, Any] = Body(...), user: Principal = Depends(admin)):
    """Save a new split version: {"ratios"|"counts": {...}, "seed", "rest", "held_out": {"field", "values", "split"}, "stratify"}."""
    d = splits.save_definition(session, project_id, config, actor_id=user.id)
    return SplitVersionOut(version=d.version, config=d.config, counts=d.ordered_counts)


def _export_out(row: Export) -> ExportOut:
    return ExportOut(id=row.id, project_id=row.project_id, format=row.format, status=row.status, done=row.done,
                     total=row.total, error=row.error, target=row.target if row.target.startswith("s3://") else None,
                     manifest=row.manifest)


@router.post("/projects/{project_id}/exports", status_code=202, response_model=ExportOut, dependencies=[LiveProject])
def start_export(request: Request, project_id: Id, body: ExportIn, session: Db, jobs_after: BackgroundTasks,
                 user: Principal = Depends(admin)):
    """Queue an export on the worker; poll GET /api/v1/exports/{id}."""
    from app.worker import jobs

    settings = request.app.state.settings
    row = export.create_export(session, project_id, body.format, settings=settings, version=body.version,
                               use_splits=body.splits, target=targets.check_target(body.target), actor_id=user.id, gold=body.gold)
    # Queued once the export row is committed (background tasks run after the request's transaction):
    # the job queue has its own connection; should this fail, the reconcile job queues the export.
    jobs_after.add_task(jobs.defer_export, settings, row.id)
    return _export_out(row)


@router.get("/exports/{export_id}", response_model=ExportOut, dependencies=[LiveProject])
def get_export(export_id: Id, session: Db, user: Principal = Depends(admin)):
    row = session.get(Export, export_id)
    if row is None:
        raise NotFound(f"No export with id {export_id}.")
    return _export_out(row)


@router.get("/exports/{export_id}/files/{path:path}", response_class=FileResponse,
            responses={**FILE, 307: {"description": "Redirect to a short-lived presigned URL (S3 storage, VLCURATE_S3_PRESIGN_SECONDS)"}},
            dependencies=[LiveProject])
def export_file(request: Request, export_id: Id, path: str, session: Db, user: Principal = Depends(admin)):
    """A file of a finished export, by its path in the manifest (with the S3 storage backend: streamed
    from the bucket, or a redirect to a short-lived presigned URL)."""
    from app.web.export_pages import file_response

    return file_response(request, export.locate(session, export_id, path))


@router.get("/users", response_model=list[UserOut])
def list_users(session: Db, user: Principal = Depends(admin)):
    return [UserOut(id=u.id, username=u.username, role=u.role, is_active=u.is_active) for u in users_service.list_users(session)]


@router.post("/users", status_code=201, response_model=UserCreated)
def create_user(body: UserIn, session: Db, user: Principal = Depends(admin)):
    created = users_service.create_user(session, body.username, body.role.value, body.password, actor_id=user.id,
                                        workspace_id=body.workspace_id, member_role=body.member_role)
    return UserCreated(id=created.id, username=created.username, role=created.role)


@router.post("/users/{user_id}/tokens", status_code=201, response_model=TokenOut)
def create_token(user_id: Id, body: TokenIn, session: Db, user: Principal = Depends(admin)):
    target = users_service.get_user(session, user_id)
    token, plain = users_service.create_token(session, target, body.name, actor_id=user.id)
    return TokenOut(id=token.id, token=plain)


@router.delete("/tokens/{token_id}", status_code=204, response_class=Response)
def revoke_token(token_id: Id, session: Db, user: Principal = Depends(api_user)) -> None:
    actor = users_service.get_user(session, user.id)
    users_service.revoke_token(session, token_id, actor=actor)
