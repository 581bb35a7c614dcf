"""Gold items (an item of a stage whose correct answer is known) and the annotators their answers flag."""

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at


class GoldItem(Base):
    """The truth of a gold item in a stage. The item itself has status `gold` and sits in that stage;
    marking it gold again replaces the answer (the change is an audit event)."""

    __tablename__ = "gold_items"
    __table_args__ = (
        sa.UniqueConstraint("stage_id", "item_id"),
        sa.Index("ix_gold_items_item_id", "item_id"),
    )

    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    stage_id: Mapped[int] = mapped_column(sa.ForeignKey("stages.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(sa.ForeignKey("items.id", ondelete="CASCADE"))
    answer: Mapped[dict[str, Any]]
    source: Mapped[str] = mapped_column(sa.String(16))  # "import" or "final"
    created_by: Mapped[int | None] = mapped_column(sa.ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = created_at()


class AnnotatorFlag(Base):
    """An annotator whose accuracy on a stage's gold items is below the stage's threshold (a row
    exists while flagged); where the stage says so, their work there goes to review."""

    __tablename__ = "annotator_flags"

    stage_id: Mapped[int] = mapped_column(sa.ForeignKey("stages.id", ondelete="CASCADE"), primary_key=True)
    annotator_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    accuracy: Mapped[float]
    items: Mapped[int]
    flagged_at: Mapped[datetime] = created_at()
    # Set when the stage's auto-pause raised the flag: no lease in the stage until a manager lifts it
    # (app.services.quality.qualification); `accuracy` and `items` are then the rolling window's.
    paused_at: Mapped[datetime | None]


class AnnotatorGate(Base):
    """An annotator's standing at a stage's qualification quiz and the start of their auto-pause window
    (a row once they answered a quiz item or a pause was lifted)."""

    __tablename__ = "annotator_gates"

    stage_id: Mapped[int] = mapped_column(sa.ForeignKey("stages.id", ondelete="CASCADE"), primary_key=True)
    annotator_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    tries_failed: Mapped[int] = mapped_column(server_default="0")
    try_answers: Mapped[int] = mapped_column(server_default="0")  # quiz answers given in the try under way
    try_score: Mapped[float] = mapped_column(server_default="0")  # their summed gold scores
    last_score: Mapped[float | None]  # the score of the last finished try
    passed_at: Mapped[datetime | None]
    # The newest annotation before the rolling window of auto-pause starts (a lift starts a new window).
    window_from: Mapped[int] = mapped_column(sa.BigInteger, server_default="0")


class QuizAnswer(Base):
    """A gold answer given as a quiz answer: it counts for the quiz only, never for gold accuracy."""

    __tablename__ = "quiz_answers"
    __table_args__ = (sa.Index("ix_quiz_answers_stage_id", "stage_id", "annotator_id"),)

    annotation_id: Mapped[int] = mapped_column(sa.ForeignKey("annotations.id", ondelete="CASCADE"), primary_key=True)
    stage_id: Mapped[int] = mapped_column(sa.ForeignKey("stages.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(sa.ForeignKey("users.id", ondelete="CASCADE"))
    try_number: Mapped[int]  # 1 for the first try
    score: Mapped[float]


class ImageHash(Base):
    """A stored image's perceptual hash (64-bit pHash), computed once per image and kept."""

    __tablename__ = "image_hashes"

    sha256: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    phash: Mapped[int] = mapped_column(sa.BigInteger)


class LeakReport(Base):
    """A leakage and duplicates report of one split version (the worker computes it; pages read it)."""

    __tablename__ = "leak_reports"
    __table_args__ = (sa.Index("ix_leak_reports_definition_id", "definition_id", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(sa.ForeignKey("projects.id", ondelete="CASCADE"))
    definition_id: Mapped[int] = mapped_column(sa.ForeignKey("split_definitions.id", ondelete="CASCADE"))
    report: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = created_at()
