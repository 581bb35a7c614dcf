"""prompt runs: each run of a prompt version asked for, with the range of its draft jobs' ids

Revision ID: 0020runs
Revises: 0019drafting
Create Date: 2026-11-26 12:00:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0020runs'
down_revision = '0019drafting'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'prompt_runs',
        sa.Column('id', sa.BigInteger(), nullable=False),
        sa.Column('prompt_id', sa.BigInteger(), nullable=False),
        sa.Column('scope', sa.String(length=16), nullable=False),
        sa.Column('sample', sa.Integer(), nullable=True),
        sa.Column('seed', sa.Integer(), server_default='0', nullable=False),
        sa.Column('items', sa.Integer(), nullable=False),
        sa.Column('batches', sa.Integer(), nullable=False),
        sa.Column('first_job', sa.BigInteger(), nullable=True),
        sa.Column('last_job', sa.BigInteger(), nullable=True),
        sa.Column('created_by', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.ForeignKeyConstraint(['prompt_id'], ['prompts.id'], name=op.f('fk_prompt_runs_prompt_id_prompts'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['created_by'], ['users.id'], name=op.f('fk_prompt_runs_created_by_users'), ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_prompt_runs')),
    )
    op.create_index(op.f('ix_prompt_runs_prompt_id'), 'prompt_runs', ['prompt_id'], unique=False)


def downgrade() -> None:
    op.drop_table('prompt_runs')
