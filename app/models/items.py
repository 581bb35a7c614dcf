"""Items to annotate, the image assets they point to, and their finalized per-stage records."""

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Mapped, mapped_column

from app.lifecycle import ITEM_START, ItemStatus, sql_values
from app.models.base import Base, created_at, status_column


class Asset(Base):
    """An image, stored once and found by its sha256 (`storage_key`: a whole object, or a slice of a pack)."""

    __tablename__ = "assets"

    id: Mapped[int] = mapped_column(primary_key=True)
    sha256: Mapped[str] = mapped_column(sa.String(64), unique=True)
    storage_key: Mapped[str] = mapped_column(sa.Text)
    mime: Mapped[str] = mapped_column(sa.String(64))
    width: Mapped[int]
    height: Mapped[int]
    size_bytes: Mapped[int] = mapped_column(sa.BigInteger)
    created_at: Mapped[datetime] = created_at()


class Item(Base):
    """One record of a project. `stage_id` is the stage it is in now.

    `slots_left` is how many more annotators may take it in that stage; the partial index on
    claimable rows keeps the queue's scan away from items that are full, done or discarded.
    `assets` maps a JSON pointer into `data` (e.g. "/image") to the sha256 of the stored image.
    `data` is the record as the dataset's item schema reads it (what screens and queries use);
    `source` is the record as it came, its JSON text kept exactly (key order, absent keys,
    number spelling, every character), which the published export writes back.
    """

    __tablename__ = "items"
    __table_args__ = (
        sa.UniqueConstraint("project_id", "external_id"),
        sa.CheckConstraint(f"status IN ({sql_values(ItemStatus)})", name="status"),
        sa.CheckConstraint("slots_left >= 0", name="slots_nonnegative"),
        sa.Index(
            "ix_items_claimable",
            "stage_id",
            "id",
            postgresql_where=sa.text(f"status = '{ItemStatus.active}' AND slots_left > 0"),
        ),
        # The items page: one page of a project's items in id order, whole, by stage or by status.
        sa.Index("ix_items_project_id", "project_id", "id"),
        sa.Index("ix_items_stage_id", "stage_id", "id"),
        sa.Index("ix_items_project_status_id", "project_id", "status", "id"),
    )

    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    project_id: Mapped[int] = mapped_column(sa.ForeignKey("projects.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(sa.Text)
    data: Mapped[dict[str, Any]]
    source: Mapped[Any | None] = mapped_column(postgresql.JSON)
    assets: Mapped[dict[str, Any]] = mapped_column(server_default=sa.text("'{}'::jsonb"))
    group_id: Mapped[str | None] = mapped_column(sa.Text)
    stage_id: Mapped[int | None] = mapped_column(sa.ForeignKey("stages.id", ondelete="SET NULL"))
    status: Mapped[ItemStatus] = status_column(ItemStatus, ITEM_START)
    slots_left: Mapped[int] = mapped_column(server_default="0")
    created_at: Mapped[datetime] = created_at()


class ItemResult(Base):
    """The final record of an item in a stage (consolidated or reviewed). Append-only."""

    __tablename__ = "item_results"

    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    item_id: Mapped[int] = mapped_column(sa.ForeignKey("items.id", ondelete="CASCADE"), index=True)
    stage_id: Mapped[int] = mapped_column(sa.ForeignKey("stages.id", ondelete="CASCADE"), index=True)
    payload: Mapped[dict[str, Any]]
    discard: Mapped[bool] = mapped_column(server_default=sa.false())
    source: Mapped[str] = mapped_column(sa.String(16))
    created_by: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = created_at()
