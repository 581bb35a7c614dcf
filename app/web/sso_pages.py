"""Single sign-on pages: the redirect to the OpenID provider and the return from it (app.oidc checks
the answer, app.services.users.sso finds the user and syncs their roles)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse

from app import oidc
from app.services.users import sso
from app.services.users.audit import record
from app.web.auth_pages import login_context, safe_next
from app.web.deps import Db, client_ip, login_session
from app.web.templating import render

router = APIRouter()

PENDING = "oidc"  # the session cookie's entry that keeps one sign-in's state, nonce and PKCE verifier


def _settings(request: Request):
    settings = request.app.state.settings
    if not settings.oidc_issuer:
        raise HTTPException(404, "Single sign-on is not set up on this server.")
    return settings


def _redirect_uri(request: Request) -> str:
    """Where the provider sends the browser back: under VLCURATE_PUBLIC_URL when set (the address the
    provider has registered), else the address this request came to."""
    public = request.app.state.settings.public_url
    return f"{public.rstrip('/')}/login/sso/callback" if public else str(request.url_for("sso_callback"))


def _refused(request: Request, message: str, status: int):
    return render(request, "auth/login.html", login_context(request, "/", error=message), status_code=status)


@router.get("/login/sso")
def sso_start(request: Request, next: str = "/"):
    settings = _settings(request)
    try:
        url, pending = oidc.start(settings, _redirect_uri(request), safe_next(next))
    except oidc.SignInError as exc:
        return _refused(request, exc.message, 502)
    request.session[PENDING] = pending.as_dict()
    return RedirectResponse(url, status_code=303)


@router.get("/login/sso/callback", name="sso_callback")
def sso_callback(request: Request, session: Db):
    settings = _settings(request)
    pending = oidc.Pending.of(request.session.pop(PENDING, None))  # one use, whatever comes of it
    try:
        claims = oidc.finish(settings, pending, dict(request.query_params), _redirect_uri(request))
    except oidc.SignInError as exc:
        record(session, "login.sso_failed", ip=client_ip(request), reason=exc.message)
        return _refused(request, exc.message, 400)
    outcome = sso.sign_in(session, settings, claims, ip=client_ip(request))
    if outcome.user is None:
        return _refused(request, outcome.refused or sso.REFUSED, 403)
    login_session(request, session, outcome.user)
    return RedirectResponse(pending.next, status_code=303)
