"""The role matrix, generated from the app's routes: every route x anonymous / annotator / reviewer /
admin gets the outcome its declared role says. A route missing from ACCESS fails the suite, so a new
route cannot ship without a decision on who may use it."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.db import transaction
from tests import factories
from tests.conftest import csrf_from, login

PUBLIC, USER, REVIEWER, ADMIN = "anyone", "user", "reviewer", "admin"
RANK = {"anonymous": 0, "annotator": 1, "reviewer": 2, "admin": 3}
NEEDS = {PUBLIC: 0, USER: 1, REVIEWER: 2, ADMIN: 3}

# Who may use each route. Pages are asked with the session cookie, /api/v1 with a bearer token.
ACCESS = {
    ("GET", "/healthz"): PUBLIC,
    ("GET", "/favicon.ico"): PUBLIC,
    ("GET", "/openapi.json"): PUBLIC,
    ("GET", "/api/docs"): PUBLIC,
    ("GET", "/login"): PUBLIC,
    ("POST", "/login"): PUBLIC,
    ("POST", "/logout"): PUBLIC,
    ("GET", "/login/sso"): PUBLIC,
    ("GET", "/login/sso/callback"): PUBLIC,
    ("GET", "/account/password"): USER,
    ("POST", "/account/password"): USER,
    ("GET", "/"): USER,
    ("POST", "/projects"): ADMIN,
    ("GET", "/projects/new"): ADMIN,
    ("POST", "/projects/preview"): ADMIN,
    ("GET", "/projects/{project_id}/items"): REVIEWER,
    ("GET", "/projects/{project_id}"): USER,
    ("POST", "/projects/{project_id}/import"): ADMIN,
    ("POST", "/projects/{project_id}/delete"): ADMIN,
    ("POST", "/projects/{project_id}/restore"): ADMIN,
    ("GET", "/stages/{stage_id}/annotate"): USER,
    ("POST", "/stages/{stage_id}/annotate"): USER,
    ("GET", "/assignments/{assignment_id}"): USER,
    ("POST", "/assignments/{assignment_id}/submit"): USER,
    ("POST", "/assignments/{assignment_id}/skip"): USER,
    ("POST", "/assignments/{assignment_id}/check"): USER,
    ("POST", "/assignments/{assignment_id}/draft"): USER,
    ("GET", "/assets/{sha256}"): USER,
    ("GET", "/assets/{sha256}/thumb"): USER,
    ("GET", "/stages/{stage_id}/review"): REVIEWER,
    ("GET", "/stages/{stage_id}/review/next"): REVIEWER,
    ("POST", "/stages/{stage_id}/review/{item_id}/take-back"): REVIEWER,
    ("GET", "/stages/{stage_id}/review/{item_id}"): REVIEWER,
    ("POST", "/stages/{stage_id}/review/{item_id}"): REVIEWER,
    ("GET", "/stages/{stage_id}/review/{item_id}/edit"): REVIEWER,
    ("POST", "/stages/{stage_id}/review/{item_id}/edit"): REVIEWER,
    ("POST", "/stages/{stage_id}/review/{item_id}/check"): REVIEWER,
    ("GET", "/items/{item_id}/history"): REVIEWER,
    ("GET", "/stages/{stage_id}/agreement"): REVIEWER,
    ("POST", "/stages/{stage_id}/agreement"): REVIEWER,
    ("POST", "/stages/{stage_id}/equivalence"): REVIEWER,
    ("POST", "/stages/{stage_id}/gold"): ADMIN,
    ("POST", "/items/{item_id}/gold"): ADMIN,
    # Lift and reset: any user may ask; the service answers 403 to anyone but an admin or the workspace's manager.
    ("POST", "/stages/{stage_id}/annotators/{annotator_id}/lift-pause"): USER,
    ("POST", "/stages/{stage_id}/annotators/{annotator_id}/reset-quiz"): USER,
    ("POST", "/projects/{project_id}/leaks"): ADMIN,
    ("POST", "/projects/{project_id}/leaks/keep-together"): ADMIN,
    ("GET", "/admin/worker"): REVIEWER,
    ("GET", "/admin/users"): ADMIN,
    ("POST", "/admin/users"): ADMIN,
    ("POST", "/admin/users/{user_id}"): ADMIN,
    ("POST", "/admin/users/{user_id}/password"): ADMIN,
    ("POST", "/admin/users/{user_id}/tokens"): ADMIN,
    ("POST", "/admin/tokens/{token_id}/revoke"): ADMIN,
    ("GET", "/admin/jobs"): ADMIN,
    ("GET", "/admin/audit"): ADMIN,
    ("GET", "/api/v1/audit"): ADMIN,
    # Work logs: any user reaches them; a workspace's managers and admins read them, anyone else gets 404 (tests/web/test_worklog.py).
    ("GET", "/worklog"): USER,
    ("GET", "/workspaces/{workspace_id}/worklog"): USER,
    ("GET", "/workspaces/{workspace_id}/worklog.{kind}"): USER,
    ("GET", "/api/v1/workspaces/{workspace_id}/worklog"): USER,
    ("GET", "/api/v1/workspaces/{workspace_id}/worklog.{kind}"): USER,
    ("GET", "/projects/{project_id}/export"): ADMIN,
    ("POST", "/projects/{project_id}/splits"): ADMIN,
    ("POST", "/projects/{project_id}/exports"): ADMIN,
    ("GET", "/exports/{export_id}.zip"): ADMIN,
    ("GET", "/exports/{export_id}/files/{path:path}"): ADMIN,
    ("GET", "/stages/{stage_id}/drafts"): ADMIN,
    ("GET", "/stages/{stage_id}/settings"): ADMIN,
    ("POST", "/stages/{stage_id}/settings"): ADMIN,
    ("POST", "/stages/{stage_id}/prompts"): ADMIN,
    ("POST", "/stages/{stage_id}/drafts/run"): ADMIN,
    ("GET", "/stages/{stage_id}/drafts/evaluation.parquet"): ADMIN,
    ("GET", "/api/v1/projects"): USER,
    ("GET", "/api/v1/projects/{project_id}"): USER,
    ("POST", "/api/v1/projects"): ADMIN,
    ("POST", "/api/v1/projects/{project_id}/items"): ADMIN,
    ("POST", "/api/v1/stages/{stage_id}/claim"): USER,
    ("POST", "/api/v1/assignments/{assignment_id}/submit"): USER,
    ("POST", "/api/v1/assignments/{assignment_id}/skip"): USER,
    ("POST", "/api/v1/assignments/{assignment_id}/release"): USER,
    ("PUT", "/api/v1/assignments/{assignment_id}/draft"): USER,
    ("GET", "/api/v1/stages/{stage_id}/agreement"): REVIEWER,
    ("POST", "/api/v1/stages/{stage_id}/gold"): ADMIN,
    ("POST", "/api/v1/items/{item_id}/gold"): ADMIN,
    ("GET", "/api/v1/stages/{stage_id}/gold/accuracy"): REVIEWER,
    ("GET", "/api/v1/stages/{stage_id}/qualification"): REVIEWER,
    ("POST", "/api/v1/stages/{stage_id}/annotators/{annotator_id}/lift-pause"): USER,
    ("POST", "/api/v1/stages/{stage_id}/annotators/{annotator_id}/reset-quiz"): USER,
    ("GET", "/api/v1/stages/{stage_id}/bias"): REVIEWER,
    ("GET", "/api/v1/stages/{stage_id}/bias.parquet"): REVIEWER,
    ("POST", "/api/v1/projects/{project_id}/leaks"): ADMIN,
    ("GET", "/api/v1/projects/{project_id}/leaks"): ADMIN,
    ("GET", "/api/v1/projects/{project_id}/leaks/job"): ADMIN,
    ("POST", "/api/v1/projects/{project_id}/leaks/keep-together"): ADMIN,
    ("GET", "/api/v1/projects/{project_id}/splits"): ADMIN,
    ("POST", "/api/v1/projects/{project_id}/splits"): ADMIN,
    ("POST", "/api/v1/projects/{project_id}/exports"): ADMIN,
    ("GET", "/api/v1/exports/{export_id}"): ADMIN,
    ("GET", "/api/v1/exports/{export_id}/files/{path:path}"): ADMIN,
    ("GET", "/api/v1/users"): ADMIN,
    ("POST", "/api/v1/users"): ADMIN,
    ("POST", "/api/v1/users/{user_id}/tokens"): ADMIN,
    ("DELETE", "/api/v1/tokens/{token_id}"): USER,
    ("GET", "/api/v1/projects/{project_id}/items"): REVIEWER,
    ("GET", "/api/v1/items/{item_id}"): REVIEWER,
    ("POST", "/api/v1/projects/{project_id}/records"): ADMIN,
    ("GET", "/api/v1/projects/{project_id}/settings"): USER,
    ("GET", "/api/v1/projects/{project_id}/finals"): ADMIN,
    ("GET", "/api/v1/images/{sha256}"): USER,
    ("POST", "/api/v1/images/batch"): USER,
    ("PATCH", "/api/v1/projects/{project_id}"): ADMIN,
    ("DELETE", "/api/v1/projects/{project_id}"): ADMIN,
    ("POST", "/api/v1/projects/{project_id}/restore"): ADMIN,
    ("POST", "/api/v1/projects/{project_id}/records/delete"): ADMIN,
    ("GET", "/api/v1/projects/{project_id}/annotations"): REVIEWER,
    ("GET", "/api/v1/stages/{stage_id}/review"): REVIEWER,
    ("POST", "/api/v1/stages/{stage_id}/review/{item_id}"): REVIEWER,
    ("POST", "/api/v1/stages/{stage_id}/review/{item_id}/send-back"): REVIEWER,
    ("POST", "/api/v1/stages/{stage_id}/review/{item_id}/take-back"): REVIEWER,
    ("POST", "/api/v1/stages/{stage_id}/suggestions"): ADMIN,
    ("GET", "/api/v1/stages/{stage_id}/draft-kinds"): ADMIN,
    ("GET", "/api/v1/stages/{stage_id}/prompts"): ADMIN,
    ("POST", "/api/v1/stages/{stage_id}/prompts"): ADMIN,
    ("GET", "/api/v1/prompts/{prompt_id}"): ADMIN,
    ("GET", "/admin/workspaces"): ADMIN,
    ("POST", "/admin/workspaces"): ADMIN,
    ("GET", "/admin/workspaces/{workspace_id}"): ADMIN,
    ("POST", "/admin/workspaces/{workspace_id}"): ADMIN,
    ("POST", "/admin/workspaces/{workspace_id}/delete"): ADMIN,
    ("POST", "/admin/workspaces/{workspace_id}/members"): ADMIN,
    ("POST", "/admin/workspaces/{workspace_id}/members/{member_id}/delete"): ADMIN,
    ("POST", "/projects/{project_id}/workspace"): ADMIN,
    ("GET", "/api/v1/workspaces"): USER,
    ("POST", "/api/v1/workspaces"): ADMIN,
    ("PATCH", "/api/v1/workspaces/{workspace_id}"): ADMIN,
    ("DELETE", "/api/v1/workspaces/{workspace_id}"): ADMIN,
    ("GET", "/api/v1/workspaces/{workspace_id}/members"): ADMIN,
    ("POST", "/api/v1/workspaces/{workspace_id}/members"): ADMIN,
    ("DELETE", "/api/v1/workspaces/{workspace_id}/members/{member_id}"): ADMIN,
    ("PUT", "/api/v1/projects/{project_id}/workspace"): ADMIN,
    ("POST", "/api/v1/prompts/{prompt_id}/runs"): ADMIN,
    ("GET", "/api/v1/stages/{stage_id}/drafts/evaluation"): ADMIN,
    ("GET", "/api/v1/stages/{stage_id}/drafts/evaluation.parquet"): ADMIN,
    # Webhooks: any user may ask; whoever does not manage the workspace gets 404 (tests/web/test_webhooks.py).
    ("GET", "/workspaces/{workspace_id}/webhooks"): USER,
    ("POST", "/workspaces/{workspace_id}/webhooks"): USER,
    ("GET", "/webhooks/{webhook_id}"): USER,
    ("POST", "/webhooks/{webhook_id}"): USER,
    ("POST", "/webhooks/{webhook_id}/test"): USER,
    ("POST", "/webhooks/{webhook_id}/delete"): USER,
    ("GET", "/api/v1/workspaces/{workspace_id}/webhooks"): USER,
    ("POST", "/api/v1/workspaces/{workspace_id}/webhooks"): USER,
    ("GET", "/api/v1/webhooks/{webhook_id}"): USER,
    ("PATCH", "/api/v1/webhooks/{webhook_id}"): USER,
    ("DELETE", "/api/v1/webhooks/{webhook_id}"): USER,
    ("POST", "/api/v1/webhooks/{webhook_id}/test"): USER,
}

# Path parameters are filled with values that name nothing: an allowed caller gets a 404 or a 422 and
# nothing changes; what is checked is that the refusal, when there is one, comes from the role.
FILL = {"sha256": "0" * 64, "path:path": "x.json", "kind": "csv"}
NOTHING = 999_999


def app_routes(app):
    """(method, path) of every route the app serves (static files aside), included routers unfolded."""

    def walk(routes):
        for route in routes:
            if hasattr(route, "original_router"):
                yield from walk(route.original_router.routes)
            elif hasattr(route, "methods"):
                for method in sorted(route.methods - {"HEAD"}):
                    yield method, route.path

    return sorted(set(walk(app.routes)))


def concrete(path: str) -> str:
    import re

    return re.sub(r"\{([^}]+)\}", lambda m: FILL.get(m.group(1), str(NOTHING)), path)


def test_every_route_has_a_declared_role(app):
    routes = set(app_routes(app))
    assert not routes - ACCESS.keys(), f"routes without a role decision (add them to ACCESS): {sorted(routes - ACCESS.keys())}"
    assert not ACCESS.keys() - routes, f"ACCESS names routes the app no longer has: {sorted(ACCESS.keys() - routes)}"


@pytest.fixture
def callers(app):
    """A logged-in browser and an API token per role, and an anonymous browser."""
    with transaction(app.state.sessions) as s:
        tokens = {role: factories.bearer(s, f"matrix-{role}", role) for role in ("annotator", "reviewer", "admin")}
        for role in ("annotator", "reviewer", "admin"):
            factories.user(s, f"matrix-page-{role}", role)
    browsers = {}
    for role in RANK:
        browser = TestClient(app, raise_server_exceptions=False).__enter__()
        if role != "anonymous":
            assert login(browser, f"matrix-page-{role}").status_code == 303
        browsers[role] = browser
    yield browsers, tokens
    for browser in browsers.values():
        browser.__exit__(None, None, None)


def _refused(route, role, response) -> str | None:
    """How the app refused `role` (a login redirect, 401 or 403), or None if it let the request through."""
    if response.status_code in (301, 302, 303, 307) and response.headers.get("location", "").startswith("/login?next="):
        return "login"
    if response.status_code == 401 and route[1] != "/login":  # a wrong password at /login is not a refusal
        return "401"
    if response.status_code == 403:
        return "403"
    return None


def test_every_route_gives_each_role_what_its_declared_role_says(app, callers):
    browsers, tokens = callers
    csrf = {role: csrf_from(browser.get("/login").text) for role, browser in browsers.items()}
    failures = []
    for method, path in app_routes(app):
        need = NEEDS[ACCESS[(method, path)]]
        api = path.startswith("/api/v1/")
        for role, rank in RANK.items():
            browser = browsers[role]
            headers, kwargs = {}, {}
            if api:
                if role != "anonymous":
                    headers = tokens[role]
                if method in ("POST", "PUT", "PATCH"):
                    kwargs["json"] = {}
            elif method == "POST":
                kwargs["data"] = {"csrf_token": csrf[role]}
            r = browser.request(method, concrete(path), headers=headers, follow_redirects=False, **kwargs)
            refused = _refused((method, path), role, r)
            if rank >= need:
                expected = None
            elif rank == 0:
                expected = "401" if api else "login"
            else:
                expected = "403"
            if refused != expected or r.status_code >= 500:
                failures.append(f"{method} {path} as {role}: {r.status_code} ({refused or 'let through'}), expected {expected or 'let through'}")
            if path == "/logout" and role != "anonymous":
                login(browser, f"matrix-page-{role}")
            if path in ("/logout", "/login"):  # a new session: a new CSRF token
                csrf[role] = csrf_from(browser.get("/login").text)
    assert not failures, "\n".join(failures)
