"""Alembic wiring: the configuration for `migrations/`, and upgrade/downgrade/revision helpers."""

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import URL

from app import ROOT


def alembic_config(url: URL) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    # Kept as an attribute, not an ini option: ini interpolation would mangle '%' in passwords.
    cfg.attributes["url"] = url
    return cfg


def upgrade(url: URL, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def downgrade(url: URL, revision: str = "base") -> None:
    command.downgrade(alembic_config(url), revision)


def include_object(obj, name, type_, reflected, compare_to) -> bool:
    """Autogenerate compares our models only: procrastinate's tables come from its own SQL (0003)."""
    return not (type_ in ("table", "index") and name and name.startswith(("procrastinate_", "idx_procrastinate_")))


def revision(url: URL, message: str) -> None:
    command.revision(alembic_config(url), message=message, autogenerate=True)


def check_current(url: URL) -> bool:
    """Whether the database is at the newest migration."""
    import sqlalchemy as sa
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    heads = set(ScriptDirectory.from_config(alembic_config(url)).get_heads())
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            return set(MigrationContext.configure(conn).get_current_heads()) == heads
    finally:
        engine.dispose()
