"""Measuring what drafts do to people: the arm an answer was given in, its active time, probe catches

Revision ID: 0023bias
Revises: 0022sugfail
Create Date: 2026-11-28 00:00:00

`annotations.arm`: "shown" (the screen showed the drafts), "control" (the stage hid them for this
assignment) or "probe" (a gold item showed a planted wrong draft); NULL for answers stored before.
`annotations.probe_caught`: on a probe, whether the answer corrected the planted error.
`annotations.active_seconds`: the screen's time with focus and input, idle spells over 30 s left out.
`suggestion_outcomes.shown`: false for a draft the control arm hid (its outcome says how an answer
made without it compares with it); `edit_distance`: the workflow's own distance of the answer from it.
"""

import sqlalchemy as sa
from alembic import op

revision = '0023bias'
down_revision = '0022sugfail'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('annotations', sa.Column('arm', sa.String(length=8), nullable=True))
    op.add_column('annotations', sa.Column('probe_caught', sa.Boolean(), nullable=True))
    op.add_column('annotations', sa.Column('active_seconds', sa.Float(), nullable=True))
    op.create_check_constraint(op.f('ck_annotations_arm'), 'annotations', "arm IN ('shown', 'control', 'probe')")
    op.add_column('suggestion_outcomes', sa.Column('shown', sa.Boolean(), server_default=sa.true(), nullable=False))
    op.add_column('suggestion_outcomes', sa.Column('edit_distance', sa.Float(), nullable=True))


def downgrade() -> None:
    op.drop_column('suggestion_outcomes', 'edit_distance')
    op.drop_column('suggestion_outcomes', 'shown')
    op.drop_constraint(op.f('ck_annotations_arm'), 'annotations', type_='check')
    op.drop_column('annotations', 'active_seconds')
    op.drop_column('annotations', 'probe_caught')
    op.drop_column('annotations', 'arm')
