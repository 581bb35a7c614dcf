"""REST API over a project's items: browse them, read one with its history, push records idempotently,
read the project's settings, stream its finished records, and fetch stored images."""

from __future__ import annotations

from typing import Literal

from fastapi import BackgroundTasks, Body, Depends, File, Form, HTTPException, Query, Request, Response, UploadFile
from fastapi.responses import StreamingResponse

from app.bias import arms
from app.datasets import get_workflow
from app.db import transaction
from app.exporters import formats_for, project_dataset
from app.models import Role
from app.services.annotation.pipeline import submitted_annotations
from app.services.exports import finals
from app.services.imports import items
from app.services.projects import projects
from app.services.review import review
from app.zipstream import zipped
from app.web.assets import CACHE, _lookup, storage_keys
from app.web.deps import BigId, Db, Id, LiveProject, Principal, api_role, api_user
from app.web.limits import ApiRouter
from app.web.schemas import FILE, CurrentAnnotation, HistoryEntry, ItemOut, ItemPage, ItemRow, ProjectSettings, RecordsOut, StageSettings
from app.web.uploads import run_upload_import

router = ApiRouter(tags=["items"], dependencies=[LiveProject])
admin = api_role(Role.admin)
reviewer = api_role(Role.reviewer)

IMAGE_PAGE = 1000  # images one request may ask for
ZIP = {200: {"description": "A zip (stored, not compressed) holding each image under its sha256", "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}}}}
JSON_LINES = {200: {"description": "One FinalRecord per line", "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}}


@router.get("/projects/{project_id}/items", response_model=ItemPage)
def list_items(
    project_id: Id,
    session: Db,
    stage: Id | None = Query(None, description="Items now in this stage"),
    status: str = Query("", max_length=20, description="active, review, done or discarded"),
    annotator: Id | None = Query(None, description="Items this user holds or held"),
    text: str = Query("", max_length=200, description="In the id or anywhere in the data"),
    after: BigId | None = Query(None, description="The page after this item id (the previous page's `next`)"),
    limit: int = Query(items.PAGE_SIZE, ge=1, le=1000),
    user: Principal = Depends(reviewer),
):
    """A page of the project's items in id order, as the items page filters them."""
    projects.get_project(session, project_id)
    f = items.ItemFilter.parse("" if stage is None else str(stage), status, "" if annotator is None else str(annotator), text)
    page = items.list_items(session, project_id, f, after=after, limit=limit)
    return ItemPage(items=[ItemRow(**row.__dict__) for row in page.rows], next=page.after, searched_to=page.searched_to)


@router.get("/items/{item_id}", response_model=ItemOut)
def get_item(item_id: BigId, session: Db, user: Principal = Depends(reviewer)):
    """One item with its history: every annotation revision, final record, suggestion and review action."""
    found = review.item_history(session, item_id)
    item = found.item
    return ItemOut(
        id=item.id, external_id=item.external_id, project_id=item.project_id, stage_id=item.stage_id, status=item.status,
        data=item.data, assets=item.assets or {}, results=found.results,
        annotations=[CurrentAnnotation(annotation_id=a.annotation_id, annotator=a.annotator, payload=a.payload,
                                       submitted_at=a.submitted_at.isoformat())
                     for a in (submitted_annotations(session, item.id, item.stage_id) if item.stage_id is not None else [])],
        history=[HistoryEntry(at=e.at.isoformat(), what=e.what, who=e.who, stage=e.stage, stage_id=e.stage_id, kind=e.kind,
                              payload=e.payload, detail=e.detail) for e in found.entries],
    )


@router.post("/projects/{project_id}/records", response_model=RecordsOut)
def push_records(
    request: Request,
    project_id: Id,
    session: Db,
    jobs_after: BackgroundTasks,
    file: UploadFile = File(..., description="JSONL, JSON array or CSV of records"),
    images: UploadFile | None = File(None, description="zip of the images the records name"),
    on_conflict: Literal["skip", "update"] = Form("skip", description="A record whose id the project has: left out, or made the item's new revision"),
    user: Principal = Depends(admin),
):
    """Import a batch of records, leaving out those whose id the project has already: pushing the same
    batch again changes nothing, and a push that stopped midway resumes by pushing everything again.
    With on_conflict=update, such a record replaces the item's record where it differs, as a new
    revision: the item's history keeps the record before (annotations are never touched)."""
    result = run_upload_import(request, session, project_id, file, images, user.id, jobs_after, skip_existing=True,
                               update_existing=on_conflict == "update")
    return RecordsOut(**result.__dict__)


@router.get("/projects/{project_id}/settings", response_model=ProjectSettings)
def project_settings(project_id: Id, session: Db, user: Principal = Depends(api_user)):
    """The project's dataset, image fields, export formats and every stage's settings (an annotator's
    without the keys that draw arms, probes and gold items: app.bias.arms.for_annotators)."""
    project = projects.get_project(session, project_id)
    shown = (lambda config: config) if user.at_least(Role.reviewer) else arms.for_annotators
    dataset = project_dataset(session, project_id)
    return ProjectSettings(
        id=project.id, name=project.name, description=project.description or "", dataset=dataset.name,
        image_fields=list(dataset.image_fields), formats=formats_for(dataset),
        stages=[
            StageSettings(id=s.id, name=s.name, workflow=s.workflow, position=s.position, overlap=s.overlap, lease_seconds=s.lease_seconds,
                          sample_size=s.sample_size, sample_seed=s.sample_seed, guidelines=s.guidelines, config=shown(s.config),
                          suggestion_kinds=list(get_workflow(s.workflow).suggestion_kinds))
            for s in projects.stages_of(session, project_id)
        ],
    )


@router.get("/projects/{project_id}/finals", response_class=StreamingResponse, responses=JSON_LINES)
def stream_finals(
    request: Request,
    project_id: Id,
    session: Db,
    split: str | None = Query(None, max_length=100, description="One split of the newest (or `version`) split definition; default every finished item"),
    version: Id | None = Query(None, description="Split definition version; default the newest"),
    user: Principal = Depends(admin),
):
    """Finished records as the published export writes them, one JSON object per line (a FinalRecord),
    streamed in import order without an export job."""
    definition = finals.check_split(session, project_id, split, version)
    definition_id = definition.id if definition is not None else None
    sessions = request.app.state.sessions

    def lines():
        # Its own transaction: the request's has ended by the time the body streams.
        with transaction(sessions) as s:
            chosen = s.get(type(definition), definition_id) if definition_id is not None else None
            yield from finals.final_lines(s, project_id, split, chosen)

    return StreamingResponse(lines(), media_type="application/x-ndjson")


@router.get("/images/{sha256}", response_class=Response, responses=FILE)
def image(request: Request, sha256: str, session: Db, user: Principal = Depends(api_user)):
    """A stored image's bytes, by its sha256 (as items and finals name them)."""
    asset = _lookup(session, sha256)
    try:
        data = request.app.state.storage.get(asset.storage_key)
    except KeyError:
        raise HTTPException(404, "The image is not in storage.") from None
    return Response(data, media_type=asset.mime, headers={"ETag": f'"{sha256}"', "Cache-Control": CACHE})


@router.post("/images/batch", response_class=StreamingResponse, responses=ZIP)
def image_batch(
    request: Request,
    session: Db,
    sha256: list[str] = Body(..., embed=True, min_length=1, max_length=IMAGE_PAGE, description="The images' sha256"),
    user: Principal = Depends(api_user),
):
    """Up to 1,000 stored images in one answer, a zip streamed as the storage reads them: a client
    pulling finals with images asks for a page at a time instead of one request an image (404
    naming the images the server does not hold, before anything is sent)."""
    return StreamingResponse(zipped(request.app.state.storage, storage_keys(session, sha256)), media_type="application/zip")
