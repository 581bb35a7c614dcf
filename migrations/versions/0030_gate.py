"""Qualification quiz and auto-pause: annotators' standing at a stage's quiz, quiz answers, paused flags

Revision ID: 0030gate
Revises: 0029archive
Create Date: 2026-11-26 12:00:00

Nothing changes for existing stages: the quiz and auto-pause are off until a stage's settings turn them on.
"""

import sqlalchemy as sa
from alembic import op

revision = '0030gate'
down_revision = '0029archive'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("annotator_flags", sa.Column("paused_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "annotator_gates",
        sa.Column("stage_id", sa.Integer(), sa.ForeignKey("stages.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("annotator_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("tries_failed", sa.Integer(), server_default="0", nullable=False),
        sa.Column("try_answers", sa.Integer(), server_default="0", nullable=False),
        sa.Column("try_score", sa.Float(), server_default="0", nullable=False),
        sa.Column("last_score", sa.Float(), nullable=True),
        sa.Column("passed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("window_from", sa.BigInteger(), server_default="0", nullable=False),
    )
    op.create_table(
        "quiz_answers",
        sa.Column("annotation_id", sa.BigInteger(), sa.ForeignKey("annotations.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("stage_id", sa.Integer(), sa.ForeignKey("stages.id", ondelete="CASCADE"), nullable=False),
        sa.Column("annotator_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("try_number", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
    )
    op.create_index("ix_quiz_answers_stage_id", "quiz_answers", ["stage_id", "annotator_id"])


def downgrade() -> None:
    op.drop_table("quiz_answers")
    op.drop_table("annotator_gates")
    op.drop_column("annotator_flags", "paused_at")
