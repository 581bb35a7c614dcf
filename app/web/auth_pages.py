"""Login, logout and password change pages."""

from __future__ import annotations

import math

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session

from app.errors import DomainError
from app.services import login_throttle
from app.services import users as users_service
from app.web.deps import (
    Db,
    Principal,
    client_ip,
    csrf_protect,
    login_session,
    page_user,
    page_user_or_none,
    savepoint,
)
from app.web.templating import render

router = APIRouter(dependencies=[Depends(csrf_protect)])


def safe_next(target: str | None) -> str:
    """Only same-site paths, so the login page cannot be used as an open redirect."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/"


@router.get("/login")
def login_page(request: Request, next: str = "/", user: Principal | None = Depends(page_user_or_none)):
    if user is not None:
        return RedirectResponse(safe_next(next), status_code=303)
    return render(request, "auth/login.html", {"next": safe_next(next), "username": ""})


@router.post("/login")
def login(request: Request, session: Db, username: str = Form(""), password: str = Form(""), next: str = Form("/")):
    policy = login_throttle.Policy.of(request.app.state.settings)
    outcome = users_service.authenticate(session, username.strip(), password, ip=client_ip(request), policy=policy)
    if outcome.user is not None:
        login_session(request, outcome.user)
        return RedirectResponse("/account/password" if outcome.user.must_change_password else safe_next(next), status_code=303)
    ctx = {"next": safe_next(next), "username": username, "error": "Wrong username or password."}
    if outcome.refused is None:
        return render(request, "auth/login.html", ctx, status_code=401)
    wait = math.ceil(outcome.refused.seconds)
    if outcome.refused.scope == "busy":
        ctx["error"] = f"Another login for this account from your address is being checked. Try again in {_duration(wait)}."
    else:
        ctx["error"] = f"Too many failed logins {_SCOPES[outcome.refused.scope]}. Try again in {_duration(wait)}."
    return render(request, "auth/login.html", ctx, status_code=429, headers={"Retry-After": str(wait)})


_SCOPES = {"account": "for this account from your address", "address": "from your address"}


def _duration(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    return f"{math.ceil(seconds / 60)} minutes"


@router.post("/logout")
def logout(request: Request):
    request.session.clear()
    return RedirectResponse("/login", status_code=303)


@router.get("/account/password")
def password_page(request: Request, user: Principal = Depends(page_user)):
    return render(request, "auth/password.html", {})


def _set_password(session: Session, account, current: str, new: str, confirm: str, actor_id: int) -> str | None:
    """Change the password; returns what is wrong, if anything."""
    from app.security import verify_password

    if not verify_password(account.password_hash, current):
        return "The current password is wrong."
    if new != confirm:
        return "The two new passwords differ."
    try:
        with savepoint(session):
            users_service.set_password(session, account, new, actor_id=actor_id)
    except DomainError as exc:
        return exc.message
    return None


@router.post("/account/password")
def change_password(
    request: Request,
    session: Db,
    current: str = Form(""),
    new: str = Form(""),
    confirm: str = Form(""),
    user: Principal = Depends(page_user),
):
    account = users_service.get_user(session, user.id)
    error = _set_password(session, account, current, new, confirm, user.id)
    if error is not None:
        return render(request, "auth/password.html", {"error": error}, status_code=422)
    login_session(request, account)
    return RedirectResponse("/", status_code=303)
