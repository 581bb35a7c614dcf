"""Sending one delivery attempt, signed, and the delivery log (each event's attempts, newest first).

A delivery counts as accepted on a 2xx answer and is never sent again after; any other answer, a
refused connection or a timeout is a failed attempt, retried by the job with a growing wait until the
last attempt marks it failed. Redirects are not followed (the signature is for the URL given). An
error is logged as its type and first line, which hold the URL at most, never the secret.

A receiver's host is resolved once per attempt and the connection goes to that address (the Host
header and TLS server name stay the host's), so a name cannot point the server at its own network:
loopback, private, link-local and other non-public addresses are refused unless the deployment allows
them (`VLCURATE_WEBHOOK_PRIVATE_ADDRESSES`, for receivers inside the same network).
"""

from __future__ import annotations

import ipaddress
import socket
import time
from dataclasses import dataclass, field
from datetime import datetime

import httpx
import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.models import Webhook, WebhookAttempt, WebhookDelivery
from app.services.webhooks import signing

LOG_DELIVERIES = 25  # deliveries a webhook's page shows


@dataclass(frozen=True)
class Pending:
    """A delivery still to send, with what signing it needs and the number of this attempt."""

    id: int
    url: str
    secret: str
    message_id: str
    body: str
    attempt: int


@dataclass(frozen=True)
class Outcome:
    status_code: int | None
    error: str | None
    duration_ms: float

    @property
    def accepted(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def summary(self) -> str:
        return f"HTTP {self.status_code}" if self.status_code is not None else (self.error or "no answer")


TEST_EVENT = "webhook.test"  # what the test button sends, whatever the webhook subscribes to, enabled or not
CANCELLED = "cancelled: the webhook is disabled"
# Ends pending deliveries as failed, each with a last attempt row that says why (the log shows it).
_CANCEL = """
WITH d AS (
    UPDATE webhook_deliveries SET status = 'failed', finished_at = now()
    WHERE status = 'pending' AND {where}
    RETURNING id)
INSERT INTO webhook_attempts (delivery_id, attempt, status_code, error, duration_ms)
SELECT d.id, 1 + (SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = d.id), NULL, :why, 0 FROM d"""
_CANCEL_HOOK = sa.text(_CANCEL.format(where="webhook_id = :target"))
_CANCEL_ONE = sa.text(_CANCEL.format(where="id = :target"))


def cancel(session: Session, webhook_id: int) -> int:
    """End the webhook's pending deliveries as failed, "cancelled" in the log (the webhook was disabled)."""
    return session.execute(_CANCEL_HOOK, {"target": webhook_id, "why": CANCELLED}).rowcount


def pending(session: Session, delivery_id: int) -> Pending | None:
    """The delivery if it is still to send (not accepted, not failed for good, its webhook not deleted).
    A disabled webhook's delivery is cancelled instead, but for the test button's (sent to a disabled
    webhook on purpose; disabling cancels those queued before)."""
    row = session.execute(
        sa.select(WebhookDelivery.id, Webhook.url, Webhook.secret, WebhookDelivery.message_id, WebhookDelivery.body,
                  sa.select(sa.func.count()).where(WebhookAttempt.delivery_id == WebhookDelivery.id).scalar_subquery(),
                  Webhook.enabled, WebhookDelivery.event_type)
        .join(Webhook, Webhook.id == WebhookDelivery.webhook_id)
        .where(WebhookDelivery.id == delivery_id, WebhookDelivery.status == "pending")
    ).first()
    if row is None:
        return None
    *fields_, done, enabled, event_type = row
    if not enabled and event_type != TEST_EVENT:
        session.execute(_CANCEL_ONE, {"target": delivery_id, "why": CANCELLED})
        return None
    return Pending(*fields_, attempt=done + 1)


class AddressRefused(Exception):
    """The receiver's host resolves to an address deliveries may not go to."""


def pinned(url: str, *, allow_private: bool) -> tuple[httpx.URL, str]:
    """The URL with its host replaced by the one address it is sent to, and the host's name (the Host
    header and TLS server name); AddressRefused for a non-public address unless `allow_private`."""
    target = httpx.URL(url)
    host, port = target.host, target.port or (443 if target.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise AddressRefused(f"cannot resolve {host}: {exc}") from None
    address = ipaddress.ip_address(infos[0][4][0].split("%")[0])
    if not allow_private and not address.is_global:
        raise AddressRefused(f"{host} resolves to {address}, a non-public address")
    return target.copy_with(host=str(address)), host


def send(d: Pending, timeout: float, *, allow_private: bool = False) -> Outcome:
    """POST the delivery once, signed with this attempt's timestamp; what came of it."""
    body = d.body.encode()
    headers = {**signing.headers(d.secret, d.message_id, int(time.time()), body), "user-agent": "vlcurate-webhooks"}
    started = time.perf_counter()
    try:
        url, host = pinned(d.url, allow_private=allow_private)
        port = httpx.URL(d.url).port
        headers["host"] = f"{host}:{port}" if port else host
        with httpx.Client(timeout=timeout, follow_redirects=False) as http:
            answer = http.post(url, content=body, headers=headers, extensions={"sni_hostname": host})
            status, error = answer.status_code, None
    except AddressRefused as exc:
        status, error = None, f"refused: {exc}"
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        status, error = None, f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:500]}"
    except Exception as exc:  # noqa: BLE001  a URL or header httpx cannot build a request from: a failed attempt, not a dead job
        status, error = None, f"{type(exc).__name__}: the request could not be made"
    return Outcome(status, error, (time.perf_counter() - started) * 1000)


def record(session: Session, d: Pending, outcome: Outcome, *, last: bool) -> None:
    """Log the attempt; an accepted one ends the delivery, and so does the last failed one."""
    session.add(WebhookAttempt(delivery_id=d.id, attempt=d.attempt, status_code=outcome.status_code, error=outcome.error,
                               duration_ms=outcome.duration_ms))
    status = "delivered" if outcome.accepted else "failed" if last else None
    if status:
        session.execute(sa.update(WebhookDelivery).where(WebhookDelivery.id == d.id)
                        .values(status=status, finished_at=sa.func.now()))
    session.flush()


@dataclass
class LoggedDelivery:
    id: int
    message_id: str
    event_type: str
    status: str
    created_at: datetime
    attempts: list[WebhookAttempt] = field(default_factory=list)


def log(session: Session, webhook_id: int, limit: int = LOG_DELIVERIES) -> list[LoggedDelivery]:
    """The webhook's newest deliveries, each with its attempts in order."""
    rows = session.execute(
        sa.select(WebhookDelivery.id, WebhookDelivery.message_id, WebhookDelivery.event_type, WebhookDelivery.status,
                  WebhookDelivery.created_at)
        .where(WebhookDelivery.webhook_id == webhook_id).order_by(WebhookDelivery.id.desc()).limit(limit)
    ).all()
    out = {r.id: LoggedDelivery(*r) for r in rows}
    if out:
        for a in session.scalars(sa.select(WebhookAttempt).where(WebhookAttempt.delivery_id.in_(out))
                                 .order_by(WebhookAttempt.delivery_id, WebhookAttempt.attempt)):
            out[a.delivery_id].attempts.append(a)
    return list(out.values())
