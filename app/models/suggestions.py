"""Model suggestions: what a model proposed for an item in a stage, with its name, version and score;
and the items a producer could not compute, with why."""

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at


class Suggestion(Base):
    """One model output for one item in one stage. A model version computes each kind once."""

    __tablename__ = "suggestions"
    __table_args__ = (sa.UniqueConstraint("item_id", "stage_id", "kind", "model", "model_version"),)

    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    item_id: Mapped[int] = mapped_column(sa.ForeignKey("items.id", ondelete="CASCADE"))
    stage_id: Mapped[int] = mapped_column(sa.ForeignKey("stages.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(sa.String(64))
    model: Mapped[str] = mapped_column(sa.Text)
    model_version: Mapped[str] = mapped_column(sa.Text, server_default="")
    payload: Mapped[dict[str, Any]]
    score: Mapped[float | None]
    # Drafted by a vision-language model: the prompt version, and what the call cost.
    prompt_id: Mapped[int | None] = mapped_column(sa.ForeignKey("prompts.id", ondelete="CASCADE"), index=True)
    latency_ms: Mapped[int | None]
    prompt_tokens: Mapped[int | None]
    completion_tokens: Mapped[int | None]
    created_at: Mapped[datetime] = created_at()


class SuggestionFailure(Base):
    """An item a suggestion kind's producer could not compute (a corrupt or unstored image), with
    why, the model that tried, and a fingerprint of the item's record and images as they were read
    (`inputs`): reconcile leaves the item alone until those change or an admin asks again."""

    __tablename__ = "suggestion_failures"
    __table_args__ = (sa.UniqueConstraint("item_id", "stage_id", "kind"),)

    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    item_id: Mapped[int] = mapped_column(sa.ForeignKey("items.id", ondelete="CASCADE"))
    stage_id: Mapped[int] = mapped_column(sa.ForeignKey("stages.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(sa.String(64))
    model: Mapped[str] = mapped_column(sa.Text, server_default="")
    model_version: Mapped[str] = mapped_column(sa.Text, server_default="")
    inputs: Mapped[str] = mapped_column(sa.String(32))  # md5 of the item's data and assets (`suggestion_failures.INPUTS`)
    reason: Mapped[str] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = created_at()


class SuggestionOutcome(Base):
    """What an annotator did with a suggestion they were shown: accepted, edited or rejected it."""

    __tablename__ = "suggestion_outcomes"
    __table_args__ = (
        sa.CheckConstraint("outcome IN ('accepted', 'edited', 'rejected')", name="outcome"),
        sa.UniqueConstraint("annotation_id", "suggestion_id"),
    )

    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    annotation_id: Mapped[int] = mapped_column(sa.ForeignKey("annotations.id", ondelete="CASCADE"))
    suggestion_id: Mapped[int] = mapped_column(sa.ForeignKey("suggestions.id", ondelete="CASCADE"), index=True)
    stage_id: Mapped[int] = mapped_column(sa.ForeignKey("stages.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(sa.String(64))
    model: Mapped[str] = mapped_column(sa.Text)
    model_version: Mapped[str] = mapped_column(sa.Text)
    outcome: Mapped[str] = mapped_column(sa.String(16))
    created_at: Mapped[datetime] = created_at()
