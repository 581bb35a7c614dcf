"""Admin pages: users, their roles, one-time passwords, API tokens and recent failed logins; background jobs and worker liveness."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session

from app.errors import DomainError
from app.models import Role
from app.services.annotation import suggestion_failures
from app.services.projects import jobs_view
from app.services.users import login_throttle, users as users_service
from app.web.deps import Db, Id, Principal, csrf_protect, page_role, savepoint
from app.web.flash import secret_notice, take_secret_notice
from app.web.templating import render

router = APIRouter(prefix="/admin", dependencies=[Depends(csrf_protect)])
admin_only = page_role(Role.admin)

# -- what a POST tells the page it redirects to (app/web/flash.py): shown once, so a reload neither
# posts again nor shows a password or token twice; kept server-side, as it may hold one.


def _flash(request: Request, session: Session, kind: str, **data: Any) -> RedirectResponse:
    secret_notice(request, session, {"kind": kind, **data})
    return RedirectResponse("/admin/users", status_code=303)


def _users_context(session: Session, **extra) -> dict:
    users = users_service.list_users(session)
    names = {u.id: u.username for u in users}
    token_rows = [
        {"id": t.id, "name": t.name, "user": names.get(t.user_id, "?"), "created_at": t.created_at, "revoked_at": t.revoked_at}
        for t in users_service.list_tokens(session)
    ]
    failures = login_throttle.recent_failures(session)
    user_rows = [
        {"id": u.id, "username": u.username, "role": u.role, "is_active": u.is_active, "created_at": u.created_at,
         "must_change_password": u.must_change_password, "failures": failures.get(u.username)}
        for u in users
    ]
    return {"users": user_rows, "tokens": token_rows, "roles": [r.value for r in Role], "form": {"username": "", "role": "annotator"}, **extra}


@router.get("/users")
def users_page(request: Request, session: Db, user: Principal = Depends(admin_only)):
    notice = take_secret_notice(request, session)
    # A page showing a password or token once must not be kept by the browser's or a proxy's cache.
    headers = {"Cache-Control": "no-store"} if notice else None
    return render(request, "admin/users.html", _users_context(session, flash=notice), headers=headers)


@router.post("/users")
def create_user(
    request: Request,
    session: Db,
    username: str = Form(""),
    role: str = Form("annotator"),
    user: Principal = Depends(admin_only),
):
    try:
        with savepoint(session):
            _, password = users_service.add_user(session, username.strip(), role, actor_id=user.id)
    except DomainError as exc:
        ctx = _users_context(session, error=exc.message, form={"username": username, "role": role})
        return render(request, "admin/users.html", ctx, status_code=exc.status_code)
    return _flash(request, session, "user_added", username=username.strip(), role=role, password=password)


@router.post("/users/{user_id}")
def update_user(
    request: Request,
    user_id: Id,
    session: Db,
    role: str = Form(...),
    is_active: str = Form("off"),
    user: Principal = Depends(admin_only),
):
    try:
        with savepoint(session):
            target = users_service.get_user(session, user_id)
            users_service.update_user(session, target, role=role, is_active=is_active == "on", actor_id=user.id)
    except DomainError as exc:
        # The row shows what was chosen, not what is stored, next to the reason it was refused.
        ctx = _users_context(session, error=exc.message, edited={"id": user_id, "role": role, "is_active": is_active == "on"})
        return render(request, "admin/users.html", ctx, status_code=exc.status_code)
    return _flash(request, session, "user_saved", username=target.username, role=target.role, active=target.is_active)


@router.post("/users/{user_id}/password")
def reset_password(request: Request, user_id: Id, session: Db, user: Principal = Depends(admin_only)):
    if user_id == user.id:
        # A new password ends the admin's own session before the page could show it.
        ctx = _users_context(session, error="Change your own password on your account page (your name, top right).")
        return render(request, "admin/users.html", ctx, status_code=409)
    target = users_service.get_user(session, user_id)
    password = users_service.reset_password(session, target, actor_id=user.id)
    return _flash(request, session, "password_reset", username=target.username, password=password)


@router.post("/users/{user_id}/tokens")
def create_token(request: Request, user_id: Id, session: Db, name: str = Form(""), user: Principal = Depends(admin_only)):
    target = users_service.get_user(session, user_id)
    _, plain = users_service.create_token(session, target, name.strip(), actor_id=user.id)
    # Shown once, and never stored in plain text.
    return _flash(request, session, "token", username=target.username, token=plain)


@router.post("/tokens/{token_id}/revoke")
def revoke_token(request: Request, token_id: Id, session: Db, user: Principal = Depends(admin_only)):
    actor = users_service.get_user(session, user.id)
    users_service.revoke_token(session, token_id, actor=actor)
    return _flash(request, session, "token_revoked", id=token_id)


def _worker_context(session: Session, request: Request) -> dict:
    status = jobs_view.worker_status(session, request.app.state.settings.worker_stalled_seconds)
    return {"worker": status, "worker_ago": jobs_view.ago(status.seconds_since)}


@router.get("/jobs")
def jobs_page(request: Request, session: Db, user: Principal = Depends(admin_only)):
    """Background jobs: periodic tasks one line each, then one-off jobs with their project and stage,
    then the items a suggestion producer failed on; the section refreshes itself every 2 s and says
    when no worker is alive."""
    failed_total, failed = suggestion_failures.recent(session)
    ctx = {
        "jobs": jobs_view.recent_jobs(session),
        "failed_total": failed_total,
        "failed": failed,
        "periodic": jobs_view.periodic_jobs(session),
        "counts": jobs_view.counts(session),
        "show_alive": True,
        **_worker_context(session, request),
    }
    return render(request, "admin/jobs.html", ctx)


@router.get("/worker")
def worker_notice(request: Request, session: Db, user: Principal = Depends(page_role(Role.reviewer))):
    """The "no worker is running" notice that every admin and reviewer page loads (empty while one is)."""
    return render(request, "admin/_worker.html", _worker_context(session, request))
