"""A workspace's webhooks, for its managers and admins: the pages (list, create, edit, delete, test, the
delivery log) and the API (/api/v1/workspaces/{id}/webhooks, /api/v1/webhooks/{id}). Anyone else gets 404."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request, Response
from fastapi.responses import RedirectResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from app.errors import DomainError
from app.services.webhooks import delivery, events, hooks
from app.web.deps import Db, Id, Posted, Principal, api_user, csrf_protect, page_user, savepoint
from app.web.flash import flash, secret_notice, take_flash, take_secret_notice
from app.web.limits import ApiRouter
from app.web.templating import render

pages = APIRouter(dependencies=[Depends(csrf_protect)])
router = ApiRouter(tags=["webhooks"])
EventList = Annotated[list[str], Field(max_length=len(hooks.EVENTS), description=f"Of: {', '.join(hooks.EVENTS)}")]


def send_test(session: Session, user, webhook_id: int) -> int:
    """Queue a `webhook.test` event to the webhook (after the manager check); how many deliveries were queued."""
    hook = hooks.managed_hook(session, user, webhook_id)
    return events.emit_to(session, hook.id, hooks.TEST_EVENT, {"webhook_id": hook.id, "workspace_id": hook.workspace_id,
                                                                "requested_by": user.username})


# -- pages --------------------------------------------------------------------------------------------------


def _list_context(session: Session, user, workspace_id: int, **extra) -> dict:
    workspace = hooks.managed_workspace(session, user, workspace_id)
    return {"workspace": workspace, "hooks": hooks.hooks_of(session, user, workspace_id), "events": hooks.EVENTS,
            "form": {"url": "", "events": list(hooks.EVENTS), "enabled": True}, **extra}


@pages.get("/workspaces/{workspace_id}/webhooks")
def webhooks_page(request: Request, workspace_id: Id, session: Db, user: Principal = Depends(page_user)):
    return render(request, "workspaces/webhooks.html", _list_context(session, user, workspace_id, flash=take_flash(request)))


@pages.post("/workspaces/{workspace_id}/webhooks")
def create_webhook(request: Request, workspace_id: Id, session: Db, posted: Posted, url: str = Form(""), enabled: str = Form("off"),
                   user: Principal = Depends(page_user)):
    chosen = _posted_events(posted)
    try:
        with savepoint(session):
            hook, secret = hooks.create(session, user, workspace_id, url, chosen, enabled == "on")
    except DomainError as exc:
        form = {"url": url, "events": chosen, "enabled": enabled == "on"}
        return render(request, "workspaces/webhooks.html", _list_context(session, user, workspace_id, error=exc.message, form=form),
                      status_code=exc.status_code)
    # The secret is shown once, on the page this redirects to; kept server-side meanwhile (app/web/flash.py).
    secret_notice(request, session, {"kind": "webhook_secret", "webhook_id": hook.id, "secret": secret})
    return RedirectResponse(f"/webhooks/{hook.id}", status_code=303)


def _posted_events(posted) -> list[str]:
    return [e for e in posted.getlist("events") if isinstance(e, str)]


def _hook_context(session: Session, user, webhook_id: int, **extra) -> dict:
    hook = hooks.managed_hook(session, user, webhook_id)
    return {"hook": hooks.WebhookView.of(hook), "events": hooks.EVENTS, "deliveries": delivery.log(session, hook.id), **extra}


@pages.get("/webhooks/{webhook_id}")
def webhook_page(request: Request, webhook_id: Id, session: Db, user: Principal = Depends(page_user)):
    notice = take_secret_notice(request, session)
    ctx = _hook_context(session, user, webhook_id, flash=take_flash(request))
    if notice and notice.get("kind") == "webhook_secret" and notice.get("webhook_id") == webhook_id:
        ctx["secret"] = notice["secret"]
    headers = {"Cache-Control": "no-store"} if "secret" in ctx else None
    return render(request, "workspaces/webhook.html", ctx, headers=headers)


@pages.post("/webhooks/{webhook_id}")
def update_webhook(request: Request, webhook_id: Id, session: Db, posted: Posted, url: str = Form(""), enabled: str = Form("off"),
                   user: Principal = Depends(page_user)):
    chosen = _posted_events(posted)
    try:
        with savepoint(session):
            hooks.update(session, user, webhook_id, url=url, events=chosen, enabled=enabled == "on")
    except DomainError as exc:
        return render(request, "workspaces/webhook.html", _hook_context(session, user, webhook_id, error=exc.message),
                      status_code=exc.status_code)
    flash(request, "Saved.")
    return RedirectResponse(f"/webhooks/{webhook_id}", status_code=303)


@pages.post("/webhooks/{webhook_id}/test")
def test_webhook(request: Request, webhook_id: Id, session: Db, user: Principal = Depends(page_user)):
    send_test(session, user, webhook_id)
    flash(request, f"A {hooks.TEST_EVENT} event is queued; its delivery shows below once the worker sends it.")
    return RedirectResponse(f"/webhooks/{webhook_id}", status_code=303)


@pages.post("/webhooks/{webhook_id}/delete")
def delete_webhook(request: Request, webhook_id: Id, session: Db, user: Principal = Depends(page_user)):
    workspace_id = hooks.delete(session, user, webhook_id)
    flash(request, f"Webhook {webhook_id} deleted.")
    return RedirectResponse(f"/workspaces/{workspace_id}/webhooks", status_code=303)


# -- API ----------------------------------------------------------------------------------------------------


class WebhookIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(max_length=hooks.MAX_URL, description="An http:// or https:// URL; anything else is refused (422)")
    events: EventList
    enabled: bool = True


class WebhookPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str | None = Field(None, max_length=hooks.MAX_URL)
    events: EventList | None = None
    enabled: bool | None = None


WebhookOut = hooks.WebhookView


class WebhookCreated(WebhookOut):
    secret: str = Field(description="`whsec_` + base64: verify signatures with it. Shown this once.")


class AttemptOut(BaseModel):
    attempt: int
    at: datetime
    status_code: int | None
    error: str | None
    duration_ms: float


class DeliveryOut(BaseModel):
    id: int
    message_id: str = Field(description="The `webhook-id` header, the same on every attempt")
    event_type: str
    status: str = Field(description="pending, delivered or failed")
    created_at: datetime
    attempts: list[AttemptOut]


class WebhookDetail(WebhookOut):
    deliveries: list[DeliveryOut] = Field(description="The newest deliveries, newest first")


class TestQueued(BaseModel):
    queued: int


@router.get("/workspaces/{workspace_id}/webhooks", response_model=list[WebhookOut])
def list_webhooks_api(workspace_id: Id, session: Db, user: Principal = Depends(api_user)):
    """The workspace's webhooks (its managers and admins; 404 for anyone else). Secrets are never listed."""
    return hooks.hooks_of(session, user, workspace_id)


@router.post("/workspaces/{workspace_id}/webhooks", status_code=201, response_model=WebhookCreated)
def create_webhook_api(workspace_id: Id, body: WebhookIn, session: Db, user: Principal = Depends(api_user)):
    """Add a webhook; the answer holds its signing secret, which is not shown again."""
    view, secret = hooks.create(session, user, workspace_id, body.url, body.events, body.enabled)
    return WebhookCreated(**view.model_dump(), secret=secret)


@router.get("/webhooks/{webhook_id}", response_model=WebhookDetail)
def webhook_api(webhook_id: Id, session: Db, user: Principal = Depends(api_user)):
    """A webhook with its delivery log: each delivery's attempts with status code, error and duration."""
    view = hooks.WebhookView.of(hooks.managed_hook(session, user, webhook_id))
    return WebhookDetail(**view.model_dump(), deliveries=[DeliveryOut.model_validate(d, from_attributes=True)
                                                         for d in delivery.log(session, webhook_id)])


@router.patch("/webhooks/{webhook_id}", response_model=WebhookOut)
def update_webhook_api(webhook_id: Id, body: WebhookPatch, session: Db, user: Principal = Depends(api_user)):
    """Change the URL, the events or the enabled flag; what the body leaves out stays."""
    return hooks.update(session, user, webhook_id, url=body.url, events=body.events, enabled=body.enabled)


@router.delete("/webhooks/{webhook_id}", status_code=204, response_class=Response)
def delete_webhook_api(webhook_id: Id, session: Db, user: Principal = Depends(api_user)) -> None:
    hooks.delete(session, user, webhook_id)


@router.post("/webhooks/{webhook_id}/test", status_code=202, response_model=TestQueued)
def test_webhook_api(webhook_id: Id, session: Db, user: Principal = Depends(api_user)):
    """Queue a `webhook.test` event to this webhook, whatever it subscribes to."""
    return TestQueued(queued=send_test(session, user, webhook_id))
