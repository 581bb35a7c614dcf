"""Webhooks end to end: a real HTTP receiver verifies every delivery's signature with the specification's
algorithm (written out here, not the app's module); a receiver that fails twice then accepts gets each
event accepted exactly once, and the delivery log shows the two failures and the success; the test
button; managers only; http(s) URLs only; the secret never in a log line or the audit trail."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.db import transaction
from app.errors import Invalid
from app.models import AuditEvent, MemberRole, User, Webhook, WebhookAttempt, WebhookDelivery, Workspace, WorkspaceMember
from app.services.users.workspaces import default_workspace_id
from app.services.webhooks import delivery, events, hooks
from app.worker import jobs, runtime
from tests import factories
from tests.conftest import csrf_from, login


@pytest.fixture
def settings(settings):
    """Retries after 50 ms, then 200 ms: the test waits for the backoff, not for minutes; the receiver
    listens on loopback, which deliveries reach only when private addresses are allowed."""
    return settings.model_copy(
        update={"webhook_backoff_seconds": 0.05, "webhook_timeout_seconds": 5, "webhook_private_addresses": True}
    )


class Receiver:
    """An HTTP endpoint on a free port that answers each webhook-id's first `fail` posts with 500, then 200,
    and keeps every post with whether its signature verified."""

    def __init__(self, fail: int = 0) -> None:
        self.fail, self.secret, self.posts, self.lock = fail, None, [], threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver.lock:
                    seen = sum(p["id"] == headers.get("webhook-id") for p in receiver.posts)
                    status = 500 if seen < receiver.fail else 200
                    receiver.posts.append({"id": headers.get("webhook-id"), "body": json.loads(body), "status": status,
                                           "host": headers.get("host"),
                                           "verified": spec_verify(receiver.secret, headers, body)})
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def accepted(self) -> Counter:
        return Counter(p["body"]["type"] for p in self.posts if p["status"] == 200)


@pytest.fixture
def receiver():
    made: list[Receiver] = []

    def make(fail: int = 0) -> Receiver:
        made.append(Receiver(fail))
        return made[-1]

    yield make
    for r in made:
        r.server.shutdown()


def spec_verify(secret: str | None, headers: dict[str, str], body: bytes) -> bool:
    """The Standard Webhooks check as the specification writes it: HMAC-SHA256 keyed by the base64-decoded
    secret over "{id}.{timestamp}.{body}", base64, after "v1,"; and a timestamp within five minutes."""
    if secret is None:
        return False
    key = base64.b64decode(secret.split("_", 1)[1])
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    fresh = abs(time.time() - int(headers["webhook-timestamp"])) <= 300
    return fresh and any(s.startswith("v1,") and hmac.compare_digest(s[3:], expected) for s in headers["webhook-signature"].split())


def deliver_all(settings, sessions, timeout: float = 30) -> None:
    """Run the webhook queue's worker until no delivery is pending (retries come due after their backoff)."""
    runtime.configure(settings)
    app = jobs.make_app(settings)
    deadline = time.monotonic() + timeout
    while True:
        app.run_worker(queues=["webhook"], wait=False, install_signal_handlers=False)
        with transaction(sessions) as s:
            if not s.scalar(sa.select(sa.func.count()).where(WebhookDelivery.status == "pending")):
                return
        assert time.monotonic() < deadline, "deliveries still pending"
        time.sleep(0.05)


def test_a_receiver_that_fails_twice_gets_each_event_accepted_exactly_once(committed, settings, app, receiver):
    hook_receiver = receiver(fail=2)
    with transaction(committed) as s:
        admin = factories.bearer(s, "boss", "admin")
        annotator = factories.user(s, "ann")
        project_id, (stage_id,) = factories.project(s, "generic.choice")
        factories.choice_items(s, app.state.settings, app.state.storage, project_id, 2, app.state.settings.data_dir / "in")
        workspace_id = default_workspace_id(s)
    with TestClient(app) as http:
        r = http.post(f"/api/v1/workspaces/{workspace_id}/webhooks", headers=admin,
                      json={"url": hook_receiver.url, "events": ["item.finalized", "stage.completed"]})
        assert r.status_code == 201, r.text
        hook_receiver.secret, hook_id = r.json()["secret"], r.json()["id"]
        with transaction(committed) as s:
            first = factories.annotation(s, stage_id, annotator, {"choice": "a"})
        with transaction(committed) as s:
            second = factories.annotation(s, stage_id, annotator, {"choice": "b"})
        assert (first.item_status, second.item_status) == ("done", "done")
        deliver_all(settings, committed)
        detail = http.get(f"/api/v1/webhooks/{hook_id}", headers=admin).json()
    posts = hook_receiver.posts
    assert posts and all(p["verified"] for p in posts)
    assert hook_receiver.accepted() == {"item.finalized": 2, "stage.completed": 1}  # the stage completes with its last item
    accepted_ids = [p["id"] for p in posts if p["status"] == 200]
    assert len(accepted_ids) == len(set(accepted_ids)) == 3
    for message_id in accepted_ids:  # the same webhook-id on every retry: 500, 500, then 200
        assert [p["status"] for p in posts if p["id"] == message_id] == [500, 500, 200]
    finalized = [p["body"] for p in posts if p["status"] == 200 and p["body"]["type"] == "item.finalized"]
    assert sorted(b["data"]["record"]["choice"] for b in finalized) == ["a", "b"]
    assert {b["data"]["project_id"] for b in finalized} == {project_id}
    assert len(detail["deliveries"]) == 3
    for d in detail["deliveries"]:
        assert d["status"] == "delivered"
        assert [(a["attempt"], a["status_code"]) for a in d["attempts"]] == [(1, 500), (2, 500), (3, 200)]
        assert all(a["duration_ms"] >= 0 for a in d["attempts"])
    # A delivery's job run again (a stalled worker's copy) sends nothing: the delivery is accepted.
    from app.worker.webhook_job import deliver_webhook

    runtime.configure(settings)
    assert deliver_webhook(detail["deliveries"][0]["id"]) == "nothing to send"
    assert len(hook_receiver.posts) == len(posts)


def test_no_webhook_means_no_delivery_and_a_failing_receiver_ends_failed(committed, settings, app, receiver):
    with transaction(committed) as s:
        annotator = factories.user(s, "ann")
        admin = factories.user(s, "boss", "admin")
        project_id, (stage_id,) = factories.project(s, "generic.choice")
        factories.choice_items(s, app.state.settings, app.state.storage, project_id, 3, app.state.settings.data_dir / "in")
    with transaction(committed) as s:
        factories.annotation(s, stage_id, annotator, {"choice": "a"})  # nobody listens
        assert s.scalar(sa.text("SELECT count(*) FROM procrastinate_jobs WHERE task_name = 'vlcurate:deliver_webhook'")) == 0
    from app.models import User
    from app.services.webhooks import hooks

    down = receiver(fail=99)
    with transaction(committed) as s:
        boss = s.get(User, admin)
        view, down.secret = hooks.create(s, boss, default_workspace_id(s), down.url, ["item.finalized"])
        hooks.create(s, boss, default_workspace_id(s), down.url, ["item.finalized"], enabled=False)
    with transaction(committed) as s:
        factories.annotation(s, stage_id, annotator, {"choice": "c"})
    deliver_all(settings.model_copy(update={"webhook_attempts": 3}), committed)
    with transaction(committed) as s:
        rows = s.execute(sa.select(WebhookDelivery.webhook_id, WebhookDelivery.status)).all()
    assert rows == [(view.id, "failed")]  # the disabled webhook got nothing
    assert [p["status"] for p in down.posts] == [500, 500, 500] and all(p["verified"] for p in down.posts)


def test_a_receiver_on_the_servers_own_network_is_refused_unless_allowed(committed, settings, app, receiver):
    """Loopback (as any private address) is refused by default: the receiver gets nothing and the log
    says why; the setting lets it through, with the Host header still the URL's."""
    from app.models import User
    from app.services.webhooks import delivery, hooks

    inside = receiver()
    with transaction(committed) as s:
        boss = s.get(User, factories.user(s, "boss", "admin"))
        annotator = factories.user(s, "ann")
        project_id, (stage_id,) = factories.project(s, "generic.choice")
        factories.choice_items(s, app.state.settings, app.state.storage, project_id, 2, app.state.settings.data_dir / "in")
        view, inside.secret = hooks.create(s, boss, default_workspace_id(s), inside.url.replace("127.0.0.1", "localhost"),
                                           ["item.finalized"])
    with transaction(committed) as s:
        factories.annotation(s, stage_id, annotator, {"choice": "a"})
    deliver_all(settings.model_copy(update={"webhook_private_addresses": False, "webhook_attempts": 2}), committed)
    assert inside.posts == []
    with transaction(committed) as s:
        errors = s.scalars(sa.select(WebhookAttempt.error).order_by(WebhookAttempt.id)).all()
        assert s.scalar(sa.select(WebhookDelivery.status)) == "failed"
    assert len(errors) == 2 and all(e.startswith("refused: localhost resolves to 127.0.0.1") for e in errors)
    with pytest.raises(delivery.AddressRefused, match="non-public"):
        delivery.pinned("https://169.254.169.254/latest/meta-data", allow_private=False)
    url, host = delivery.pinned(inside.url.replace("127.0.0.1", "localhost"), allow_private=True)
    assert (url.host, host) == ("127.0.0.1", "localhost")
    with transaction(committed) as s:
        factories.annotation(s, stage_id, annotator, {"choice": "b"})
    deliver_all(settings, committed)
    assert [p["status"] for p in inside.posts] == [200] and inside.posts[0]["verified"]
    assert inside.posts[0]["host"] == f"localhost:{inside.server.server_address[1]}"


def _workspace_with_manager(s, name: str, manager: str) -> tuple[int, int]:
    workspace = Workspace(name=name)
    s.add(workspace)
    s.flush()
    user_id = factories.user(s, manager)
    s.add(WorkspaceMember(workspace_id=workspace.id, user_id=user_id, role=MemberRole.manager))
    s.flush()
    return workspace.id, user_id


def test_the_test_button_delivers_a_webhook_test_event_and_shows_it_in_the_log(committed, settings, app, receiver, caplog):
    caplog.set_level(logging.DEBUG)
    target = receiver()
    with transaction(committed) as s:
        workspace_id, _ = _workspace_with_manager(s, "Lab A", "lead")
    with TestClient(app) as browser:
        assert login(browser, "lead").status_code == 303
        page = browser.get(f"/workspaces/{workspace_id}/webhooks")
        assert page.status_code == 200
        r = browser.post(f"/workspaces/{workspace_id}/webhooks", data={
            "csrf_token": csrf_from(page.text), "url": target.url, "events": ["export.finished"], "enabled": "on"}, follow_redirects=False)
        assert r.status_code == 303
        shown = browser.get(r.headers["location"])
        target.secret = shown.text.split('<code id="webhook-secret">')[1].split("</code>")[0]
        assert target.secret.startswith("whsec_") and shown.headers["cache-control"] == "no-store"
        again = browser.get(r.headers["location"])
        assert target.secret not in again.text  # shown once
        hook_id = int(r.headers["location"].rsplit("/", 1)[1])
        r = browser.post(f"/webhooks/{hook_id}/test", data={"csrf_token": csrf_from(again.text)}, follow_redirects=False)
        assert r.status_code == 303
        deliver_all(settings, committed)
        log_page = browser.get(f"/webhooks/{hook_id}").text
    assert [(p["body"]["type"], p["status"], p["verified"]) for p in target.posts] == [("webhook.test", 200, True)]
    assert target.posts[0]["body"]["data"]["webhook_id"] == hook_id
    assert "webhook.test" in log_page and "HTTP 200" in log_page and target.posts[0]["id"] in log_page
    with transaction(committed) as s:
        audit = s.execute(sa.select(AuditEvent.action, AuditEvent.detail)).all()
        stored = s.scalar(sa.select(Webhook.secret))
    assert stored == target.secret
    assert ("webhook.create", ) == tuple(a for a, _ in audit if a.startswith("webhook."))
    assert target.secret not in json.dumps([d for _, d in audit])
    assert target.secret.removeprefix("whsec_") not in caplog.text and target.secret not in caplog.text


def test_a_non_manager_can_neither_see_nor_change_another_workspaces_webhooks(app, client):
    with transaction(app.state.sessions) as s:
        a_id, _ = _workspace_with_manager(s, "Lab A", "lead-a")
        b_id, _ = _workspace_with_manager(s, "Lab B", "lead-b")
        hook = Webhook(workspace_id=b_id, url="https://b.example/hook", secret="whsec_" + "A" * 44, events=["item.finalized"])
        s.add(hook)
        s.flush()
        hook_id = hook.id
        outsider = factories.bearer(s, "reviewer-x", "reviewer")
        lead_a = {"Authorization": f"Bearer {factories.token(s, s.scalar(sa.text('SELECT id FROM users WHERE username = :u'), {'u': 'lead-a'}))}"}
    assert login(client, "lead-a").status_code == 303
    csrf = csrf_from(client.get(f"/workspaces/{a_id}/webhooks").text)
    for method, path, data in [("GET", f"/workspaces/{b_id}/webhooks", None), ("GET", f"/webhooks/{hook_id}", None),
                               ("POST", f"/workspaces/{b_id}/webhooks", {"url": "https://evil.example", "events": "item.finalized"}),
                               ("POST", f"/webhooks/{hook_id}", {"url": "https://evil.example", "events": "item.finalized"}),
                               ("POST", f"/webhooks/{hook_id}/test", {}), ("POST", f"/webhooks/{hook_id}/delete", {})]:
        r = client.request(method, path, data={**data, "csrf_token": csrf} if data is not None else None, follow_redirects=False)
        assert r.status_code == 404, (method, path, r.status_code)
        assert "b.example" not in r.text and "Lab B" not in r.text
    for headers in (outsider, lead_a):
        assert client.get(f"/api/v1/workspaces/{b_id}/webhooks", headers=headers).status_code == 404
        assert client.get(f"/api/v1/webhooks/{hook_id}", headers=headers).status_code == 404
        assert client.patch(f"/api/v1/webhooks/{hook_id}", headers=headers, json={"enabled": False}).status_code == 404
        assert client.post(f"/api/v1/webhooks/{hook_id}/test", headers=headers).status_code == 404
        assert client.delete(f"/api/v1/webhooks/{hook_id}", headers=headers).status_code == 404
        assert client.post(f"/api/v1/workspaces/{b_id}/webhooks", headers=headers,
                           json={"url": "https://evil.example", "events": ["item.finalized"]}).status_code == 404
    assert client.get(f"/api/v1/workspaces/{a_id}/webhooks", headers=lead_a).json() == []
    with transaction(app.state.sessions) as s:
        kept = s.get(Webhook, hook_id)
        assert (kept.url, kept.enabled, s.scalar(sa.select(sa.func.count()).select_from(WebhookDelivery))) == ("https://b.example/hook", True, 0)


@pytest.mark.parametrize("url", ["ftp://files.example/hook", "javascript:alert(1)", "file:///etc/passwd", "example.org/hook",
                                 "http://", "https:///path-only", "", "http://example.com:abc/hook"])
def test_urls_that_are_not_http_are_refused_with_422_and_nothing_is_stored(app, client, url):
    with transaction(app.state.sessions) as s:
        admin = factories.bearer(s, "boss", "admin")
        workspace_id = default_workspace_id(s)
    r = client.post(f"/api/v1/workspaces/{workspace_id}/webhooks", headers=admin, json={"url": url, "events": ["item.finalized"]})
    assert r.status_code == 422, r.text
    assert "http" in r.text.lower() or "url" in r.text.lower()
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Webhook)) == 0
        assert s.scalar(sa.select(sa.func.count()).select_from(AuditEvent).where(AuditEvent.action.like("webhook.%"))) == 0


def test_changes_are_audited_without_the_secret_and_bad_events_are_refused(app, client):
    with transaction(app.state.sessions) as s:
        admin = factories.bearer(s, "boss", "admin")
        workspace_id = default_workspace_id(s)
    r = client.post(f"/api/v1/workspaces/{workspace_id}/webhooks", headers=admin,
                    json={"url": "https://a.example/h", "events": ["item.finalized"]})
    hook_id, secret = r.json()["id"], r.json()["secret"]
    assert client.patch(f"/api/v1/webhooks/{hook_id}", headers=admin, json={"events": ["item.exploded"]}).status_code == 422
    r = client.patch(f"/api/v1/webhooks/{hook_id}", headers=admin, json={"url": "https://b.example/h", "enabled": False})
    assert r.status_code == 200 and r.json()["enabled"] is False and "secret" not in r.json()
    listed = client.get(f"/api/v1/workspaces/{workspace_id}/webhooks", headers=admin)
    assert secret not in listed.text and secret not in client.get(f"/api/v1/webhooks/{hook_id}", headers=admin).text
    assert client.delete(f"/api/v1/webhooks/{hook_id}", headers=admin).status_code == 204
    with transaction(app.state.sessions) as s:
        events = s.execute(sa.select(AuditEvent.action, AuditEvent.target, AuditEvent.detail).order_by(AuditEvent.id)
                           .where(AuditEvent.action.like("webhook.%"))).all()
    assert [(a, t) for a, t, _ in events] == [("webhook.create", f"webhook:{hook_id}"), ("webhook.update", f"webhook:{hook_id}"),
                                             ("webhook.delete", f"webhook:{hook_id}")]
    assert events[1][2]["before"] == {"url": "https://a.example/h", "enabled": True}
    assert events[1][2]["after"] == {"url": "https://b.example/h", "enabled": False}
    assert secret not in json.dumps([d for _, _, d in events])


def test_a_finished_export_queues_export_finished_in_the_same_transaction(committed, app):
    from app.models import User
    from app.services.exports import export
    from app.services.webhooks import hooks

    sessions = committed
    with transaction(sessions) as s:
        admin = s.get(User, factories.user(s, "boss", "admin"))
        project_id, (stage_id,) = factories.project(s, "generic.choice")
        view, _ = hooks.create(s, admin, default_workspace_id(s), "https://receiver.example/h", ["export.finished"])
        export_id = export.create_export(s, project_id, "jsonl", settings=app.state.settings).id
    export.run_export(sessions, app.state.storage, app.state.settings, export_id)
    with transaction(sessions) as s:
        sent = s.execute(sa.select(WebhookDelivery.id, WebhookDelivery.event_type, WebhookDelivery.body)).all()
        queued = s.execute(sa.text("SELECT queue_name, args FROM procrastinate_jobs WHERE task_name = 'vlcurate:deliver_webhook'")).all()
    assert [(t, json.loads(b)["data"]["export_id"], json.loads(b)["data"]["project_id"]) for _, t, b in sent] == [
        ("export.finished", export_id, project_id)]
    assert queued == [("webhook", {"delivery_id": sent[0][0]})]


def test_a_reviewers_final_queues_item_finalized_and_the_last_one_stage_completed(session, settings, storage, tmp_path):
    from app.models import Item, Stage, User
    from app.services.annotation.pipeline import finalize
    from app.services.webhooks import hooks

    admin = session.get(User, factories.user(session, "boss", "admin"))
    project_id, (stage_id,) = factories.project(session, "generic.choice")
    factories.choice_items(session, settings, storage, project_id, 2, tmp_path)
    hooks.create(session, admin, default_workspace_id(session), "https://receiver.example/h", ["item.finalized", "stage.completed"])
    stage = session.get(Stage, stage_id)
    for n, item_id in enumerate(factories.item_ids(session, project_id)):
        finalize(session, session.get(Item, item_id), stage, {"choice": "b"}, discard=False, source="review", actor_id=admin.id)
        sent = [json.loads(b) for b in session.scalars(sa.select(WebhookDelivery.body).order_by(WebhookDelivery.id))]
        assert [b["type"] for b in sent] == ["item.finalized"] * (n + 1) + (["stage.completed"] if n == 1 else [])
        assert sent[n]["data"] == {"item_id": item_id, "project_id": project_id, "stage_id": stage_id, "record": {"choice": "b"},
                                   "discard": False, "source": "review"}


def test_a_webhook_url_with_a_bad_port_is_refused_when_saved_not_crashed_in_the_worker(app):
    """A port that is no number is refused on saving; one stored before is a failed attempt, never an
    exception that kills the delivery job and leaves the delivery pending for ever."""
    with pytest.raises(Invalid) as refused:
        hooks.check_url("http://example.com:abc/hook")
    assert refused.value.status_code == 422 and refused.value.field == "url"
    d = delivery.Pending(1, "http://example.com:abc/hook", "whsec_" + "A" * 44, "msg_x", "{}", 1)
    outcome = delivery.send(d, 1.0, allow_private=False)
    assert (outcome.status_code, outcome.accepted) == (None, False) and outcome.error.startswith("InvalidURL")


def _attempt_errors(s, delivery_id: int) -> list[str | None]:
    return list(s.scalars(sa.select(WebhookAttempt.error).where(WebhookAttempt.delivery_id == delivery_id)))


def test_a_disabled_webhook_gets_no_more_retries(app):
    """Disabling a webhook cancels what is queued to it (failed, "cancelled" in its log); a delivery found
    pending to a disabled webhook is cancelled by the worker too, but for the test button's."""
    with transaction(app.state.sessions) as s:
        admin = s.get(User, factories.user(s, "hookadmin2", "admin"))
        view, _ = hooks.create(s, admin, default_workspace_id(s), "https://example.org/hook", ["item.finalized"])
        assert events.emit(s, view.workspace_id, "item.finalized", {}) == 1
        queued = s.scalar(sa.select(WebhookDelivery.id).where(WebhookDelivery.webhook_id == view.id))
        assert delivery.pending(s, queued) is not None
        hooks.update(s, admin, view.id, enabled=False)
    with transaction(app.state.sessions) as s:
        assert delivery.pending(s, queued) is None
        assert s.get(WebhookDelivery, queued).status == "failed"
        assert _attempt_errors(s, queued) == [delivery.CANCELLED]
        events.emit_to(s, view.id, hooks.TEST_EVENT, {})  # the test button works on a disabled webhook
        test_id = s.scalar(sa.select(sa.func.max(WebhookDelivery.id)))
        assert delivery.pending(s, test_id).attempt == 1
        late = WebhookDelivery(webhook_id=view.id, message_id="msg_late", event_type="item.finalized", body="{}")
        s.add(late)  # queued by a change that committed while the webhook was being disabled
        s.flush()
        assert delivery.pending(s, late.id) is None
        status = s.scalar(sa.select(WebhookDelivery.status).where(WebhookDelivery.id == late.id))
        assert (status, _attempt_errors(s, late.id)) == ("failed", [delivery.CANCELLED])
