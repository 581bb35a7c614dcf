"""Single sign-on against a real OpenID provider process (tests/sso_provider.py, Authlib's server
components): users found by issuer and subject, roles and memberships synced from groups at every
sign-in, refusals (no mapped group, forged state, nonce, audience, issuer, expiry, signature), PKCE,
and password logins turned off."""

from __future__ import annotations

import threading
import time
from urllib.parse import parse_qs, urlsplit

import httpx
import pydantic
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwt
from joserfc.jwk import OctKey

from app import oidc, security
from app.db import transaction
from app.models import AuditEvent, Role, User, UserIdentity, WorkspaceMember
from app.services.users import sso
from app.settings import Settings
from tests.conftest import PASSWORD, csrf_from, login, make_user
from tests.sso_provider import provider_process

GROUPS = {
    "annotators": {"workspace": "Default", "role": "annotator"},
    "leads": [{"workspace": "Default", "role": "manager"}, {"role": "reviewer"}],
    "admins": {"role": "admin"},
    "ghosts": {"workspace": "Nowhere", "role": "annotator"},
}
CALLBACK = "http://testserver/login/sso/callback"


@pytest.fixture(scope="module")
def provider():
    with provider_process() as running:
        running.configure(redirect_uris=[CALLBACK])
        yield running


@pytest.fixture(autouse=True)
def fresh_provider(provider):
    provider.configure(claims={}, unpublished_key=False, user={"sub": "sub-ada", "preferred_username": "ada", "groups": ["annotators"]})


def sso_settings(settings: Settings, provider, **extra) -> Settings:
    return Settings(**{**settings.model_dump(), **provider.settings(oidc_groups=GROUPS, **extra)})


@pytest.fixture
def settings(settings, provider):  # the root fixture's settings, with sign-on to the test provider
    return sso_settings(settings, provider)


def as_user(provider, groups: list[str], sub: str = "sub-ada", **claims) -> None:
    provider.configure(user={"sub": sub, "preferred_username": "ada", "groups": groups, **claims})


def start(client, next_path: str = "/"):
    """The login page's button: the redirect to the provider's authorization endpoint."""
    answer = client.get("/login/sso", params={"next": next_path}, follow_redirects=False)
    assert answer.status_code == 303, answer.text[:300]
    return answer.headers["location"]


def sign_in(client, next_path: str = "/"):
    """Sign in through the provider (which approves at once) and return the callback's answer."""
    back = httpx.get(start(client, next_path))
    assert back.status_code == 302, back.text[:300]
    return client.get(back.headers["location"].removeprefix("http://testserver"), follow_redirects=False)


def user_named(sessions, username: str) -> User | None:
    with transaction(sessions) as s:
        return s.scalar(sa.select(User).where(User.username == username))


def memberships(sessions, user_id: int) -> list[tuple[str, str, bool]]:
    with transaction(sessions) as s:
        rows = s.execute(
            sa.text("SELECT w.name, m.role, m.sso_managed FROM workspace_members m JOIN workspaces w ON w.id = m.workspace_id"
                    " WHERE m.user_id = :u ORDER BY w.name"), {"u": user_id}).all()
        return [tuple(r) for r in rows]


def actions(sessions) -> list[str]:
    with transaction(sessions) as s:
        return list(s.scalars(sa.select(AuditEvent.action).order_by(AuditEvent.id)))


def test_login_page_offers_sign_on_by_name(client):
    page = client.get("/login")
    assert "Sign in with Test ID" in page.text and 'href="/login/sso?next=/"' in page.text.replace("%2F", "/")
    assert 'name="password"' in page.text  # local passwords stay on unless turned off


def test_first_sign_in_creates_the_user_with_the_mapped_role_and_membership(client, app):
    answer = sign_in(client, "/projects")
    assert answer.status_code == 303 and answer.headers["location"] == "/projects"
    user = user_named(app.state.sessions, "ada")
    assert user is not None and user.role == "annotator" and user.password_hash == "!sso"
    assert memberships(app.state.sessions, user.id) == [("Default", "annotator", True)]
    with transaction(app.state.sessions) as s:
        identity = s.scalar(sa.select(UserIdentity).where(UserIdentity.user_id == user.id))
        assert (identity.issuer, identity.subject) == (app.state.settings.oidc_issuer, "sub-ada") and identity.last_login_at
        event = s.scalar(sa.select(AuditEvent).where(AuditEvent.action == "login"))
        assert event.actor_id == user.id and event.detail["method"] == "sso" and event.detail["groups"] == ["annotators"]
    assert {"user.create", "workspace.member.add", "login"} <= set(actions(app.state.sessions))
    assert client.get("/", follow_redirects=False).status_code == 200  # the session is the user's
    with TestClient(app) as other:
        assert login(other, "ada", "!sso").status_code == 401  # no password logs in a sign-on user


def test_the_page_after_sign_in_is_on_this_site_only(client):
    assert sign_in(client, "//evil.example/x").headers["location"] == "/"


def test_roles_and_memberships_follow_the_groups_at_every_sign_in(client, app, provider):
    as_user(provider, ["leads"])
    sign_in(client)
    user = user_named(app.state.sessions, "ada")
    assert user.role == "reviewer" and memberships(app.state.sessions, user.id) == [("Default", "manager", True)]
    as_user(provider, ["annotators", "admins"])
    sign_in(client)
    assert user_named(app.state.sessions, "ada").role == "admin"
    assert memberships(app.state.sessions, user.id) == [("Default", "annotator", True)]
    as_user(provider, ["admins"])
    sign_in(client)
    assert memberships(app.state.sessions, user.id) == []
    with transaction(app.state.sessions) as s:
        changed = s.scalars(sa.select(AuditEvent).where(AuditEvent.action.in_(["user.update", "workspace.member.update", "workspace.member.remove"]))
                            .order_by(AuditEvent.id)).all()
    assert [(e.action, e.detail.get("after")) for e in changed] == [
        ("user.update", {"role": "admin"}), ("workspace.member.update", {"role": "annotator"}), ("workspace.member.remove", None)]
    assert all(e.detail["via"] == "sso" for e in changed)


def test_no_mapped_group_is_refused_and_no_user_is_made(client, app, provider):
    as_user(provider, ["visitors", "ghosts"])  # 'ghosts' maps to a workspace that does not exist
    answer = sign_in(client)
    assert answer.status_code == 403 and "not in any group that may use this vlcurate server" in answer.text
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(User).where(User.password_hash == "!sso")) == 0
        assert s.scalar(sa.select(sa.func.count()).select_from(UserIdentity)) == 0
        refused = s.scalar(sa.select(AuditEvent).where(AuditEvent.action == "login.sso_refused"))
        assert refused.detail["groups"] == ["visitors", "ghosts"] and refused.actor_id is None
    assert client.get("/", follow_redirects=False).status_code == 303  # not logged in


def test_a_removed_group_refuses_the_next_sign_in_and_ends_the_users_sessions(app, provider):
    with TestClient(app) as first, TestClient(app) as second:
        sign_in(first)
        user = user_named(app.state.sessions, "ada")
        assert first.get("/", follow_redirects=False).status_code == 200
        as_user(provider, [])
        answer = sign_in(second)
        assert answer.status_code == 403 and "Ask your administrator" in answer.text
        assert first.get("/", follow_redirects=False).status_code == 303  # the open session is gone too
        assert memberships(app.state.sessions, user.id) == []
        as_user(provider, ["annotators"])  # given back by the provider: the same user again
        assert sign_in(second).status_code == 303
        assert user_named(app.state.sessions, "ada").id == user.id


def test_users_are_matched_by_issuer_and_subject_only(client, app, provider):
    make_user(app.state.sessions, "ada")  # a local user with the same name is never taken over
    as_user(provider, ["annotators"], email="ada@example.org")
    sign_in(client)
    first = user_named(app.state.sessions, "ada-2")
    assert first is not None and first.password_hash == "!sso"
    as_user(provider, ["annotators"], sub="sub-other", email="ada@example.org")  # same email, another person
    sign_in(client)
    assert user_named(app.state.sessions, "ada-3") is not None
    provider.configure(user={"sub": "sub-ada", "preferred_username": "ada.lovelace", "groups": ["annotators"]})
    sign_in(client)  # a new name at the provider: still the same account
    assert user_named(app.state.sessions, "ada.lovelace") is None
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(UserIdentity)) == 2


def test_a_membership_added_by_hand_is_left_alone(client, app, provider):
    sign_in(client)
    user = user_named(app.state.sessions, "ada")
    with transaction(app.state.sessions) as s:
        s.execute(sa.delete(WorkspaceMember).where(WorkspaceMember.user_id == user.id))
        s.add(WorkspaceMember(workspace_id=s.scalar(sa.text("SELECT default_workspace_id()")), user_id=user.id, role="reviewer"))
    sign_in(client)
    assert memberships(app.state.sessions, user.id) == [("Default", "reviewer", False)]
    as_user(provider, [])
    assert sign_in(client).status_code == 403
    assert memberships(app.state.sessions, user.id) == [("Default", "reviewer", False)]


def test_a_deactivated_user_is_refused(client, app):
    sign_in(client)
    with transaction(app.state.sessions) as s:
        s.execute(sa.update(User).where(User.username == "ada").values(is_active=False))
    answer = sign_in(client)
    assert answer.status_code == 403 and "deactivated" in answer.text


def test_the_pkce_verifier_is_sent_with_the_code(client, provider):
    authorize = parse_qs(urlsplit(start(client)).query)
    assert authorize["code_challenge_method"] == ["S256"] and authorize["nonce"][0] and authorize["state"][0]
    back = httpx.get(start(client))
    challenge = parse_qs(urlsplit(str(back.request.url)).query)["code_challenge"][0]
    assert client.get(back.headers["location"].removeprefix("http://testserver"), follow_redirects=False).status_code == 303
    sent = provider.token_requests()[-1]
    assert sent["grant_type"] == "authorization_code" and create_s256_code_challenge(sent["code_verifier"]) == challenge
    assert sent["code_verifier"] not in str(authorize)  # the verifier never went through the browser's address bar


def test_the_provider_refuses_a_code_without_its_verifier(client, provider):
    """The provider really checks PKCE: the same code with another verifier is refused."""
    back = httpx.get(start(client))
    code = parse_qs(urlsplit(back.headers["location"]).query)["code"][0]
    answer = httpx.post(f"{provider.issuer}/token", auth=(provider.settings()["oidc_client_id"], provider.settings()["oidc_client_secret"]),
                        data={"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK, "code_verifier": "x" * 50})
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_grant"


def test_a_state_that_is_not_this_browsers_is_refused(client, app):
    def code_and_state() -> tuple[str, str]:
        query = parse_qs(urlsplit(httpx.get(start(client)).headers["location"]).query)
        return query["code"][0], query["state"][0]

    for forged in ("forged", "état-forgé", ""):
        code, _ = code_and_state()
        answer = client.get("/login/sso/callback", params={"code": code, "state": forged})
        assert answer.status_code == 400 and "state mismatch" in answer.text, forged
    code, state = code_and_state()
    assert client.get("/login/sso/callback", params={"code": code, "state": state + "x"}).status_code == 400
    again = client.get("/login/sso/callback", params={"code": code, "state": state})
    assert again.status_code == 400 and "already used" in again.text  # the pending sign-in went with the first try
    assert user_named(app.state.sessions, "ada") is None


def test_a_rotated_signing_key_is_fetched_anew(client, app, provider):
    """The key set is cached; a token signed with a key id not in it makes the client read it again."""
    assert sign_in(client).status_code == 303
    provider.configure(rotate_key=True)
    assert sign_in(client).status_code == 303


def test_a_refusal_at_the_provider_is_shown(client, app):
    state = parse_qs(urlsplit(start(client)).query)["state"][0]
    answer = client.get("/login/sso/callback", params={"state": state, "error": "access_denied", "error_description": "<b>No</b> consent"})
    assert answer.status_code == 400 and "The sign-in provider refused: &lt;b&gt;No&lt;/b&gt; consent." in answer.text
    assert user_named(app.state.sessions, "ada") is None


@pytest.mark.parametrize(
    ("claims", "why"),
    [
        ({"nonce": "forged-nonce"}, "nonce mismatch"),
        ({"aud": ["another-app"]}, "audience mismatch"),
        ({"aud": ["vlcurate-test", "another-app"]}, "azp mismatch"),
        ({"iss": "http://127.0.0.1:1"}, "not valid"),
        ({"exp": 1_000_000_000}, "not valid"),
    ],
)
def test_an_id_token_with_wrong_claims_is_refused(client, app, provider, claims, why):
    provider.configure(claims=claims)
    answer = sign_in(client)
    assert answer.status_code == 400 and why in answer.text
    assert user_named(app.state.sessions, "ada") is None
    assert "login.sso_failed" in actions(app.state.sessions)


def test_an_id_token_signed_with_an_unpublished_key_is_refused(client, app, provider):
    provider.configure(unpublished_key=True)
    answer = sign_in(client)
    assert answer.status_code == 400 and "signature" in answer.text
    assert user_named(app.state.sessions, "ada") is None


def test_with_local_passwords_off_the_password_login_is_refused(client, app, settings, provider):
    token = csrf_from(client.get("/login").text)  # a form from before the switch, posted after it
    app.state.settings = sso_settings(settings, provider, local_passwords=False)  # read by each request
    make_user(app.state.sessions, "local", "admin")
    page = client.get("/login")
    assert "Sign in with Test ID" in page.text and 'name="password"' not in page.text
    answer = client.post("/login", data={"username": "local", "password": PASSWORD, "csrf_token": token}, follow_redirects=False)
    assert answer.status_code == 403 and "Password logins are turned off" in answer.text
    assert client.get("/", follow_redirects=False).status_code == 303
    assert "login.refused" in actions(app.state.sessions)
    assert sign_in(client).status_code == 303  # sign-on still works


def test_settings_refuse_an_unusable_sign_on_setup(settings):
    base = settings.model_dump()
    with pytest.raises(pydantic.ValidationError, match="needs VLCURATE_OIDC_ISSUER"):
        Settings(**{**base, "oidc_issuer": None, "local_passwords": False})
    with pytest.raises(pydantic.ValidationError, match="manager is a workspace role"):
        Settings(**{**base, "oidc_groups": {"x": {"role": "manager"}}})
    with pytest.raises(pydantic.ValidationError, match="needs VLCURATE_OIDC_CLIENT_ID"):
        Settings(**{**base, "oidc_client_id": None})


def test_a_nul_in_the_providers_error_description_is_a_clear_400_not_a_500(client, app):
    """The provider's words are shown and kept in the audit log without control characters, cut short."""
    state = parse_qs(urlsplit(start(client)).query)["state"][0]
    answer = client.get("/login/sso/callback", params={"state": state, "error": "access_denied", "error_description": "no\x00consent" + "!" * 5000})
    assert answer.status_code == 400 and "The sign-in provider refused: no consent!!!" in answer.text
    with transaction(app.state.sessions) as s:
        reason = s.scalar(sa.select(AuditEvent.detail["reason"].astext).where(AuditEvent.action == "login.sso_failed"))
    assert reason.startswith("The sign-in provider refused: no consent!") and len(reason) < oidc.SHOWN_CHARS + 50


def test_a_provider_advertising_no_allowed_algorithm_gets_no_library_default(settings):
    """HMAC is refused whatever the provider advertises; with none of the advertised algorithms allowed,
    the list handed to joserfc would be empty, and joserfc would fall back to its default (HS256)."""
    key = OctKey.generate_key(256, parameters={"kid": "k1"})
    doc = {"jwks_uri": "https://idp.invalid/jwks", "id_token_signing_alg_values_supported": ["HS256"]}
    oidc._cache[doc["jwks_uri"]] = (time.monotonic(), {"keys": [key.as_dict(private=True)]})
    token = jwt.encode({"alg": "HS256", "kid": "k1"}, {"sub": "x"}, key)
    try:
        with pytest.raises(oidc.SignInError, match="no signing algorithm"):
            oidc._decode(doc, token)
    finally:
        oidc._cache.pop(doc["jwks_uri"], None)


def test_a_password_login_of_a_sign_on_user_verifies_against_the_dummy_hash(client, app, monkeypatch):
    """A sign-on user has no argon2 hash; their password login must do the same argon2 work as any other
    (verify against the dummy hash), so that its answer time does not tell sign-on accounts apart."""
    assert sign_in(client).status_code == 303
    verified = []
    real = security.verify_password
    monkeypatch.setattr(security, "verify_password", lambda h, p: verified.append(h) or real(h, p))
    with TestClient(app) as other:
        assert login(other, "ada", "!sso").status_code == 401
    assert verified == [security.dummy_hash()] and verified[0].startswith("$argon2")


def _locks_waited(sessions) -> int:
    with transaction(sessions) as s:  # a transaction per look: pg_stat_activity is read once per transaction
        return s.scalar(sa.text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"))


def test_two_first_sign_ins_with_one_preferred_name_at_once_get_two_usernames(committed):
    """Both pick the free name 'grace'; the second's insert waits on the first's, and when the first
    commits it takes the next free name instead of failing on the unique username."""
    sessions, made = committed, {}  # real separate connections
    def claims(sub):
        return {"iss": "https://idp.example", "sub": sub, "preferred_username": "grace"}
    def second():
        with transaction(sessions) as s:
            made["second"] = sso._create(s, claims("s2"), Role.annotator).username
    with transaction(sessions) as first:
        made["first"] = sso._create(first, claims("s1"), Role.annotator).username
        racer = threading.Thread(target=second)
        racer.start()
        deadline = time.monotonic() + 20
        while not _locks_waited(sessions) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert racer.is_alive(), made  # the second insert waits on the first's username
    racer.join(20)
    assert made == {"first": "grace", "second": "grace-2"}
