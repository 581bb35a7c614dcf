"""procrastinate: the background job queue's schema (procrastinate 3.10.0)

The SQL is procrastinate's own schema file, vendored in migrations/sql so that this migration
always creates the same objects whatever procrastinate version is installed. Upgrading
procrastinate past 3.10 means adding its migration scripts as new Alembic migrations.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 05:40:00
"""

from pathlib import Path

from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

SCHEMA = Path(__file__).resolve().parent.parent / "sql" / "procrastinate-3.10.0-schema.sql"


def upgrade() -> None:
    op.execute(SCHEMA.read_text())


def downgrade() -> None:
    # Tables take their triggers and indexes with them; then every procrastinate function,
    # procedure and type, found in the catalog so that none is missed.
    op.execute("""
        DROP TABLE IF EXISTS procrastinate_events, procrastinate_periodic_defers, procrastinate_jobs,
            procrastinate_workers CASCADE;
        DO $$
        DECLARE r record;
        BEGIN
            FOR r IN SELECT p.oid::regprocedure AS sig, p.prokind FROM pg_proc p
                     JOIN pg_namespace n ON n.oid = p.pronamespace
                     WHERE n.nspname = current_schema() AND p.proname LIKE 'procrastinate\\_%'
            LOOP
                EXECUTE format('DROP %s %s CASCADE', CASE WHEN r.prokind = 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END, r.sig);
            END LOOP;
            FOR r IN SELECT t.typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
                     WHERE n.nspname = current_schema() AND t.typname LIKE 'procrastinate\\_%' AND t.typtype IN ('e', 'c')
            LOOP
                EXECUTE format('DROP TYPE IF EXISTS %I CASCADE', r.typname);
            END LOOP;
        END $$;
    """)
