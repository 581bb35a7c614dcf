"""REST API for managing a project once it runs (admin): update its settings, delete (archive) it, hide records
by external id; and its annotations as a table (reviewer; annotators named only to an admin)."""

from __future__ import annotations

from fastapi import Depends, Query, Request, Response
from fastapi.responses import StreamingResponse

from app.db import transaction
from app.errors import NotFound
from app.models import Role
from app.services.projects import admin as project_admin, archive
from app.services.projects import projects
from app.services.review import annotation_rows
from app.web.api_items import project_settings
from app.web.deps import Db, Id, LiveProject, Principal, api_role
from app.web.limits import ApiRouter
from app.web.schemas import ProjectSettings, ProjectUpdate, RecordIds, RecordsHidden

router = ApiRouter(tags=["projects"], dependencies=[LiveProject])
admin = api_role(Role.admin)
ANNOTATION_LINES = {200: {"description": "One AnnotationRow per line", "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}}


@router.patch("/projects/{project_id}", response_model=ProjectSettings)
def update_project(project_id: Id, body: ProjectUpdate, session: Db, user: Principal = Depends(admin)):
    """Rename the project, change its description or its stages' names, lease times and guidelines;
    what the body leaves out stays. Each change is kept in the audit log with the value before."""
    project_admin.update_project(session, project_id, body, actor_id=user.id)
    return project_settings(project_id, session, user)


@router.delete("/projects/{project_id}", status_code=204, response_class=Response)
def delete_project(project_id: Id, session: Db, confirm: str = Query(..., max_length=200, description="The project's name"),
                   user: Principal = Depends(admin)) -> None:
    """Delete the project: it is archived, hidden from every list, queue, job and route (404 from then
    on), while its stages, items, annotations and exports stay in the database; `confirm` must be its
    name. An admin lists deleted projects with `GET /projects?archived=true` and restores one with
    `POST /projects/{id}/restore`; an audit event records each way."""
    archive.archive_project(session, project_id, confirm, actor_id=user.id)


@router.post("/projects/{project_id}/records/delete", response_model=RecordsHidden)
def delete_records(project_id: Id, body: RecordIds, session: Db, user: Principal = Depends(admin)):
    """Hide the items with these external ids: discarded (out of the queues, finals and exports), the
    reason in each one's history; their annotations are kept. Hiding them again changes nothing; an id
    the project lacks refuses the call (422 naming it), hiding nothing."""
    done = project_admin.hide_records(session, project_id, body.ids, body.reason, actor_id=user.id)
    return RecordsHidden(hidden=done.hidden, already=done.already)


@router.get("/projects/{project_id}/annotations", response_class=StreamingResponse, responses=ANNOTATION_LINES)
def annotations(request: Request, project_id: Id, session: Db, stage: Id | None = Query(None, description="Only this stage's"),
                user: Principal = Depends(api_role(Role.reviewer))):
    """Every submitted annotation revision of the project, one JSON object a line (AnnotationRow), in
    the order they came: annotator (username for an admin, else a stable pseudonym), answer, times,
    active seconds, the suggestions shown with their outcome, the review decision."""
    from app.main import secret_key

    projects.get_project(session, project_id)
    if stage is not None and projects.get_stage(session, stage).project_id != project_id:
        raise NotFound(f"Project {project_id} has no stage {stage}.")
    sessions, names, secret = request.app.state.sessions, user.role == Role.admin, secret_key(request.app.state.settings)

    def lines():
        # Its own transaction: the request's has ended by the time the body streams.
        with transaction(sessions) as s:
            yield from annotation_rows.annotation_lines(s, project_id, stage, names=names, secret=secret)

    return StreamingResponse(lines(), media_type="application/x-ndjson")
