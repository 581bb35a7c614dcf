"""Prompts and the drafts they failed to make.

A prompt is a versioned row per stage and draft kind: editing one adds the next version, so every
drafted suggestion (`Suggestion.prompt_id`) names exactly the text, drafter and sampling settings
it came from. A model answer that is not valid JSON of the kind's schema, or that the kind refuses,
is kept as a DraftFailure with the reason and the raw text; it is counted and never shown.
"""

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at


class Prompt(Base):
    __tablename__ = "prompts"
    __table_args__ = (sa.UniqueConstraint("stage_id", "draft_kind", "version"),)

    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    stage_id: Mapped[int] = mapped_column(sa.ForeignKey("stages.id", ondelete="CASCADE"), index=True)
    draft_kind: Mapped[str] = mapped_column(sa.String(64))  # app.datasets.draft.DraftKind.name
    version: Mapped[int]
    drafter: Mapped[str] = mapped_column(sa.String(64))  # a drafter's name in the worker's settings
    system: Mapped[str] = mapped_column(sa.Text, server_default="")
    template: Mapped[str] = mapped_column(sa.Text)
    settings: Mapped[dict[str, Any]] = mapped_column(server_default=sa.text("'{}'::jsonb"))  # max_tokens, temperature, seed
    note: Mapped[str] = mapped_column(sa.Text, server_default="")  # what changed in this version
    created_by: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = created_at()


class DraftFailure(Base):
    __tablename__ = "draft_failures"
    __table_args__ = (sa.UniqueConstraint("prompt_id", "item_id"),)

    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    prompt_id: Mapped[int] = mapped_column(sa.ForeignKey("prompts.id", ondelete="CASCADE"), index=True)
    item_id: Mapped[int] = mapped_column(sa.ForeignKey("items.id", ondelete="CASCADE"), index=True)
    reason: Mapped[str] = mapped_column(sa.Text)
    raw: Mapped[str] = mapped_column(sa.Text, server_default="")  # the model's text as it came
    model: Mapped[str] = mapped_column(sa.Text, server_default="")
    latency_ms: Mapped[int | None]
    prompt_tokens: Mapped[int | None]
    completion_tokens: Mapped[int | None]
    created_at: Mapped[datetime] = created_at()
