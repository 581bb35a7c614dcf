"""Writing audit events."""

from typing import Any

from sqlalchemy.orm import Session

from app.models import AuditEvent


def record(
    session: Session,
    action: str,
    *,
    actor_id: int | None = None,
    target: str = "",
    ip: str | None = None,
    **detail: Any,
) -> None:
    session.add(AuditEvent(action=action, actor_id=actor_id, target=target, ip=ip, detail=detail))
