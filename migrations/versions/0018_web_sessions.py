"""page sessions kept in the database, so that logout, a password change and deactivation end them

Revision ID: 0018sessions
Revises: 0017requests
Create Date: 2026-11-26 02:40:00

Sessions made before this revision carried the user's id in the signed cookie; they are not carried
over: everyone logs in once more.
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0018sessions'
down_revision = '0017requests'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'web_sessions',
        sa.Column('id', sa.String(length=64), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('notice', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_web_sessions_user_id_users'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_web_sessions')),
    )
    op.create_index(op.f('ix_web_sessions_user_id'), 'web_sessions', ['user_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_web_sessions_user_id'), table_name='web_sessions')
    op.drop_table('web_sessions')
