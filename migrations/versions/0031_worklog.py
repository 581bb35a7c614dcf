"""Work logs: each answer's wall time, the active time a draft has gathered, annotations by time

Revision ID: 0031worklog
Revises: 0029sso
Create Date: 2026-11-26 12:00:00

`annotations.wall_seconds`: claim to submit (the lease's start to the answer; a revision, the time
its screen was open). `drafts.active_seconds`: the active time the autosaved drafts of an
assignment have gathered, so that a reloaded or closed tab loses none of it; the submit takes it.
`ix_annotations_created_at`: the work log reads answers by their time.
"""

import sqlalchemy as sa
from alembic import op

revision = '0031worklog'
down_revision = '0029sso'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('annotations', sa.Column('wall_seconds', sa.Float(), nullable=True))
    op.add_column('drafts', sa.Column('active_seconds', sa.Float(), nullable=True))
    op.create_index('ix_annotations_created_at', 'annotations', ['created_at'])


def downgrade() -> None:
    op.drop_index('ix_annotations_created_at', table_name='annotations')
    op.drop_column('drafts', 'active_seconds')
    op.drop_column('annotations', 'wall_seconds')
