"""Assignments (who holds which item in which stage), annotations (append-only) and drafts."""

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.lifecycle import ASSIGNMENT_START, AssignmentStatus, sql_values
from app.models.base import Base, created_at, status_column


class Assignment(Base):
    __tablename__ = "assignments"
    __table_args__ = (
        # An annotator can never hold the same item twice in a stage.
        sa.UniqueConstraint("item_id", "stage_id", "annotator_id"),
        sa.CheckConstraint(f"status IN ({sql_values(AssignmentStatus)})", name="status"),
        sa.Index(
            "ix_assignments_leases",
            "stage_id",
            "lease_until",
            postgresql_where=sa.text(f"status = '{AssignmentStatus.active}'"),
        ),
        sa.Index("ix_assignments_annotator_stage", "annotator_id", "stage_id", "status"),
    )

    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    item_id: Mapped[int] = mapped_column(sa.ForeignKey("items.id", ondelete="CASCADE"))
    stage_id: Mapped[int] = mapped_column(sa.ForeignKey("stages.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"))
    status: Mapped[AssignmentStatus] = status_column(AssignmentStatus, ASSIGNMENT_START)
    lease_until: Mapped[datetime]
    created_at: Mapped[datetime] = created_at()
    submitted_at: Mapped[datetime | None]


class Annotation(Base):
    """One submitted revision. Rows are only ever inserted."""

    __tablename__ = "annotations"
    __table_args__ = (
        sa.UniqueConstraint("annotator_id", "idempotency_key"),
        sa.UniqueConstraint("assignment_id", "revision"),
        sa.CheckConstraint("arm IN ('shown', 'control', 'probe')", name="arm"),
        sa.Index("ix_annotations_created_at", "created_at"),  # the work log reads answers by their time
    )

    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    assignment_id: Mapped[int] = mapped_column(sa.ForeignKey("assignments.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(sa.ForeignKey("items.id", ondelete="CASCADE"), index=True)
    stage_id: Mapped[int] = mapped_column(sa.ForeignKey("stages.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"))
    revision: Mapped[int]
    idempotency_key: Mapped[str] = mapped_column(sa.String(100))
    payload: Mapped[dict[str, Any]]
    seconds_spent: Mapped[float | None]
    # What drafts this answer was given with (app.bias): its arm, whether it caught a probe, its active time.
    arm: Mapped[str | None] = mapped_column(sa.String(8))
    probe_caught: Mapped[bool | None]
    active_seconds: Mapped[float | None]
    # Claim to submit: from the lease's start (a revision: from its screen's opening), app.services.quality.worklog.
    wall_seconds: Mapped[float | None]
    created_at: Mapped[datetime] = created_at()


class Draft(Base):
    """Autosaved work in progress for an assignment; replaced freely."""

    __tablename__ = "drafts"

    assignment_id: Mapped[int] = mapped_column(
        sa.ForeignKey("assignments.id", ondelete="CASCADE"), primary_key=True
    )
    payload: Mapped[dict[str, Any]]
    active_seconds: Mapped[float | None]  # gathered by the screen's saves, taken by the submit
    updated_at: Mapped[datetime] = mapped_column(
        sa.DateTime(timezone=True), server_default=sa.func.now(), onupdate=sa.func.now()
    )
