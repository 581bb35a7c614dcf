"""Work logs, for a workspace's managers and admins: the page (/workspaces/{id}/worklog), its CSV and
Parquet downloads, and the same through the API (/api/v1/workspaces/{id}/worklog), with the same
filters. Anyone else gets 404, as for a workspace that does not exist."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Annotated
from zoneinfo import ZoneInfo

import pyarrow as pa
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse
from vlcurate.models import WorkLog, WorkLogRow

from app.db import transaction
from app.errors import Invalid
from app.exporters.tables import csv_chunks, parquet_chunks
from app.services.quality import worklog
from app.web.assets import attachment
from app.web.deps import Db, Id, Principal, api_user, page_user
from app.web.limits import ApiRouter
from app.web.templating import render

pages = APIRouter()
router = ApiRouter(tags=["worklog"])
DEFAULT_DAYS = 30  # with no dates given: the last 30 days, today included
PARQUET = "application/vnd.apache.parquet"
SCHEMA = pa.schema([
    ("day", pa.date32()), ("annotator", pa.string()), ("project_id", pa.int64()), ("project", pa.string()), ("items", pa.int64()),
    ("answers", pa.int64()), ("active_hours", pa.float64()), ("wall_hours", pa.float64()), ("gold_answers", pa.int64()),
    ("gold_correct", pa.int64()), ("gold_accuracy", pa.float64()),
])
FILES = {
    200: {"description": "The rows as CSV or Parquet", "content": {"text/csv": {"schema": {"type": "string"}},
                                                                    PARQUET: {"schema": {"type": "string", "format": "binary"}}}}
}


def _day(text: str, field: str) -> date | None:
    text = text.strip()
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise Invalid(f"{field}: '{text}' is not a date (YYYY-MM-DD).", field=field) from None


def worklog_filter(
    request: Request,
    start: Annotated[str, Query(max_length=10, description="First day (YYYY-MM-DD, in the log's time zone)")] = "",
    end: Annotated[str, Query(max_length=10, description="Last day, included")] = "",
    annotator: Annotated[str, Query(max_length=64, description="Only this annotator's (username)")] = "",
    project: Annotated[int | None, Query(ge=1, le=2**31 - 1, description="Only this project's")] = None,
) -> worklog.WorkLogFilter:
    """The filter; with neither date given, the last DEFAULT_DAYS days (today in the log's time zone included)."""
    tz = request.app.state.settings.worklog_timezone
    first, last = _day(start, "start"), _day(end, "end")
    if first is None and last is None:
        last = datetime.now(ZoneInfo(tz)).date()
        first = last - timedelta(days=DEFAULT_DAYS - 1)
    if first is not None and last is not None and last < first:
        raise Invalid(f"end ({last}) is before start ({first}).", field="end")
    if any(not c.isprintable() for c in annotator):
        raise Invalid("annotator: a username holds no control characters.", field="annotator")
    return worklog.WorkLogFilter(timezone=tz, start=first, end=last, annotator=annotator.strip(), project_id=project)


Filter = Annotated[worklog.WorkLogFilter, Depends(worklog_filter)]


def _query(f: worklog.WorkLogFilter) -> dict[str, str]:
    """The filter as the page's links carry it (dates resolved, so that a download is the page's rows)."""
    query = {"start": f.start.isoformat() if f.start else "", "end": f.end.isoformat() if f.end else "", "annotator": f.annotator,
             "project": str(f.project_id or "")}
    return {k: v for k, v in query.items() if v}


@pages.get("/worklog")
def worklog_index(request: Request, session: Db, user: Principal = Depends(page_user)):
    """The workspaces whose work log the user may read."""
    return render(request, "workspaces/worklog_index.html", {"workspaces": worklog.managed(session, user)})


@pages.get("/workspaces/{workspace_id}/worklog")
def worklog_page(request: Request, workspace_id: Id, session: Db, f: Filter, user: Principal = Depends(page_user)):
    workspace = worklog.workspace_for(session, user, workspace_id)
    rows = list(worklog.rows(session, workspace_id, f))
    totals = worklog.totals(rows)
    return render(request, "workspaces/worklog.html", {"workspace": workspace, "rows": rows, "totals": totals, "f": f, "query": _query(f),
                                                       "projects": worklog.projects_of(session, workspace_id)})


def _stream(request: Request, workspace_id: int, f: worklog.WorkLogFilter, kind: str) -> StreamingResponse:
    sessions = request.app.state.sessions

    def chunks():
        # Its own transaction: the request's has ended by the time the body streams.
        with transaction(sessions) as s:
            rows = (r.as_dict() for r in worklog.rows(s, workspace_id, f))
            yield from csv_chunks(worklog.COLUMNS, rows) if kind == "csv" else parquet_chunks(SCHEMA, rows)

    name = f"workspace-{workspace_id}-worklog-{f.start or 'start'}-{f.end or 'end'}.{kind}"
    media = "text/csv; charset=utf-8" if kind == "csv" else PARQUET
    return StreamingResponse(chunks(), media_type=media, headers={"Content-Disposition": attachment(name)})


@pages.get("/workspaces/{workspace_id}/worklog.{kind}")
def worklog_file(request: Request, workspace_id: Id, kind: str, session: Db, f: Filter, user: Principal = Depends(page_user)):
    worklog.workspace_for(session, user, workspace_id)
    return _stream(request, workspace_id, f, _kind(kind))


def _kind(kind: str) -> str:
    if kind not in ("csv", "parquet"):
        raise Invalid(f"The work log downloads as csv or parquet, not '{kind}'.", field="kind")
    return kind


@router.get("/workspaces/{workspace_id}/worklog", response_model=WorkLog)
def worklog_api(workspace_id: Id, session: Db, f: Filter, user: Principal = Depends(api_user)):
    """The workspace's work log: per day (in the server's work-log time zone), annotator and project,
    the items answered (first answers), every answer, active and wall hours, and gold answers with how
    many were right. Managers of the workspace and admins; anyone else gets 404. With neither date,
    the last 30 days."""
    worklog.workspace_for(session, user, workspace_id)
    rows = [WorkLogRow(**r.as_dict()) for r in worklog.rows(session, workspace_id, f)]
    return WorkLog(workspace_id=workspace_id, timezone=f.timezone, start=f.start, end=f.end, rows=rows)


@router.get("/workspaces/{workspace_id}/worklog.{kind}", response_class=StreamingResponse, responses=FILES)
def worklog_api_file(request: Request, workspace_id: Id, kind: str, session: Db, f: Filter, user: Principal = Depends(api_user)):
    """The same rows as a file, streamed: `worklog.csv` or `worklog.parquet`."""
    worklog.workspace_for(session, user, workspace_id)
    return _stream(request, workspace_id, f, _kind(kind))
