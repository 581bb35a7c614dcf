"""Page sessions kept server-side: logout, a password change and deactivation end them everywhere;
no secret in a cookie; `Secure` cookies; the password form's checks; revocation seen at once by
every server process."""

from __future__ import annotations

import base64
import json
import re

import httpx
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from itsdangerous import TimestampSigner

from app.db import transaction
from app.services.users import users as users_service
from tests import factories
from tests.conftest import PASSWORD, csrf_from, free_port, login, running, server_process

COOKIE = "vlcurate_session"


@pytest.fixture
def people(app):
    with transaction(app.state.sessions) as s:
        return {"admin": factories.user(s, "boss", "admin"), "ann": factories.user(s, "ann")}


def _cookie_payloads(response, settings) -> list[str]:
    """Every session cookie the answer sets, unsigned and decoded: what anyone holding it can read."""
    signer = TimestampSigner(settings.secret_key.get_secret_value())
    found = []
    for header in response.headers.get_list("set-cookie"):
        name, _, rest = header.partition("=")
        if name == COOKIE and not rest.startswith("null;"):
            value = rest.split(";", 1)[0].strip('"')
            found.append(base64.b64decode(signer.unsign(value.encode())).decode())
    return found


def test_a_cookie_captured_before_logout_no_longer_works(app, client, people):
    login(client, "ann")
    captured = client.cookies[COOKIE]
    client.post("/logout", data={"csrf_token": csrf_from(client.get("/").text)})
    with TestClient(app, cookies={COOKIE: captured}) as thief:
        r = thief.get("/", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login")


def test_a_password_change_ends_the_cookie_it_was_made_with_too(app, client, people):
    login(client, "ann")
    before = client.cookies[COOKIE]
    token = csrf_from(client.get("/account/password").text)
    r = client.post("/account/password", data={"csrf_token": token, "current": PASSWORD, "new": "brand new pw", "confirm": "brand new pw"},
                    follow_redirects=False)
    assert r.status_code == 303
    assert client.get("/", follow_redirects=False).status_code == 200  # the page that changed it has a new session
    with TestClient(app, cookies={COOKIE: before}) as replay:
        assert replay.get("/", follow_redirects=False).status_code == 303


def test_deactivating_a_user_ends_their_sessions_for_good(app, client, people):
    """Made active again, they log in again: the old session does not come back with them."""
    login(client, "ann")
    assert client.get("/", follow_redirects=False).status_code == 200
    for active in (False, True):
        with transaction(app.state.sessions) as s:
            users_service.update_user(s, users_service.get_user(s, people["ann"]), is_active=active, actor_id=people["admin"])
    assert client.get("/", follow_redirects=False).status_code == 303
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.text("SELECT count(*) FROM web_sessions WHERE user_id = :u"), {"u": people["ann"]}) == 0


def test_the_one_time_password_cannot_be_kept(app, client, people):
    with transaction(app.state.sessions) as s:
        otp = users_service.reset_password(s, users_service.get_user(s, people["ann"]), actor_id=people["admin"])
    assert login(client, "ann", otp).headers["location"] == "/account/password"
    token = csrf_from(client.get("/account/password").text)
    r = client.post("/account/password", data={"csrf_token": token, "current": otp, "new": otp, "confirm": otp})
    assert r.status_code == 422 and "a one-time password, cannot be kept" in r.text
    assert client.get("/", follow_redirects=False).headers["location"] == "/account/password"  # still to be changed
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.text("SELECT must_change_password FROM users WHERE id = :u"), {"u": people["ann"]})


def test_wrong_current_passwords_are_throttled_as_logins_are(app, client, people, settings):
    """settings.login_max_failures is 3: the fourth check waits, even with the right password."""
    login(client, "ann")
    token = csrf_from(client.get("/account/password").text)

    def change(current: str):
        return client.post("/account/password", data={"csrf_token": token, "current": current, "new": "brand new pw", "confirm": "brand new pw"},
                           follow_redirects=False)

    for _ in range(settings.login_max_failures):
        r = change("a wrong guess")
        assert r.status_code == 422 and "The current password is wrong." in r.text
    refused = change(PASSWORD)
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert "Too many wrong passwords for this account from your address" in refused.text
    with transaction(app.state.sessions) as s:
        assert users_service.authenticate(s, "ann", "brand new pw", ip=None, policy=users_service.login_throttle.Policy()).user is None
        actions = s.scalars(sa.text("SELECT action FROM audit_events WHERE action LIKE 'password.%' ORDER BY id")).all()
    assert actions == ["password.failed"] * settings.login_max_failures + ["password.refused"]


def test_secrets_are_never_in_a_cookie_and_their_notice_is_shown_once(app, client, people, settings):
    login(client, "boss")
    token = csrf_from(client.get("/admin/users").text)
    posts = [
        ("/admin/users", {"username": "newbie", "role": "annotator"}, r'<code id="one-time-password">([^<]+)</code>'),
        (f"/admin/users/{people['ann']}/password", {}, r'<code id="one-time-password">([^<]+)</code>'),
        (f"/admin/users/{people['ann']}/tokens", {"name": "script"}, r'<code id="new-token">([^<]+)</code>'),
    ]
    for path, form, shown in posts:
        r = client.post(path, data={"csrf_token": token, **form}, follow_redirects=False)
        assert r.status_code == 303, (path, r.text[:300])
        page = client.get("/admin/users")
        secret = re.search(shown, page.text).group(1)
        for answer in (r, page):
            assert secret not in str(answer.headers)
            assert all(secret not in payload for payload in _cookie_payloads(answer, settings)), path
        assert secret not in client.get("/admin/users").text, path  # shown once
        with transaction(app.state.sessions) as s:
            assert s.scalar(sa.text("SELECT count(*) FROM web_sessions WHERE notice IS NOT NULL")) == 0  # gone once shown


@pytest.mark.parametrize(
    ("options", "base_url", "secure"),
    [
        ({}, "http://testserver", False),
        ({"public_url": "https://curate.example.org"}, "http://testserver", True),
        ({"public_url": "http://localhost:8000"}, "http://testserver", False),
        ({"session_https_only": True}, "http://testserver", True),
        ({}, "https://testserver", True),  # the request itself came over HTTPS
    ],
)
def test_the_session_cookie_is_secure_behind_https(rolled_back, settings, options, base_url, secure):
    from app.main import create_app
    from app.web.deps import db

    app = create_app(settings.model_copy(update=options))
    app.state.sessions = rolled_back

    def one_connection():
        with transaction(rolled_back) as s:
            yield s

    app.dependency_overrides[db] = one_connection
    with transaction(rolled_back) as s:
        factories.user(s, "ann")
    with TestClient(app, base_url=base_url) as c:
        cookie = login(c, "ann").headers["set-cookie"].lower()
    assert ("; secure" in cookie) is secure, cookie


def test_a_public_url_is_http_or_https():
    from pydantic import ValidationError

    from app.settings import Settings

    with pytest.raises(ValidationError, match="PUBLIC_URL"):
        Settings(public_url="curate.example.org")


def test_revocation_and_deactivation_reach_every_server_process_at_once(settings, committed):
    """Two server processes on one database: a token revoked through one, or its user deactivated by a
    third (the command line), is refused by the other on its very next request, with no wait."""
    with transaction(committed) as s:
        admin = {"Authorization": f"Bearer {factories.token(s, factories.user(s, 'boss', 'admin'))}"}
        ann_id = factories.user(s, "ann")
        tokens = [users_service.create_token(s, users_service.get_user(s, ann_id), f"t{n}") for n in range(2)]
    (first_id, first), (_, second) = [(t.id, plain) for t, plain in tokens]
    (cmd_a, env_a, a), (cmd_b, env_b, b) = server_process(settings, free_port()), server_process(settings, free_port())
    with running(cmd_a, a + "/healthz", env_a), running(cmd_b, b + "/healthz", env_b), httpx.Client(timeout=10) as http:
        for token in (first, second):  # each process has seen both tokens work
            for base in (a, b):
                assert http.get(base + "/api/v1/projects", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        assert http.delete(f"{b}/api/v1/tokens/{first_id}", headers=admin).status_code == 204
        assert http.get(a + "/api/v1/projects", headers={"Authorization": f"Bearer {first}"}).status_code == 401
        with httpx.Client(base_url=a, timeout=10) as page:
            login(page, "ann")
            assert page.get("/", follow_redirects=False).status_code == 200
            with transaction(committed) as s:
                users_service.update_user(s, users_service.get_user(s, ann_id), is_active=False, actor_id=None)
            assert http.get(a + "/api/v1/projects", headers={"Authorization": f"Bearer {second}"}).status_code == 401
            assert page.get("/", follow_redirects=False).status_code == 303


def test_the_reconcile_sweep_ends_expired_sessions_only(session):
    from app.services.users import web_sessions

    user = factories.user(session, "sleeper")
    old, live = web_sessions.start(session, user, 1), web_sessions.start(session, user, 3600)
    session.execute(sa.text("UPDATE web_sessions SET expires_at = now() - interval '1 second' WHERE id = :d"), {"d": web_sessions._digest(old)})
    assert web_sessions.sweep_expired(session) == 1
    assert web_sessions.owner(session, old) is None and web_sessions.owner(session, live).username == "sleeper"
