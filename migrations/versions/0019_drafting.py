"""prompts (versioned per stage and draft kind), drafts that failed, and drafted suggestions' prompt and cost

Revision ID: 0019drafting
Revises: 0018sessions
Create Date: 2026-11-26 04:30:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0019drafting'
down_revision = '0018sessions'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'prompts',
        sa.Column('id', sa.BigInteger(), nullable=False),
        sa.Column('stage_id', sa.Integer(), nullable=False),
        sa.Column('draft_kind', sa.String(length=64), nullable=False),
        sa.Column('version', sa.Integer(), nullable=False),
        sa.Column('drafter', sa.String(length=64), nullable=False),
        sa.Column('system', sa.Text(), server_default='', nullable=False),
        sa.Column('template', sa.Text(), nullable=False),
        sa.Column('settings', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column('note', sa.Text(), server_default='', nullable=False),
        sa.Column('created_by', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.ForeignKeyConstraint(['stage_id'], ['stages.id'], name=op.f('fk_prompts_stage_id_stages'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['created_by'], ['users.id'], name=op.f('fk_prompts_created_by_users'), ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_prompts')),
        sa.UniqueConstraint('stage_id', 'draft_kind', 'version', name=op.f('uq_prompts_stage_id_draft_kind_version')),
    )
    op.create_index(op.f('ix_prompts_stage_id'), 'prompts', ['stage_id'], unique=False)
    op.create_table(
        'draft_failures',
        sa.Column('id', sa.BigInteger(), nullable=False),
        sa.Column('prompt_id', sa.BigInteger(), nullable=False),
        sa.Column('item_id', sa.BigInteger(), nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('raw', sa.Text(), server_default='', nullable=False),
        sa.Column('model', sa.Text(), server_default='', nullable=False),
        sa.Column('latency_ms', sa.Integer(), nullable=True),
        sa.Column('prompt_tokens', sa.Integer(), nullable=True),
        sa.Column('completion_tokens', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.ForeignKeyConstraint(['prompt_id'], ['prompts.id'], name=op.f('fk_draft_failures_prompt_id_prompts'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['item_id'], ['items.id'], name=op.f('fk_draft_failures_item_id_items'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_draft_failures')),
        sa.UniqueConstraint('prompt_id', 'item_id', name=op.f('uq_draft_failures_prompt_id_item_id')),
    )
    op.create_index(op.f('ix_draft_failures_prompt_id'), 'draft_failures', ['prompt_id'], unique=False)
    op.create_index(op.f('ix_draft_failures_item_id'), 'draft_failures', ['item_id'], unique=False)
    op.add_column('suggestions', sa.Column('prompt_id', sa.BigInteger(), nullable=True))
    op.add_column('suggestions', sa.Column('latency_ms', sa.Integer(), nullable=True))
    op.add_column('suggestions', sa.Column('prompt_tokens', sa.Integer(), nullable=True))
    op.add_column('suggestions', sa.Column('completion_tokens', sa.Integer(), nullable=True))
    op.create_foreign_key(
        op.f('fk_suggestions_prompt_id_prompts'), 'suggestions', 'prompts', ['prompt_id'], ['id'], ondelete='CASCADE'
    )
    op.create_index(op.f('ix_suggestions_prompt_id'), 'suggestions', ['prompt_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_suggestions_prompt_id'), table_name='suggestions')
    op.drop_constraint(op.f('fk_suggestions_prompt_id_prompts'), 'suggestions', type_='foreignkey')
    for column in ('completion_tokens', 'prompt_tokens', 'latency_ms', 'prompt_id'):
        op.drop_column('suggestions', column)
    op.drop_table('draft_failures')
    op.drop_table('prompts')
