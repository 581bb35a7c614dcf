"""job_runs.step: the step a long job is on (the leak report: hashing images, matching, embeddings)

Revision ID: 0021jobstep
Revises: 0020runs
Create Date: 2026-11-27 00:00:00

`done` and `total` count the step's work, so that the export page shows a leak report's progress
as it runs. Jobs that name no step keep the empty string.
"""

import sqlalchemy as sa
from alembic import op

revision = '0021jobstep'
down_revision = '0020runs'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('job_runs', sa.Column('step', sa.Text(), server_default='', nullable=False))


def downgrade() -> None:
    op.drop_column('job_runs', 'step')
