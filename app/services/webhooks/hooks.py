"""A workspace's webhooks: create, change, delete and list them, for the workspace's managers and admins only.

Whoever does not manage the workspace is answered "not found", never "forbidden", so that no
workspace's or webhook's existence leaks. Every change is an audit event, without the secret.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from urllib.parse import urlsplit

import httpx
import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.orm import Session

from app.errors import Invalid, NotFound
from app.models import Webhook, Workspace
from app.services.users import audit
from app.services.users.workspaces import manages
from app.services.webhooks import delivery, signing

EVENTS = ("item.finalized", "stage.completed", "export.finished", "annotator.paused")
TEST_EVENT = delivery.TEST_EVENT
MAX_URL = 2000
NO_WORKSPACE = "No such workspace."
NO_WEBHOOK = "No such webhook."


class WebhookView(BaseModel):
    """A webhook as pages and the API show it: never its secret."""

    id: int
    workspace_id: int
    url: str
    events: list[str]
    enabled: bool
    created_at: datetime

    @classmethod
    def of(cls, hook: Webhook) -> WebhookView:
        return cls(id=hook.id, workspace_id=hook.workspace_id, url=hook.url, events=list(hook.events), enabled=hook.enabled,
                   created_at=hook.created_at)


def check_url(url: str) -> str:
    """An absolute http(s) URL with a host, or Invalid (422) saying what is wrong."""
    url = url.strip()
    if not url:
        raise Invalid("Give the URL the events are posted to.", field="url")
    if len(url) > MAX_URL:
        raise Invalid(f"The URL is longer than {MAX_URL} characters.", field="url")
    try:  # a port that is no number fails on reading it; httpx, which sends the deliveries, must read it too
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL):
        raise Invalid(f"'{url[:200]}' is not a URL (check its host and port).", field="url") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise Invalid(f"Webhook URLs must start with http:// or https:// (got '{parts.scheme or url[:40]}').", field="url")
    if not host or any(c.isspace() or not c.isprintable() for c in url):
        raise Invalid(f"'{url[:200]}' names no host (write it as https://host/path).", field="url")
    return url


def check_events(events: Iterable[str]) -> list[str]:
    chosen = sorted({e.strip() for e in events if e.strip()})
    unknown = [e for e in chosen if e not in EVENTS]
    if unknown:
        raise Invalid(f"Unknown event type {', '.join(unknown)}; the events are {', '.join(EVENTS)}.", field="events")
    if not chosen:
        raise Invalid("Choose at least one event to send.", field="events")
    return chosen


def managed_workspace(session: Session, user, workspace_id: int) -> Workspace:
    """The workspace, if `user` manages it (an admin, or its manager); else NotFound."""
    workspace = session.get(Workspace, workspace_id)
    if workspace is None or not manages(session, user, workspace_id):
        raise NotFound(NO_WORKSPACE)
    return workspace


def managed_hook(session: Session, user, webhook_id: int) -> Webhook:
    hook = session.get(Webhook, webhook_id)
    if hook is None or not manages(session, user, hook.workspace_id):
        raise NotFound(NO_WEBHOOK)
    return hook


def hooks_of(session: Session, user, workspace_id: int) -> list[WebhookView]:
    managed_workspace(session, user, workspace_id)
    rows = session.scalars(sa.select(Webhook).where(Webhook.workspace_id == workspace_id).order_by(Webhook.id))
    return [WebhookView.of(h) for h in rows]


def _shown(hook: Webhook) -> dict:
    return {"url": hook.url, "events": list(hook.events), "enabled": hook.enabled}


def create(session: Session, user, workspace_id: int, url: str, events: Iterable[str], enabled: bool = True) -> tuple[WebhookView, str]:
    """A new webhook and its secret, which is shown this once."""
    managed_workspace(session, user, workspace_id)
    hook = Webhook(workspace_id=workspace_id, url=check_url(url), events=check_events(events), enabled=enabled,
                   secret=signing.new_secret())
    session.add(hook)
    session.flush()
    audit.record(session, "webhook.create", actor_id=user.id, target=f"webhook:{hook.id}", workspace=workspace_id, **_shown(hook))
    return WebhookView.of(hook), hook.secret


def update(session: Session, user, webhook_id: int, *, url: str | None = None, events: Iterable[str] | None = None,
           enabled: bool | None = None) -> WebhookView:
    """Change what is given; an audit event names the values before and after."""
    hook = managed_hook(session, user, webhook_id)
    before = _shown(hook)
    if url is not None:
        hook.url = check_url(url)
    if events is not None:
        hook.events = check_events(events)
    if enabled is not None:
        if hook.enabled and not enabled:
            delivery.cancel(session, hook.id)  # a disabled webhook gets no more retries
        hook.enabled = enabled
    after = _shown(hook)
    if after != before:
        session.flush()
        audit.record(session, "webhook.update", actor_id=user.id, target=f"webhook:{hook.id}", workspace=hook.workspace_id,
                     **audit.changes(before, after))
    return WebhookView.of(hook)


def delete(session: Session, user, webhook_id: int) -> int:
    """Delete the webhook with its delivery log; returns its workspace's id."""
    hook = managed_hook(session, user, webhook_id)
    workspace_id = hook.workspace_id
    audit.record(session, "webhook.delete", actor_id=user.id, target=f"webhook:{hook.id}", workspace=workspace_id, **_shown(hook))
    session.delete(hook)
    session.flush()
    return workspace_id
