"""job_requests: leak and agreement reports asked for, until a job takes them

Revision ID: 0017requests
Revises: 0016fence
Create Date: 2026-11-25 00:00:00

A defer runs on the job queue's own connection after the request's transaction: should it fail
(a lost connection, a closed pool), the request is still recorded here and the reconcile job
queues it again. Exports need no table: their row stays "queued".
"""

import sqlalchemy as sa
from alembic import op

revision = '0017requests'
down_revision = '0016fence'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('job_requests',
    sa.Column('task', sa.String(length=32), nullable=False),
    sa.Column('key', sa.BigInteger(), nullable=False),
    sa.Column('requested_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.PrimaryKeyConstraint('task', 'key', name=op.f('pk_job_requests'))
    )


def downgrade() -> None:
    op.drop_table('job_requests')
