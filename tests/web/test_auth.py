"""Authentication and authorization: sessions, CSRF, rate limiting, roles, API tokens."""

from __future__ import annotations

import pytest

from app.db import transaction
from tests import factories
from tests.conftest import PASSWORD, csrf_from, login, make_token


@pytest.fixture
def users(app):
    with transaction(app.state.sessions) as s:
        return {
            "admin": factories.user(s, "boss", "admin"),
            "annotator": factories.user(s, "ann", "annotator"),
            "reviewer": factories.user(s, "rev", "reviewer"),
        }


def test_anonymous_pages_redirect_to_login(client):
    for path in ("/", "/projects/1", "/admin/users", "/stages/1/annotate", "/assignments/1"):
        r = client.get(path, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == f"/login?next={path}"


def test_login_sets_a_hardened_session_cookie(client, users):
    r = login(client, "boss")
    assert r.status_code == 303 and r.headers["location"] == "/"
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie
    assert client.get("/").status_code == 200


def test_wrong_password_is_refused(client, users):
    r = login(client, "boss", "wrong password")
    assert r.status_code == 401 and "Wrong username or password" in r.text
    assert client.get("/", follow_redirects=False).status_code == 303


def test_repeated_wrong_passwords_are_rate_limited(client, users):
    for _ in range(3):
        assert login(client, "ann", "nope-nope").status_code == 401
    blocked = login(client, "ann", PASSWORD)  # even the right password waits now
    assert blocked.status_code == 429 and "Too many failed logins" in blocked.text
    assert login(client, "boss").status_code == 303  # other accounts are unaffected


def test_post_without_csrf_token_is_rejected(client, users):
    login(client, "boss")
    r = client.post("/projects", data={"name": "x", "workflow": "generic.choice"}, follow_redirects=False)
    assert r.status_code == 403 and "CSRF" in r.text
    r = client.post("/login", data={"username": "boss", "password": PASSWORD})
    assert r.status_code == 403


def test_logout_ends_the_session(client, users):
    login(client, "boss")
    token = csrf_from(client.get("/").text)
    client.post("/logout", data={"csrf_token": token})
    assert client.get("/", follow_redirects=False).status_code == 303


def test_annotator_gets_403_on_admin_pages_and_apis(client, app, users):
    login(client, "ann")
    token = csrf_from(client.get("/").text)
    assert client.get("/admin/users").status_code == 403
    assert client.post("/admin/users", data={"csrf_token": token, "username": "x", "password": "12345678"}).status_code == 403
    assert client.post("/projects", data={"csrf_token": token, "name": "x", "workflow": "generic.choice"}).status_code == 403
    api = {"Authorization": f"Bearer {make_token(app.state.sessions, users['annotator'])}"}
    assert client.get("/api/v1/users", headers=api).status_code == 403
    assert client.post("/api/v1/projects", headers=api, json={"name": "x", "stages": [{"workflow": "generic.choice"}]}).status_code == 403
    assert client.post("/api/v1/projects/1/items", headers=api, files={"file": ("a.jsonl", b"{}")}).status_code == 403
    assert client.get("/api/v1/projects", headers=api).status_code == 200


def test_reviewer_is_not_an_admin(client, users):
    login(client, "rev")
    assert client.get("/admin/users").status_code == 403


def test_api_needs_a_valid_token_and_revoked_tokens_stop_working(client, app, users):
    assert client.get("/api/v1/projects").status_code == 401
    assert client.get("/api/v1/projects", headers={"Authorization": "Bearer vlc_bogus"}).status_code == 401
    admin_token = make_token(app.state.sessions, users["admin"])
    h = {"Authorization": f"Bearer {admin_token}"}
    created = client.post(f"/api/v1/users/{users['annotator']}/tokens", headers=h, json={"name": "script"})
    assert created.status_code == 201
    ann = {"Authorization": f"Bearer {created.json()['token']}"}
    assert client.get("/api/v1/projects", headers=ann).status_code == 200
    assert client.delete(f"/api/v1/tokens/{created.json()['id']}", headers=h).status_code == 204
    assert client.get("/api/v1/projects", headers=ann).status_code == 401


def test_session_cookie_does_not_authenticate_the_api(client, users):
    login(client, "boss")
    assert client.get("/api/v1/projects").status_code == 401


def test_one_time_password_must_be_changed_first(client, app):
    from app.db import transaction
    from app.services.users.users import ensure_first_admin

    with transaction(app.state.sessions) as s:
        name, password = ensure_first_admin(s)
    with transaction(app.state.sessions) as s:
        assert ensure_first_admin(s) is None  # printed once only
    r = login(client, name, password)
    assert r.headers["location"] == "/account/password"
    # Every page leads to the password page first, not only the home page.
    for path in ("/", "/admin/users", "/admin/jobs", "/stages/1/annotate", "/projects/1"):
        r = client.get(path, follow_redirects=False)
        assert (r.status_code, r.headers["location"]) == (303, "/account/password"), path
    token = csrf_from(client.get("/account/password").text)
    r = client.post("/account/password", data={"csrf_token": token, "current": password, "new": "a new secret!", "confirm": "a new secret!"}, follow_redirects=False)
    assert r.status_code == 303
    assert client.get("/").status_code == 200


def test_password_change_ends_other_sessions(app, users):
    from fastapi.testclient import TestClient

    with TestClient(app) as first, TestClient(app) as second:
        login(first, "ann")
        login(second, "ann")
        token = csrf_from(first.get("/account/password").text)
        first.post("/account/password", data={"csrf_token": token, "current": PASSWORD, "new": "brand new pw", "confirm": "brand new pw"})
        assert first.get("/", follow_redirects=False).status_code == 200
        assert second.get("/", follow_redirects=False).status_code == 303


def test_passwords_are_stored_as_argon2_hashes(app, users):
    import sqlalchemy as sa

    from app.db import transaction
    from app.models import User

    with transaction(app.state.sessions) as s:
        hashes = s.scalars(sa.select(User.password_hash)).all()
    assert all(h.startswith("$argon2id$") and PASSWORD not in h for h in hashes)


def test_open_redirect_after_login_is_refused(client, users):
    page = client.get("/login")
    r = client.post("/login", data={"username": "boss", "password": PASSWORD, "csrf_token": csrf_from(page.text), "next": "//evil.example"}, follow_redirects=False)
    assert r.headers["location"] == "/"
