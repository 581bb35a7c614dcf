"""Alembic is the only schema source: no drift from the models, and migrations reverse cleanly."""

from __future__ import annotations

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from app.migrate import check_current, downgrade, upgrade
from app.models import Base
from tests.conftest import create_scratch_database, drop_database


def test_models_and_migrations_do_not_drift(engine):
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata)
    assert diff == []


def test_upgrade_downgrade_upgrade(server_url):
    url = create_scratch_database(server_url, "vlcurate_migrate")
    try:
        upgrade(url)
        assert check_current(url)
        downgrade(url, "base")
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        with engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names())
        engine.dispose()
        assert tables <= {"alembic_version"}
        assert not check_current(url)
        upgrade(url)
        assert check_current(url)
    finally:
        drop_database(server_url, url)
