"""job_runs and suggestion_outcomes: the worker's job reports, and what annotators did with suggestions

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 05:50:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('job_runs',
    sa.Column('job_id', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('task', sa.String(length=64), nullable=False),
    sa.Column('label', sa.Text(), server_default='', nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('done', sa.Integer(), server_default='0', nullable=False),
    sa.Column('total', sa.Integer(), server_default='0', nullable=False),
    sa.Column('attempts', sa.Integer(), server_default='0', nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('started_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('job_id', name=op.f('pk_job_runs'))
    )
    op.create_table('suggestion_outcomes',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('annotation_id', sa.BigInteger(), nullable=False),
    sa.Column('suggestion_id', sa.BigInteger(), nullable=False),
    sa.Column('stage_id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=64), nullable=False),
    sa.Column('model', sa.Text(), nullable=False),
    sa.Column('model_version', sa.Text(), nullable=False),
    sa.Column('outcome', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("outcome IN ('accepted', 'edited', 'rejected')", name=op.f('ck_suggestion_outcomes_outcome')),
    sa.ForeignKeyConstraint(['annotation_id'], ['annotations.id'], name=op.f('fk_suggestion_outcomes_annotation_id_annotations'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['stage_id'], ['stages.id'], name=op.f('fk_suggestion_outcomes_stage_id_stages'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['suggestion_id'], ['suggestions.id'], name=op.f('fk_suggestion_outcomes_suggestion_id_suggestions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_suggestion_outcomes')),
    sa.UniqueConstraint('annotation_id', 'suggestion_id', name=op.f('uq_suggestion_outcomes_annotation_id_suggestion_id'))
    )
    op.create_index(op.f('ix_suggestion_outcomes_stage_id'), 'suggestion_outcomes', ['stage_id'], unique=False)
    op.create_index(op.f('ix_suggestion_outcomes_suggestion_id'), 'suggestion_outcomes', ['suggestion_id'], unique=False)


def downgrade() -> None:
    op.drop_table('suggestion_outcomes')
    op.drop_table('job_runs')
