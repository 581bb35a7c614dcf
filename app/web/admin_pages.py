"""Admin pages: users, their roles and API tokens; background jobs."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse

from app.db import transaction
from app.errors import DomainError
from app.models import Role
from app.services import jobs_view
from app.services import users as users_service
from app.web.deps import Principal, csrf_protect, page_role
from app.web.templating import is_htmx, render

router = APIRouter(prefix="/admin", dependencies=[Depends(csrf_protect)])
admin_only = page_role(Role.admin)


def _users_context(request: Request, **extra) -> dict:
    with transaction(request.app.state.sessions) as session:
        users = users_service.list_users(session)
        tokens = users_service.list_tokens(session)
        names = {u.id: u.username for u in users}
        token_rows = [
            {"id": t.id, "name": t.name, "user": names.get(t.user_id, "?"), "created_at": t.created_at, "revoked_at": t.revoked_at}
            for t in tokens
        ]
        user_rows = [
            {"id": u.id, "username": u.username, "role": u.role, "is_active": u.is_active, "created_at": u.created_at}
            for u in users
        ]
    return {"users": user_rows, "tokens": token_rows, "roles": [r.value for r in Role], "form": {"username": "", "role": "annotator"}, **extra}


@router.get("/users")
def users_page(request: Request, user: Principal = Depends(admin_only)):
    return render(request, "admin/users.html", _users_context(request))


@router.post("/users")
def create_user(
    request: Request,
    username: str = Form(""),
    role: str = Form("annotator"),
    password: str = Form(""),
    user: Principal = Depends(admin_only),
):
    try:
        with transaction(request.app.state.sessions) as session:
            users_service.create_user(session, username.strip(), role, password, actor_id=user.id, must_change_password=True)
    except DomainError as exc:
        ctx = _users_context(request, error=exc.message)
        ctx["form"] = {"username": username, "role": role}
        return render(request, "admin/users.html", ctx, status_code=exc.status_code)
    return RedirectResponse("/admin/users", status_code=303)


@router.post("/users/{user_id}")
def update_user(
    request: Request,
    user_id: int,
    role: str = Form(...),
    is_active: str = Form("off"),
    user: Principal = Depends(admin_only),
):
    try:
        with transaction(request.app.state.sessions) as session:
            target = users_service.get_user(session, user_id)
            users_service.update_user(session, target, role=role, is_active=is_active == "on", actor_id=user.id)
    except DomainError as exc:
        return render(request, "admin/users.html", _users_context(request, error=exc.message), status_code=exc.status_code)
    return RedirectResponse("/admin/users", status_code=303)


@router.post("/users/{user_id}/tokens")
def create_token(request: Request, user_id: int, name: str = Form(""), user: Principal = Depends(admin_only)):
    with transaction(request.app.state.sessions) as session:
        target = users_service.get_user(session, user_id)
        _, plain = users_service.create_token(session, target, name.strip(), actor_id=user.id)
        owner = target.username
    # The token is shown once and never stored in plain text.
    return render(request, "admin/users.html", _users_context(request, new_token=plain, new_token_user=owner))


@router.post("/tokens/{token_id}/revoke")
def revoke_token(request: Request, token_id: int, user: Principal = Depends(admin_only)):
    with transaction(request.app.state.sessions) as session:
        actor = users_service.get_user(session, user.id)
        users_service.revoke_token(session, token_id, actor=actor)
    return RedirectResponse("/admin/users", status_code=303)


@router.get("/jobs")
def jobs_page(request: Request, user: Principal = Depends(admin_only)):
    """Background jobs: status, progress, error and duration; the table refreshes itself every 2 s."""
    with transaction(request.app.state.sessions) as session:
        ctx = {"jobs": jobs_view.recent_jobs(session), "counts": jobs_view.counts(session)}
    block = "jobs" if is_htmx(request) and request.headers.get("hx-target") == "jobs" else None
    return render(request, "admin/jobs.html", ctx, block=block)
