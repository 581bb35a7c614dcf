"""create_app(): settings, database, storage, middleware, routers and error pages — wiring only."""

from __future__ import annotations

import logging
import os
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import psycopg
import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import SessionMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import ROOT, __version__, security
from app.db import get_engine, session_factory
from app.errors import FULL_DISK_MESSAGES, DomainError, full_disk
from app.settings import Settings, get_settings
from app.storage import make_storage
from app.tuning import freeze_after_start
from app.web import (
    admin_pages,
    annotate_pages,
    archive_pages,
    api,
    api_docs,
    api_items,
    api_manage,
    api_review,
    api_suggestions,
    assets,
    auth_pages,
    audit_pages,
    bias_api,
    draft_api,
    draft_pages,
    export_pages,
    gate_pages,
    gold_api,
    gold_pages,
    leaks_api,
    project_pages,
    review_pages,
    sso_pages,
    stage_settings_pages,
    worklog_pages,
    webhook_pages,
    workspace_api,
    workspace_pages,
)
from app.web.deps import Db, LoginRequired
from app.web.static_files import STATIC, VersionedStaticFiles
from app.web.templating import is_htmx, render

log = logging.getLogger(__name__)

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data: https:; style-src 'self' 'unsafe-inline'; "
        "script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    ),
}


_RAW_SECURITY_HEADERS = [(name.lower().encode(), value.encode()) for name, value in SECURITY_HEADERS.items()]


class SecurityHeaders:
    """The security headers on every answer that does not set its own, and Server-Timing (time spent
    in the app, for browser dev tools and the benchmarks). Pure ASGI: Starlette's BaseHTTPMiddleware
    runs each request through an extra task and stream, which the API's hot path cannot afford."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != b"server-timing"]
                present = {k.lower() for k, _ in headers}
                headers += [h for h in _RAW_SECURITY_HEADERS if h[0] not in present]
                headers.append((b"server-timing", f"app;dur={(time.perf_counter() - started) * 1000:.1f}".encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class PageSessions:
    """Cookie sessions for the pages: a signed cookie naming the session's row (app.services.users.web_sessions)
    and the CSRF token. An API request with a bearer token skips them: no cookie is verified or
    signed; it gets an empty session that is never sent back. The cookie is `Secure` when `secure`
    says so, and on any request that came over HTTPS."""

    def __init__(self, app: ASGIApp, *, secure: bool, **options) -> None:
        self.app = app
        self.with_secure_cookie = SessionMiddleware(app, https_only=True, **options)
        self.with_sessions = self.with_secure_cookie if secure else SessionMiddleware(app, https_only=False, **options)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/api/") and _bearer(scope):
            scope["session"] = {}
            await self.app(scope, receive, send)
        elif scope.get("scheme") in ("https", "wss"):
            await self.with_secure_cookie(scope, receive, send)
        else:
            await self.with_sessions(scope, receive, send)


def _bearer(scope: Scope) -> bool:
    return any(k == b"authorization" and v[:7].lower() == b"bearer " for k, v in scope["headers"])


def secret_key(settings: Settings) -> str:
    """The configured key, or one generated on first start and kept in the data directory."""
    if settings.secret_key:
        return settings.secret_key.get_secret_value()
    path: Path = settings.data_dir / "secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(48))
    return path.read_text().strip()


@asynccontextmanager
async def job_queue(app: FastAPI) -> AsyncIterator[None]:
    """The job queue's pool, opened once at start-up and shared by every request's defer (each
    request opening and closing it closed the pool under the others' defers), closed at shutdown."""
    from app.worker import jobs

    try:
        jobs.open_queue(app.state.settings)
    except Exception as exc:  # the first defer opens it; until then the reconcile job has the requests
        log.warning("the job queue is not open yet (%s: %s)", type(exc).__name__, exc)
    yield
    jobs.close_queue()


def _mount_routes(app: FastAPI) -> None:
    # Routes are matched in order: the annotation API (its claim and submit), then the annotation
    # pages (the screen, its submit and its fragments), then the rest, so the hot path is matched
    # first (its cost behind the others: docs/performance.md); the API's routers refuse a path
    # outside /api/v1 at once (limits.ApiRouter). No page path starts with /api/ and no other page
    # shares a path with the annotation pages, so the order changes no match.
    app.include_router(api.router)
    app.include_router(gold_api.router)
    app.include_router(leaks_api.router)
    for module in (api_items, api_manage, api_review, api_suggestions, draft_api, bias_api, audit_pages, worklog_pages, webhook_pages,
                   workspace_api):
        app.include_router(module.router)
    app.include_router(annotate_pages.router, include_in_schema=False)
    app.mount("/static", VersionedStaticFiles(directory=str(STATIC)), name="static")
    pages = (auth_pages, sso_pages, project_pages, archive_pages, stage_settings_pages, review_pages, gold_pages, gate_pages,
             admin_pages, workspace_pages)
    for module in (*pages, export_pages, draft_pages, assets, api_docs):
        # The schema documents the HTTP API only, not the pages.
        app.include_router(module.router, include_in_schema=False)
    app.include_router(audit_pages.pages, include_in_schema=False)
    app.include_router(worklog_pages.pages, include_in_schema=False)
    app.include_router(webhook_pages.pages, include_in_schema=False)
    api_docs.with_bearer_tokens(app)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    app = FastAPI(
        lifespan=job_queue,
        title="vlcurate",
        version=__version__,
        description="Curate vision-language datasets with humans in the loop.",
        # /api/docs is app.web.api_docs: FastAPI's page loads Swagger UI from a CDN with an inline
        # script, which the Content-Security-Policy refuses.
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.engine = get_engine(settings)
    app.state.sessions = session_factory(app.state.engine)
    app.state.storage = make_storage(settings)
    app.state.progress_cache = {}  # stage id -> (monotonic time, StageProgress); see annotate_pages.stage_bar
    security.dummy_hash()  # made now, so that no login waits for it

    app.add_middleware(
        PageSessions,
        secret_key=secret_key(settings),
        session_cookie="vlcurate_session",
        max_age=settings.session_max_age_seconds,
        same_site="lax",
        secure=settings.secure_cookies,
    )
    app.add_middleware(SecurityHeaders)  # added last: the outermost, so its timing covers the rest

    _mount_routes(app)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon():
        # Browsers ask for it by this path on any page without a <link rel="icon">, JSON ones included.
        return FileResponse(ROOT / "static" / "favicon.ico", media_type="image/x-icon", headers={"Cache-Control": "public, max-age=86400"})

    @app.get("/healthz", tags=["meta"])
    def healthz(session: Db) -> dict[str, str]:
        session.execute(sa.text("SELECT 1"))
        return {"status": "ok", "version": __version__}

    _install_error_handlers(app)
    return app


def serve_app() -> FastAPI:
    """The app as `vlcurate serve` runs it, once per server process: `create_app`, then the garbage
    collector tuned for a long-lived server (`app.tuning.freeze_after_start`)."""
    app = create_app()
    freeze_after_start()
    return app


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def _error_page(request: Request, status: int, message: str, errors: list[str] | None = None):
    if _wants_json(request):
        body = {"detail": message}
        if errors:
            body["errors"] = errors
        return JSONResponse(body, status_code=status)
    # htmx swaps the answer into the page: only the alert, whatever element asked.
    block = "alert" if is_htmx(request) else None
    return render(request, "error.html", {"status": status, "message": message, "errors": errors or []}, status_code=status, block=block)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(LoginRequired)
    async def login_required(request: Request, exc: LoginRequired):
        target = exc.target.format(path=request.url.path)
        if is_htmx(request):
            return HTMLResponse("", status_code=401, headers={"HX-Redirect": target})
        return RedirectResponse(target, status_code=303)

    @app.exception_handler(DomainError)
    async def domain_error(request: Request, exc: DomainError):
        return _error_page(request, exc.status_code, exc.message, exc.errors)

    # FastAPI's HTTPException is a subclass: one handler serves both.
    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        response = _error_page(request, exc.status_code, str(exc.detail))
        for k, v in (exc.headers or {}).items():
            response.headers[k] = v
        return response

    # The database went away under a request (a restart, a failover, a lost network) or could not
    # serve it in time: its transaction is rolled back, and the same request sent again (a submit
    # with its idempotency key) does what it would have done.
    @app.exception_handler(sa.exc.OperationalError)
    async def database_unavailable(request: Request, exc: sa.exc.OperationalError):
        if full_disk(exc):
            return disk_full(request, exc)
        why = (str(exc.orig or exc).splitlines() or ["(no message)"])[0]
        log.warning("answered 503 to %s %s: %s", request.method, request.url.path, why)
        response = _error_page(request, 503, "The database is not available right now. Try again in a moment.")
        response.headers["Retry-After"] = "1"
        return response

    # A full disk (the storage, a temporary file, PostgreSQL's) is one answer wherever it strikes: 507
    # and what to do. The request's transaction is rolled back and staged files are removed, so
    # nothing is half-written; any other OSError stays a server error.
    @app.exception_handler(OSError)
    @app.exception_handler(psycopg.errors.DiskFull)  # raised as is by a COPY on the raw connection
    async def disk_full(request: Request, exc: Exception):
        which = full_disk(exc)
        if which is None:
            raise exc
        log.error("answered 507 to %s %s: the %s's disk is full (%s)", request.method, request.url.path, which, exc)
        return _error_page(request, 507, FULL_DISK_MESSAGES[which])

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError):
        errors = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        return _error_page(request, 422, "The request is not valid.", errors)
