"""A reviewer's notes to an annotator, as the annotation screen and the review queue show them."""

from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.models import AuditEvent, User


def sent_back_note(session: Session, item_id: int, stage_id: int) -> dict[str, Any] | None:
    """The reviewer's newest send-back note on the item in the stage: comment, who, when."""
    row = session.execute(
        sa.select(AuditEvent.detail, AuditEvent.at, User.username)
        .outerjoin(User, User.id == AuditEvent.actor_id)
        .where(
            AuditEvent.action == "item.sent_back",
            AuditEvent.target == f"item:{item_id}",
            AuditEvent.detail["stage"].as_integer() == stage_id,
        )
        .order_by(AuditEvent.id.desc())
        .limit(1)
    ).first()
    if row is None:
        return None
    detail, at, who = row
    return {"comment": detail.get("comment", ""), "by": who or "a reviewer", "at": at}
