"""Audit events: who did what, when (logins, imports, user and token changes)."""

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at


class AuditEvent(Base):
    __tablename__ = "audit_events"
    __table_args__ = (sa.Index("ix_audit_events_action_at", "action", "at"),)

    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    at: Mapped[datetime] = created_at()
    actor_id: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    action: Mapped[str] = mapped_column(sa.String(64))
    target: Mapped[str] = mapped_column(sa.Text, server_default="")
    ip: Mapped[str | None] = mapped_column(sa.String(64))
    detail: Mapped[dict[str, Any]] = mapped_column(server_default=sa.text("'{}'::jsonb"))
