"""Webhooks: a workspace's endpoints, the events queued for each (a delivery) and every attempt to send one."""

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at


class Webhook(Base):
    """An endpoint of a workspace: where events go, which ones, and the secret they are signed with.
    The secret (`whsec_` + base64) is stored as given, since signing needs it; no page or API answer
    shows it after creation, and audit events withhold it."""

    __tablename__ = "webhooks"
    __table_args__ = (sa.Index("webhooks_workspace", "workspace_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(sa.ForeignKey("workspaces.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(sa.Text)
    secret: Mapped[str] = mapped_column(sa.Text)
    events: Mapped[list[str]] = mapped_column(postgresql.ARRAY(sa.String(32)))
    enabled: Mapped[bool] = mapped_column(server_default=sa.true())
    created_at: Mapped[datetime] = created_at()


class WebhookDelivery(Base):
    """One event for one endpoint: the body as signed and its `webhook-id`, the same on every retry."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        sa.CheckConstraint("status IN ('pending', 'delivered', 'failed')", name="delivery_status"),
        sa.Index("webhook_deliveries_webhook", "webhook_id", "id"),
    )

    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    webhook_id: Mapped[int] = mapped_column(sa.ForeignKey("webhooks.id", ondelete="CASCADE"))
    message_id: Mapped[str] = mapped_column(sa.String(64), unique=True)
    event_type: Mapped[str] = mapped_column(sa.String(32))
    body: Mapped[str] = mapped_column(sa.Text)
    status: Mapped[str] = mapped_column(sa.String(16), server_default="pending")
    created_at: Mapped[datetime] = created_at()
    finished_at: Mapped[datetime | None]


class WebhookAttempt(Base):
    """One try at sending a delivery: the answer's status code, or the error, and how long it took."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (sa.Index("webhook_attempts_delivery", "delivery_id", "attempt"),)

    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    delivery_id: Mapped[int] = mapped_column(sa.ForeignKey("webhook_deliveries.id", ondelete="CASCADE"))
    attempt: Mapped[int]
    at: Mapped[datetime] = created_at()
    status_code: Mapped[int | None]
    error: Mapped[str | None] = mapped_column(sa.Text)
    duration_ms: Mapped[float]
