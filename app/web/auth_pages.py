"""Login, logout and password change pages."""

from __future__ import annotations

import math

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse

from app import oidc
from app.services.users import login_throttle, users as users_service
from app.services.users.audit import record
from app.web.deps import (
    Db,
    Principal,
    client_ip,
    csrf_protect,
    login_session,
    logout_session,
    page_user,
    page_user_or_none,
)
from app.web.templating import render

router = APIRouter(dependencies=[Depends(csrf_protect)])


def safe_next(target: str | None) -> str:
    """Only same-site paths, so the login page cannot be used as an open redirect."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/"


def login_context(request: Request, next: str, **extra) -> dict:
    """The login page's context: where to go after, the sign-on button's name, whether the password form shows."""
    settings = request.app.state.settings
    sso = oidc.display_name(settings) if settings.oidc_issuer else None
    return {"next": safe_next(next), "username": "", "sso_name": sso, "passwords": settings.local_passwords, **extra}


PASSWORDS_OFF = "Password logins are turned off on this server: use single sign-on."


@router.get("/login")
def login_page(request: Request, next: str = "/", user: Principal | None = Depends(page_user_or_none)):
    if user is not None:
        return RedirectResponse(safe_next(next), status_code=303)
    return render(request, "auth/login.html", login_context(request, next))


@router.post("/login")
def login(request: Request, session: Db, username: str = Form(""), password: str = Form(""), next: str = Form("/")):
    if not request.app.state.settings.local_passwords:  # no password is even checked
        record(session, "login.refused", target=username.strip(), ip=client_ip(request), scope="passwords_off")
        return render(request, "auth/login.html", login_context(request, next, error=PASSWORDS_OFF), status_code=403)
    policy = login_throttle.Policy.of(request.app.state.settings)
    outcome = users_service.authenticate(session, username.strip(), password, ip=client_ip(request), policy=policy)
    if outcome.user is not None:
        login_session(request, session, outcome.user)
        return RedirectResponse("/account/password" if outcome.user.must_change_password else safe_next(next), status_code=303)
    ctx = login_context(request, next, username=username, error="Wrong username or password.")
    if outcome.refused is None:
        return render(request, "auth/login.html", ctx, status_code=401)
    wait = math.ceil(outcome.refused.seconds)
    ctx["error"] = _refusal(outcome.refused, wait, "login", "failed logins")
    return render(request, "auth/login.html", ctx, status_code=429, headers={"Retry-After": str(wait)})


def _refusal(refused: login_throttle.Refusal, wait: int, attempt: str, failures: str) -> str:
    if refused.scope == "busy":
        return f"Another {attempt} for this account from your address is being checked. Try again in {_duration(wait)}."
    return f"Too many {failures} {_SCOPES[refused.scope]}. Try again in {_duration(wait)}."


_SCOPES = {"account": "for this account from your address", "address": "from your address"}


def _duration(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    return f"{math.ceil(seconds / 60)} minutes"


@router.post("/logout")
def logout(request: Request, session: Db):
    logout_session(request, session)
    return RedirectResponse("/login", status_code=303)


@router.get("/account/password")
def password_page(request: Request, user: Principal = Depends(page_user)):
    return render(request, "auth/password.html", {})


@router.post("/account/password")
def change_password(
    request: Request,
    session: Db,
    current: str = Form(""),
    new: str = Form(""),
    confirm: str = Form(""),
    user: Principal = Depends(page_user),
):
    if not request.app.state.settings.local_passwords:
        return render(request, "auth/password.html", {"error": PASSWORDS_OFF}, status_code=403)
    account = users_service.get_user(session, user.id)
    policy = login_throttle.Policy.of(request.app.state.settings)
    outcome = users_service.change_own_password(session, account, current, new, confirm, ip=client_ip(request), policy=policy)
    if outcome.refused is not None:
        wait = math.ceil(outcome.refused.seconds)
        return render(request, "auth/password.html", {"error": _refusal(outcome.refused, wait, "password change", "wrong passwords")}, status_code=429,
                      headers={"Retry-After": str(wait)})
    if outcome.error is not None:
        return render(request, "auth/password.html", {"error": outcome.error}, status_code=422)
    login_session(request, session, account)  # the change ended every session of the account, this one too
    return RedirectResponse("/", status_code=303)
