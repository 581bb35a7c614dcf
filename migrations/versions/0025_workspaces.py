"""Workspaces and their members; every existing project and user goes into one default workspace

Revision ID: 0025workspaces
Revises: 0024audit
Create Date: 2026-11-26 00:00:00

An upgrade changes nothing a user sees: the default workspace holds every project, and every
annotator and reviewer is a member of it with the role they had (admins stay global admins).
`default_workspace_id()` is the projects column's default, so a project inserted without a
workspace (by any code) lands in the default one.
"""

import sqlalchemy as sa
from alembic import op

revision = '0025workspaces'
down_revision = '0024audit'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workspaces",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("is_default", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    )
    op.create_index("workspaces_one_default", "workspaces", ["is_default"], unique=True, postgresql_where=sa.text("is_default"))
    op.create_table(
        "workspace_members",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("workspace_id", sa.Integer(), sa.ForeignKey("workspaces.id", ondelete="CASCADE"), nullable=False),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.CheckConstraint("role IN ('annotator', 'reviewer', 'manager')", name="member_role"),
    )
    op.create_index(
        "workspace_members_workspace_wide", "workspace_members", ["workspace_id", "user_id"],
        unique=True, postgresql_where=sa.text("project_id IS NULL"),
    )
    op.create_index(
        "workspace_members_per_project", "workspace_members", ["workspace_id", "user_id", "project_id"],
        unique=True, postgresql_where=sa.text("project_id IS NOT NULL"),
    )
    op.create_index("workspace_members_user", "workspace_members", ["user_id"])
    op.execute("INSERT INTO workspaces (name, is_default) VALUES ('Default', true)")
    op.execute(
        "CREATE FUNCTION default_workspace_id() RETURNS integer LANGUAGE sql STABLE "
        "AS 'SELECT id FROM workspaces WHERE is_default'"
    )
    op.add_column("projects", sa.Column("workspace_id", sa.Integer(), sa.ForeignKey("workspaces.id"), nullable=True))
    op.execute("UPDATE projects SET workspace_id = default_workspace_id()")
    op.alter_column("projects", "workspace_id", nullable=False, server_default=sa.text("default_workspace_id()"))
    op.create_index("ix_projects_workspace_id", "projects", ["workspace_id"])
    op.execute(
        "INSERT INTO workspace_members (workspace_id, user_id, role) "
        "SELECT default_workspace_id(), id, role FROM users WHERE role IN ('annotator', 'reviewer')"
    )


def downgrade() -> None:
    op.drop_index("ix_projects_workspace_id", "projects")
    op.drop_column("projects", "workspace_id")
    op.execute("DROP FUNCTION default_workspace_id()")
    op.drop_table("workspace_members")
    op.drop_table("workspaces")
