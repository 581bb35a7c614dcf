"""Split definitions (versioned, with the item assignment they froze) and export runs."""

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at


class SplitDefinition(Base):
    """One saved version of a project's train/validation/test split; never edited afterwards."""

    __tablename__ = "split_definitions"
    __table_args__ = (sa.UniqueConstraint("project_id", "version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(sa.ForeignKey("projects.id", ondelete="CASCADE"))
    version: Mapped[int]
    config: Mapped[dict[str, Any]]
    counts: Mapped[dict[str, Any]] = mapped_column(server_default=sa.text("'{}'::jsonb"))
    created_by: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = created_at()

    @property
    def order(self) -> list[str]:
        """The split names in their defined order (JSONB objects do not keep key order; this list does)."""
        return list(self.config.get("order") or self.counts)

    @property
    def ordered_counts(self) -> dict[str, int]:
        return {name: self.counts.get(name, 0) for name in self.order}


class ItemSplit(Base):
    """Which split a finished item is in, under one split definition."""

    __tablename__ = "item_splits"
    __table_args__ = (sa.Index("ix_item_splits_definition_split", "definition_id", "split", "item_id"),)

    definition_id: Mapped[int] = mapped_column(sa.ForeignKey("split_definitions.id", ondelete="CASCADE"), primary_key=True)
    item_id: Mapped[int] = mapped_column(sa.BigInteger, sa.ForeignKey("items.id", ondelete="CASCADE"), primary_key=True)
    split: Mapped[str] = mapped_column(sa.String(32))


EXPORT_STATUSES = ("queued", "running", "done", "failed")


class Export(Base):
    """One export of a project in one format, to a local directory or an S3 prefix."""

    __tablename__ = "exports"
    __table_args__ = (sa.CheckConstraint("status IN ('queued', 'running', 'done', 'failed')", name="status"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(sa.ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    definition_id: Mapped[int | None] = mapped_column(sa.ForeignKey("split_definitions.id", ondelete="SET NULL"))
    format: Mapped[str] = mapped_column(sa.String(32))
    target: Mapped[str] = mapped_column(sa.Text)
    gold: Mapped[bool] = mapped_column(server_default=sa.false())  # also write gold.jsonl (the stages' gold items)
    status: Mapped[str] = mapped_column(sa.String(16), server_default="queued")
    done: Mapped[int] = mapped_column(server_default="0")
    total: Mapped[int] = mapped_column(server_default="0")
    manifest: Mapped[dict[str, Any] | None]
    error: Mapped[str | None] = mapped_column(sa.Text)
    created_by: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = created_at()
    finished_at: Mapped[datetime | None]
