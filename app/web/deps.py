"""Request dependencies: the request's one database transaction, who is asking (session cookie or
bearer token), roles, the parsed form and CSRF."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from typing import Annotated

import annotated_types
import anyio
from fastapi import Depends, HTTPException, Request
from sqlalchemy.orm import Session, sessionmaker
from starlette.datastructures import FormData

from app.db import INT4_MAX, INT8_MAX, transaction
from app.errors import Invalid, NotFound, ascii_digits
from app.models import Role, User
from app.security import new_csrf_token, same_token
from app.services.projects import archive
from app.services.users import users as users_service, web_sessions
from app.web import scope
from app.web.addresses import client_address, parse_networks


async def _take_turn(request: Request) -> anyio.CapacityLimiter:
    """Take a turn at the database for this request: at most the pool's size of requests hold one at
    once in a process, the others wait on the event loop, so that no request opens a connection past
    the pool (one opened and closed per request under load). Returns the bound, to give the turn back to."""
    limiter = work_limiter(request.app)
    try:
        limiter.acquire_nowait()  # a free turn is taken without a trip round the event loop
    except anyio.WouldBlock:
        await limiter.acquire()
    return limiter


async def _turn(request: Request) -> sessionmaker[Session]:
    """The factory of the request's sessions, within its turn, given back when FastAPI closes the
    route's function scope: after the route has returned or raised, refused or not. A plain dependency
    with its exit on that stack, not a generator dependency (app/tuning.py)."""
    limiter = await _take_turn(request)
    exits = request.scope.get("fastapi_function_astack")
    if not isinstance(exits, AsyncExitStack):  # FastAPI's own key; a test serves a route through it
        limiter.release()
        raise RuntimeError("FastAPI's function-scoped exit stack (fastapi_function_astack) is missing from the request")
    exits.callback(limiter.release)
    return request.app.state.sessions


# The session factory, within the request's turn, for a route that opens its transaction itself in
# a `with transaction(sessions)` block: the page submit and skip, whose two commits (the answer, then
# the next screen) are two such blocks. The API's annotation routes take `ApiTurn`.
Sessions = Annotated[sessionmaker[Session], Depends(_turn)]


@dataclass(frozen=True, slots=True)
class BearerTurn:
    """An API request's turn at the database (`sessions`, as `Sessions` gives) and its bearer token."""

    sessions: sessionmaker[Session]
    token: str


async def bearer_turn(request: Request) -> BearerTurn:
    """One dependency for the API's annotation routes, which open their one transaction themselves and
    read the token's owner in it (one threadpool hop a request where `Db` and `api_user` take three;
    docs/performance.md): no token is a 401 before any turn is taken."""
    token = bearer_token(request)
    return BearerTurn(await _turn(request), token)


ApiTurn = Annotated[BearerTurn, Depends(bearer_turn)]


async def db(request: Request) -> AsyncIterator[Session]:
    """The request's unit of work: one session in one transaction, shared by authentication and the
    route, within the request's turn; committed when the route has returned, rolled back if it raised,
    then the turn given back. It carries the client's address, which every audit event written in it
    records."""
    limiter = await _take_turn(request)
    try:
        unit = transaction(request.app.state.sessions)
        session = unit.__enter__()  # no I/O: the first statement takes the connection
        session.info["client_ip"] = client_ip(request)
        failure: BaseException | None = None
        try:
            yield session
        except BaseException as exc:
            failure = exc
            raise
        finally:
            with anyio.CancelScope(shield=True):  # a cancelled request still gives its connection back
                await anyio.to_thread.run_sync(_end, unit, failure)
    finally:
        limiter.release()


def _end(unit, failure: BaseException | None) -> None:
    """Commit (or, after `failure`, roll back) and close the unit's session; a failed commit raises."""
    if failure is None:
        unit.__exit__(None, None, None)
    else:
        unit.__exit__(type(failure), failure, failure.__traceback__)


# scope="function": the commit runs when the route returns, before the response is sent, so a client
# that gets a 200 finds its data committed, and a failed commit answers 500 instead of a 200.
# (FastAPI's default "request" scope would commit after the response.) Always use this alias: a bare
# Depends(db) is a separate dependency and would open a second session.
Db = Annotated[Session, Depends(db, scope="function")]


def work_limiter(app) -> anyio.CapacityLimiter:
    """The bound on this process's requests at the database at once: the database pool's size."""
    limiter = getattr(app.state, "work_limiter", None)
    if limiter is None:
        limiter = app.state.work_limiter = anyio.CapacityLimiter(app.state.settings.db_pool_size)
    return limiter


# Ids in paths and queries are checked at the edge: a number no row can have (negative, or past the
# column's range) is answered 422 before any query runs, instead of PostgreSQL refusing the parameter
# with a 500; 0 is let through and finds nothing ("after item 0": from the start). Every integer a
# route takes has an upper bound, ids by these two types (a test walks the routes).
Id = Annotated[int, annotated_types.Interval(ge=0, le=INT4_MAX)]  # projects, stages, users, tokens, exports
BigId = Annotated[int, annotated_types.Interval(ge=0, le=INT8_MAX)]  # items, assignments, annotations


def live_project(request: Request, session: Db) -> None:
    """404, as for an unknown id, when an id in the path (a project's, stage's, item's, assignment's,
    export's or prompt's) belongs to an archived project: one statement, none when the path names no
    such id. Every router takes it but the annotation hot path's routes, whose statements leave archived
    projects out themselves (app.queue, app.services.annotation), and the restore routes."""
    ids = archive.archived_ids(request.path_params)
    if ids and (message := archive.archived_target(session, ids)):
        raise NotFound(message)


LiveProject = Depends(live_project)


def form_id(text: str, field: str) -> int | None:
    """An id typed in a form field (empty: none), held to the columns' range as `Id` is."""
    text = text.strip()
    if not text:
        return None
    if not ascii_digits(text) or int(text) > INT4_MAX:
        raise Invalid(f"The field '{field}' takes an id (a whole number), not '{text[:40]}'.", field=field)
    return int(text)


@contextmanager
def savepoint(session: Session) -> Iterator[Session]:
    """A write that may fail with a domain error: on failure only its own work is undone, so the
    page that shows the error can still read in the request's transaction."""
    with session.begin_nested():
        yield session


class LoginRequired(Exception):
    """Raised for anonymous page requests; answered with a redirect to the login page."""

    target = "/login?next={path}"


class PasswordChangeRequired(LoginRequired):
    """Raised for pages asked with a one-time password still in use: the password page comes first."""

    target = "/account/password"


# What a user with a one-time password may still reach.
PASSWORD_CHANGE_PATHS = frozenset({"/account/password", "/logout"})


@dataclass(frozen=True)
class Principal:
    id: int
    username: str
    role: Role
    must_change_password: bool = False

    def at_least(self, role: Role) -> bool:
        return self.role.rank >= role.rank

    @classmethod
    def of(cls, user) -> "Principal":
        """From anything with the user's id, username, role and must_change_password (a row, a `User`)."""
        return cls(user.id, user.username, Role(user.role), user.must_change_password)


SESSION_KEY = "sid"  # the cookie's entry that names the session's row (app.services.users.web_sessions)


def login_session(request: Request, session: Session, user: User) -> None:
    """Start a new session for `user` (a new key and CSRF token: nothing from before the login is kept)."""
    key = web_sessions.start(session, user.id, request.app.state.settings.session_max_age_seconds)
    request.session.clear()
    request.session.update({SESSION_KEY: key, "csrf": new_csrf_token()})


def logout_session(request: Request, session: Session) -> None:
    web_sessions.end(session, request.session.get(SESSION_KEY))
    request.session.clear()


def _session_user(request: Request, session: Session) -> Principal | None:
    """The session's user, if the session is live (not ended, not expired) and they are active: one
    read by primary key (see web_sessions.owner)."""
    key = request.session.get(SESSION_KEY)
    if key is None:
        return None
    owner = web_sessions.owner(session, key)
    if owner is None:
        request.session.clear()
        return None
    return Principal.of(owner)


def signed_in(request: Request, session: Session) -> Principal:
    """The session's user (else a redirect to the login page), the workspace scope not yet checked:
    for the annotation posts, whose statements check membership themselves (app.web.scope)."""
    user = _session_user(request, session)
    if user is None:
        raise LoginRequired()
    request.state.user = user
    if user.must_change_password and request.url.path not in PASSWORD_CHANGE_PATHS:
        raise PasswordChangeRequired()
    return user


def own_assignment_user(request: Request, session: Db) -> Principal:
    """The session's user, for the routes of their own assignments, whose one statement checks the
    workspace as it reads the assignment (app.services.annotation): no read of the scope of its own."""
    return signed_in(request, session)


def page_user(request: Request, session: Db) -> Principal:
    """The session's user, if what the path names is within their workspaces (else a 404)."""
    user = signed_in(request, session)
    scope.check(request, session, user)
    return user


def page_user_or_none(request: Request, session: Db) -> Principal | None:
    user = _session_user(request, session)
    request.state.user = user
    return user


def _requiring(role: Role, who, refusal: str, scoped: bool = True):
    """A dependency: the user `who` finds, if `role`'s routes are open to them where the path points
    (their global role, or their rank in its workspace: app.web.scope.allows); not `scoped`, the
    global role alone (what managing workspaces themselves needs)."""

    def dependency(request: Request, user: Principal = Depends(who)) -> Principal:
        if not (scope.allows(request, user, role) if scoped else user.at_least(role)):
            raise HTTPException(403, refusal)
        return user

    return dependency


def page_role(role: Role, *, scoped: bool = True):
    return _requiring(role, page_user, f"This page is for {role.value}s.", scoped)


def bearer_token(request: Request) -> str:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise HTTPException(401, "Bearer token required.", headers={"WWW-Authenticate": "Bearer"})
    return token.strip()


def token_user(session: Session, token: str) -> Principal:
    """Who the token speaks for (read on every request, see users.token_owner), or a 401."""
    owner = users_service.token_owner(session, token)
    if owner is None:
        raise HTTPException(401, "Invalid or revoked token.", headers={"WWW-Authenticate": "Bearer"})
    return Principal.of(owner)


def api_user(request: Request, session: Db) -> Principal:
    """The token's user, if what the path names is within their workspaces (else a 404)."""
    user = token_user(session, bearer_token(request))
    scope.check(request, session, user)
    return user


def api_role(role: Role, *, scoped: bool = True):
    return _requiring(role, api_user, f"This needs the {role.value} role.", scoped)


def csrf_token(request: Request) -> str:
    token = request.session.get("csrf")
    if not token:
        token = new_csrf_token()
        request.session["csrf"] = token
    return token


def _is_form(request: Request) -> bool:
    return request.headers.get("content-type", "").startswith(("application/x-www-form-urlencoded", "multipart/form-data"))


async def form(request: Request) -> FormData:
    """The posted form, parsed once per request (Starlette keeps it), so that handlers can be plain functions."""
    return await request.form() if _is_form(request) else FormData()


Posted = Annotated[FormData, Depends(form)]


async def csrf_protect(request: Request) -> None:
    """Every state-changing page request carries the session's token, as a form field or header; and
    its form fields hold no NUL character, which PostgreSQL cannot store (it would answer a 500)."""
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return
    posted = await form(request)
    sent = request.headers.get("x-csrf-token") or posted.get("csrf_token")
    if not same_token(request.session.get("csrf"), sent if isinstance(sent, str) else None):
        raise HTTPException(403, "The form has expired or was not sent from this site (CSRF check failed). Reload the page and try again.")
    for name, value in posted.multi_items():
        if isinstance(value, str) and "\x00" in value:
            raise Invalid(f"The field '{name}' holds a NUL character (\\u0000), which cannot be stored.")


def client_ip(request: Request) -> str | None:
    """The client's address (see app.web.addresses): X-Forwarded-For counts only from VLCURATE_TRUSTED_PROXIES."""
    trusted = parse_networks(request.app.state.settings.trusted_proxies)
    return client_address(request.client.host if request.client else None, request.headers.getlist("x-forwarded-for"), trusted)


# Fields of annotation forms that are not part of the answer.
FORM_META = {"csrf_token", "idempotency_key", "opened_at", "active_seconds", "start", "comment"}


@dataclass(frozen=True)
class AnswerForm:
    """An annotation form: its answer fields (a field given several times becomes a list) and its meta fields."""

    values: dict
    meta: dict


async def answer_form(request: Request) -> AnswerForm:
    posted = await form(request)
    fields = {k: posted.getlist(k) for k in posted.keys() if k not in FORM_META}
    flat = {k: (v[0] if len(v) == 1 else v) for k, v in fields.items()}
    return AnswerForm(flat, {k: posted.get(k) for k in FORM_META})


Answer = Annotated[AnswerForm, Depends(answer_form)]
