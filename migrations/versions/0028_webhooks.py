"""Webhooks: per-workspace endpoints, the events sent to them and each delivery attempt

Revision ID: 0028webhooks
Revises: 0027worklog
Create Date: 2026-11-26 12:00:00

`webhooks` holds each endpoint's URL, subscribed event types and signing secret (`whsec_` + base64,
stored as given: the server must sign with it, so it cannot be hashed; pages and the API never show
it after creation). `webhook_deliveries` is one event for one endpoint, with the exact body that is
signed and its `webhook-id` (kept for every retry); `webhook_attempts` logs each try.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0028webhooks'
down_revision = '0027worklog'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhooks",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("workspace_id", sa.Integer(), sa.ForeignKey("workspaces.id", ondelete="CASCADE"), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("secret", sa.Text(), nullable=False),
        sa.Column("events", postgresql.ARRAY(sa.String(32)), nullable=False),
        sa.Column("enabled", sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    )
    op.create_index("webhooks_workspace", "webhooks", ["workspace_id"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.BigInteger(), primary_key=True),
        sa.Column("webhook_id", sa.Integer(), sa.ForeignKey("webhooks.id", ondelete="CASCADE"), nullable=False),
        sa.Column("message_id", sa.String(64), nullable=False, unique=True),
        sa.Column("event_type", sa.String(32), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), server_default="pending", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("status IN ('pending', 'delivered', 'failed')", name="delivery_status"),
    )
    op.create_index("webhook_deliveries_webhook", "webhook_deliveries", ["webhook_id", "id"])
    op.create_table(
        "webhook_attempts",
        sa.Column("id", sa.BigInteger(), primary_key=True),
        sa.Column("delivery_id", sa.BigInteger(), sa.ForeignKey("webhook_deliveries.id", ondelete="CASCADE"), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=False),
    )
    op.create_index("webhook_attempts_delivery", "webhook_attempts", ["delivery_id", "attempt"])


def downgrade() -> None:
    op.drop_table("webhook_attempts")
    op.drop_table("webhook_deliveries")
    op.drop_table("webhooks")
