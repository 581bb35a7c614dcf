"""Alembic environment: runs migrations online against the URL given by app.migrate."""

import sqlalchemy as sa
from alembic import context

from app.migrate import include_object
from app.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    engine = sa.create_engine(config.attributes["url"], poolclass=sa.pool.NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection, target_metadata=target_metadata, compare_type=True, include_object=include_object
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("vlcurate runs migrations online only: use `vlcurate db upgrade`")
run_migrations_online()
