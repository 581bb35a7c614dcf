"""Request dependencies: the database, who is asking (session cookie or bearer token), roles, CSRF."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from fastapi import Depends, HTTPException, Request

from app.db import transaction
from app.models import Role, User
from app.security import new_csrf_token, same_token
from app.services import users as users_service


class LoginRequired(Exception):
    """Raised for anonymous page requests; answered with a redirect to the login page."""


@dataclass(frozen=True)
class Principal:
    id: int
    username: str
    role: Role
    must_change_password: bool = False

    def at_least(self, role: Role) -> bool:
        return self.role.rank >= role.rank

    @classmethod
    def of(cls, user: User) -> "Principal":
        return cls(user.id, user.username, Role(user.role), user.must_change_password)


def password_fingerprint(user: User) -> str:
    # Kept in the session cookie: changing the password ends every other session.
    return hashlib.sha256(user.password_hash.encode()).hexdigest()[:16]


def login_session(request: Request, user: User) -> None:
    request.session.clear()
    request.session.update({"uid": user.id, "pw": password_fingerprint(user), "csrf": new_csrf_token()})


def _session_user(request: Request) -> Principal | None:
    uid = request.session.get("uid")
    if uid is None:
        return None
    with transaction(request.app.state.sessions) as session:
        user = session.get(User, uid)
        if user is None or not user.is_active or request.session.get("pw") != password_fingerprint(user):
            request.session.clear()
            return None
        return Principal.of(user)


def page_user(request: Request) -> Principal:
    user = _session_user(request)
    if user is None:
        raise LoginRequired()
    request.state.user = user
    return user


def page_user_or_none(request: Request) -> Principal | None:
    user = _session_user(request)
    request.state.user = user
    return user


def page_role(role: Role):
    def dependency(user: Principal = Depends(page_user)) -> Principal:
        if not user.at_least(role):
            raise HTTPException(403, f"This page is for {role.value}s.")
        return user

    return dependency


def api_user(request: Request) -> Principal:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise HTTPException(401, "Bearer token required.", headers={"WWW-Authenticate": "Bearer"})
    with transaction(request.app.state.sessions) as session:
        user = users_service.user_for_token(session, token.strip())
        if user is None:
            raise HTTPException(401, "Invalid or revoked token.", headers={"WWW-Authenticate": "Bearer"})
        return Principal.of(user)


def api_role(role: Role):
    def dependency(user: Principal = Depends(api_user)) -> Principal:
        if not user.at_least(role):
            raise HTTPException(403, f"This needs the {role.value} role.")
        return user

    return dependency


def csrf_token(request: Request) -> str:
    token = request.session.get("csrf")
    if not token:
        token = new_csrf_token()
        request.session["csrf"] = token
    return token


async def csrf_protect(request: Request) -> None:
    """Every state-changing page request carries the session's token, as a form field or header."""
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return
    sent = request.headers.get("x-csrf-token")
    if not sent and request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):
        form = await request.form()
        sent = form.get("csrf_token")
    if not same_token(request.session.get("csrf"), sent if isinstance(sent, str) else None):
        raise HTTPException(403, "The form has expired or was not sent from this site (CSRF check failed). Reload the page and try again.")


def client_ip(request: Request) -> str | None:
    return request.client.host if request.client else None


# Fields of annotation forms that are not part of the answer.
FORM_META = {"csrf_token", "idempotency_key", "opened_at", "start", "comment"}


async def form_values(request: Request) -> tuple[dict, dict]:
    """An annotation form's answer fields (a field given several times becomes a list) and its meta fields."""
    form = await request.form()
    fields = {k: form.getlist(k) for k in form.keys() if k not in FORM_META}
    flat = {k: (v[0] if len(v) == 1 else v) for k, v in fields.items()}
    return flat, {k: form.get(k) for k in FORM_META}
