"""Projects and their ordered stages."""

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at


class Project(Base):
    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(200), unique=True)
    # The default workspace when not given (a SQL function: see app/models/workspaces.py).
    workspace_id: Mapped[int] = mapped_column(
        sa.ForeignKey("workspaces.id"), index=True, server_default=sa.text("default_workspace_id()")
    )
    description: Mapped[str] = mapped_column(sa.Text, server_default="")
    created_by: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = created_at()
    # Set when the project is deleted: it is hidden everywhere, its data kept (app.services.projects.archive).
    archived_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    archived_by: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))


class Stage(Base):
    """One step of a project's pipeline, run by one workflow."""

    __tablename__ = "stages"
    __table_args__ = (
        sa.UniqueConstraint("project_id", "position"),
        sa.CheckConstraint("overlap >= 1", name="overlap_positive"),
        sa.CheckConstraint("lease_seconds >= 1", name="lease_positive"),
        sa.CheckConstraint("sample_size IS NULL OR sample_size >= 0", name="sample_nonnegative"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(sa.ForeignKey("projects.id", ondelete="CASCADE"))
    position: Mapped[int]
    name: Mapped[str] = mapped_column(sa.String(100))
    workflow: Mapped[str] = mapped_column(sa.String(100))
    overlap: Mapped[int] = mapped_column(server_default="1")
    lease_seconds: Mapped[int] = mapped_column(server_default="900")
    guidelines: Mapped[str] = mapped_column(sa.Text, server_default="")
    config: Mapped[dict[str, Any]] = mapped_column(server_default=sa.text("'{}'::jsonb"))
    # Agreement sampling: when set, `overlap` annotators see only `sample_size` items drawn at
    # random (by `sample_seed`) into stage_samples; every other item gets one annotator.
    sample_size: Mapped[int | None]
    sample_seed: Mapped[int] = mapped_column(server_default="0")


class StageSample(Base):
    """The items of a stage's agreement sample (they get the stage's full overlap)."""

    __tablename__ = "stage_samples"

    stage_id: Mapped[int] = mapped_column(sa.ForeignKey("stages.id", ondelete="CASCADE"), primary_key=True)
    item_id: Mapped[int] = mapped_column(
        sa.BigInteger, sa.ForeignKey("items.id", ondelete="CASCADE"), primary_key=True, index=True
    )
