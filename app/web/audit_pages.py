"""The audit log, for admins: the page (/admin/audit) and the API (/api/v1/audit), with the same filters."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel

from app.errors import Invalid
from app.models import Role
from app.services.users import audit_log
from app.web.deps import Db, Principal, api_role, page_role
from app.web.limits import ApiRouter
from app.web.templating import render

pages = APIRouter(prefix="/admin")
router = ApiRouter(tags=["audit"])


def _moment(text: str, field: str, *, end: bool) -> datetime | None:
    """An ISO date or date-time; a bare date as `until` means the end of that day."""
    text = text.strip()
    if not text:
        return None
    try:
        if len(text) == 10:
            day = datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
            return day + timedelta(days=1) if end else day
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise Invalid(f"{field}: '{text}' is not a date (YYYY-MM-DD) or a date-time (ISO 8601).", field=field) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def audit_filter(
    action: Annotated[str, Query(max_length=64, description="Action prefix, e.g. `user.` or `token.create`")] = "",
    actor: Annotated[str, Query(max_length=150, description="The acting user's username")] = "",
    target: Annotated[str, Query(max_length=200, description="Exact target (`project:3`) or a kind (`project:`)")] = "",
    since: Annotated[str, Query(max_length=40, description="From this date or date-time (inclusive, UTC if no zone)")] = "",
    until: Annotated[str, Query(max_length=40, description="Up to this date (inclusive) or date-time (exclusive)")] = "",
) -> audit_log.AuditFilter:
    for field, value in (("action", action), ("actor", actor), ("target", target)):
        if "\x00" in value:  # the page's filter too (the API's query is refused before this)
            raise Invalid(f"{field}: holds a NUL character, which no stored text holds.", field=field)
    return audit_log.AuditFilter(action=action.strip(), actor=actor.strip(), target=target.strip(),
                                 since=_moment(since, "since", end=False), until=_moment(until, "until", end=True))


Filter = Annotated[audit_log.AuditFilter, Depends(audit_filter)]
Before = Annotated[int | None, Query(ge=1, le=2**63 - 1, description="Keyset: events with ids below this (the previous page's `next`)")]


class AuditEventOut(BaseModel):
    id: int
    at: datetime
    actor: str | None
    actor_id: int | None
    action: str
    target: str
    ip: str | None
    detail: dict[str, Any]


class AuditPage(BaseModel):
    events: list[AuditEventOut]
    next: int | None  # pass as `before` for the next (older) page; null on the last


@pages.get("/audit")
def audit_page(request: Request, session: Db, f: Filter, before: Before = None, user: Principal = Depends(page_role(Role.admin))):
    rows, next_id = audit_log.events(session, f, before_id=before)
    query = {k: v for k, v in request.query_params.items() if k != "before" and v}
    return render(request, "admin/audit.html", {"events": rows, "next": next_id, "query": query})


@router.get("/audit", response_model=AuditPage)
def audit_api(session: Db, f: Filter, before: Before = None, limit: Annotated[int, Query(ge=1, le=1000)] = audit_log.PAGE,
              user: Principal = Depends(api_role(Role.admin))):
    """The audit log, newest first: who changed users, roles, tokens, project and stage settings,
    prompt versions, splits and exports (and logins, imports, reviews), when, from which address, and
    the values before and after. Page with `before=next`."""
    rows, next_id = audit_log.events(session, f, before_id=before, limit=limit)
    return AuditPage(events=[AuditEventOut(**r) for r in rows], next=next_id)
