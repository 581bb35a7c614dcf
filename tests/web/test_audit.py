"""The audit trail: append-only in the database, one row per change with before -> after and the
client's address, never a secret; the admin page and the API with their filters and keyset pages."""

from __future__ import annotations

import html
import json

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.db import transaction
from app.models import AuditEvent, User
from app.services.users.audit import WITHHELD, changes, record, scrub
from tests import factories
from tests.conftest import csrf_from, login


def _events(sessions, action: str) -> list[AuditEvent]:
    with transaction(sessions) as s:
        return list(s.scalars(sa.select(AuditEvent).where(AuditEvent.action == action).order_by(AuditEvent.id)))


# -- append-only ----------------------------------------------------------------------------------


def test_the_database_refuses_to_change_or_delete_an_event_but_a_user_can_still_be_deleted(committed):
    with transaction(committed) as s:
        gone = factories.user(s, "leaving", "admin")
        record(s, "user.update", actor_id=gone, target="user:1", before={"role": "annotator"}, after={"role": "reviewer"})
    for statement in ("UPDATE audit_events SET action = 'x'", "DELETE FROM audit_events",
                      "UPDATE audit_events SET actor_id = NULL"):
        with pytest.raises(sa.exc.DBAPIError, match="append-only"), transaction(committed) as s:
            s.execute(sa.text(statement))
    with transaction(committed) as s:
        s.execute(sa.delete(User).where(User.id == gone))
    [event] = _events(committed, "user.update")
    assert event.actor_id is None and event.detail == {"before": {"role": "annotator"}, "after": {"role": "reviewer"}}


# -- what a change records ----------------------------------------------------------------------


def test_secrets_are_withheld_at_any_depth():
    assert scrub({"password_hash": "x", "after": {"api_key": "k", "name": "n"}, "l": [{"secret": 1}], "token": "t", "tokens": 9}) == {
        "password_hash": WITHHELD, "after": {"api_key": WITHHELD, "name": "n"}, "l": [{"secret": WITHHELD}], "token": WITHHELD, "tokens": 9}
    assert changes({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 4}) == {"before": {"b": 2, "c": None}, "after": {"b": 3, "c": 4}}


@pytest.fixture
def admin_browser(app, committed):
    with transaction(committed) as s:
        factories.user(s, "root", "admin")
        target = factories.user(s, "bob", "annotator")
    with TestClient(app) as browser:
        assert login(browser, "root").status_code == 303
        yield browser, target


def _post(browser, path: str, **data):
    token = csrf_from(browser.get("/admin/users").text)
    return browser.post(path, data={"csrf_token": token, **data}, follow_redirects=True)


def test_user_role_password_and_token_changes_record_before_after_and_address_never_a_secret(admin_browser, committed):
    browser, bob = admin_browser
    assert _post(browser, f"/admin/users/{bob}", role="reviewer", is_active="on").status_code == 200
    password_page = _post(browser, f"/admin/users/{bob}/password").text
    token_page = _post(browser, f"/admin/users/{bob}/tokens", name="ci").text
    [update] = _events(committed, "user.update")
    assert update.detail == {"before": {"role": "annotator"}, "after": {"role": "reviewer"}}  # only what changed
    assert update.ip == "testclient" and update.target == f"user:{bob}"
    [token_event] = _events(committed, "token.create")
    assert token_event.detail == {"user_id": bob, "name": "ci"} and token_event.ip == "testclient"
    assert _events(committed, "user.password_reset")[0].ip == "testclient"
    with transaction(committed) as s:
        logged = json.dumps([[e.target, e.detail] for e in s.scalars(sa.select(AuditEvent))])
        hashes = [h for h in s.scalars(sa.select(User.password_hash)) if h]
        token_hashes = list(s.execute(sa.text("SELECT token_hash FROM api_tokens")).scalars())
    password = html.unescape(password_page.split('id="one-time-password">')[1].split("<")[0])
    plain_token = html.unescape(token_page.split('id="new-token">')[1].split("<")[0])
    assert len(password) >= 8 and len(plain_token) >= 16
    for secret in [password, plain_token, *hashes, *token_hashes]:
        assert secret not in logged


# -- reading it -----------------------------------------------------------------------------------


def test_admin_page_filters_escapes_and_pages(admin_browser, committed):
    browser, bob = admin_browser
    with transaction(committed) as s:
        for n in range(105):
            record(s, "project.update", target=f"project:{n}", before={"name": f"p{n}"}, after={"name": f"<b>q{n}</b>"})
        record(s, "login.failed", target="<script>alert(1)</script>")
    page = browser.get("/admin/audit", params={"action": "project."})
    assert page.status_code == 200
    assert page.text.count('class="audit-row"') == 100 and "<b>q" not in page.text and "\\u003cb\\u003eq104" in page.text
    older = page.text.split('href="/admin/audit?')[1].split('"')[0].replace("&amp;", "&")
    rest = browser.get("/admin/audit?" + older)
    assert rest.text.count('class="audit-row"') == 5 and "p0" in rest.text and "Older events" not in rest.text
    escaped = browser.get("/admin/audit", params={"action": "login."}).text
    assert "<script>alert(1)</script>" not in escaped and "&lt;script&gt;" in escaped
    assert browser.get("/admin/audit", params={"since": "yesterday"}).status_code in (400, 422)


def test_api_filters_by_action_actor_target_and_dates_and_pages_by_id(app, committed):
    with transaction(committed) as s:
        root = factories.user(s, "root", "admin")
        headers = factories.bearer(s, "api-admin", "admin")
        for n in range(5):
            record(s, "splits.save", actor_id=root, target=f"project:{n % 2}", version=n)
        record(s, "export.create", actor_id=root, target="project:0")
    with TestClient(app) as api:
        first = api.get("/api/v1/audit", params={"action": "splits.", "actor": "root", "limit": 2}, headers=headers).json()
        assert [e["detail"]["version"] for e in first["events"]] == [4, 3] and first["events"][0]["actor"] == "root"
        second = api.get("/api/v1/audit", params={"action": "splits.", "limit": 2, "before": first["next"]}, headers=headers).json()
        assert [e["detail"]["version"] for e in second["events"]] == [2, 1]
        target = api.get("/api/v1/audit", params={"target": "project:0", "action": "splits"}, headers=headers).json()
        assert [e["detail"]["version"] for e in target["events"]] == [4, 2, 0] and target["next"] is None
        assert len(api.get("/api/v1/audit", params={"target": "project:"}, headers=headers).json()["events"]) == 6
        assert api.get("/api/v1/audit", params={"until": "2000-01-01"}, headers=headers).json()["events"] == []
        assert len(api.get("/api/v1/audit", params={"since": "2000-01-01", "actor": "root"}, headers=headers).json()["events"]) == 6
        assert api.get("/api/v1/audit", params={"actor": "nobody"}, headers=headers).json()["events"] == []
        assert api.get("/api/v1/audit", params={"since": "soon"}, headers=headers).status_code in (400, 422)
        with transaction(committed) as s:
            reviewer = factories.bearer(s, "rev", "reviewer")
        assert api.get("/api/v1/audit", headers=reviewer).status_code == 403


def test_split_and_prompt_versions_record_what_changed_from_the_version_before(session, monkeypatch):
    from app.services.drafting import prompts
    from app.services.exports import splits

    project_id, [stage_id] = factories.project(session)
    splits.save_definition(session, project_id, {"ratios": {"train": 1.0}, "seed": 1})
    splits.save_definition(session, project_id, {"ratios": {"train": 0.5, "test": 0.5}, "seed": 1})
    saved = session.scalars(sa.select(AuditEvent).where(AuditEvent.action == "splits.save").order_by(AuditEvent.id)).all()
    assert saved[0].detail["before"] == {"config": None} and saved[0].detail["after"]["config"]["ratios"] == {"train": 1.0}
    assert saved[1].detail["before"]["config"]["ratios"] == {"train": 1.0} and saved[1].detail["after"]["config"]["order"] == ["train", "test"]

    kind = factories.choice_draft_kind()
    factories.install_draft_kind(monkeypatch, kind, "generic")
    factories.prompt(session, stage_id, kind.name)
    factories.prompt(session, stage_id, kind.name, note="shorter", settings={"max_tokens": 8})
    first, second = session.scalars(sa.select(AuditEvent).where(AuditEvent.action == "prompt.version").order_by(AuditEvent.id)).all()
    assert first.detail["before"] == {k: None for k in first.detail["after"]}  # the first version: everything is new
    assert second.detail["before"] == {"settings": first.detail["after"]["settings"], "note": ""}
    assert second.detail["after"]["note"] == "shorter" and second.detail["after"]["settings"]["max_tokens"] == 8
