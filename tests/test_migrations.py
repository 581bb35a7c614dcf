"""Alembic is the only schema source: no drift from the models, and migrations reverse cleanly."""

from __future__ import annotations

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from app.migrate import alembic_config, check_current, downgrade, head_revisions, include_object, upgrade
from app.models import Base
from tests.conftest import create_scratch_database, drop_database


def test_models_and_migrations_do_not_drift(engine):
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True, "include_object": include_object})
        diff = compare_metadata(context, Base.metadata)
    assert diff == []


def test_the_newest_revision_read_from_the_files_is_alembics(db_url):
    from alembic.script import ScriptDirectory

    assert head_revisions() == set(ScriptDirectory.from_config(alembic_config(db_url)).get_heads())


def test_upgrade_downgrade_upgrade(server_url):
    url = create_scratch_database(server_url, "vlcurate_migrate")
    try:
        upgrade(url)
        assert check_current(url)
        downgrade(url, "base")
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        with engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names())
            # The job queue's functions, procedures and types go too, not only its tables.
            leftovers = conn.scalars(sa.text(
                "SELECT proname FROM pg_proc WHERE proname LIKE 'procrastinate%' "
                "UNION ALL SELECT typname FROM pg_type WHERE typname LIKE 'procrastinate%'"
            )).all()
        engine.dispose()
        assert tables <= {"alembic_version"}
        assert leftovers == []
        assert not check_current(url)
        upgrade(url)
        assert check_current(url)
    finally:
        drop_database(server_url, url)
