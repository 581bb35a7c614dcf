"""Alembic wiring: the configuration for `migrations/`, upgrade/downgrade/revision helpers, and the
check that a database is at the newest migration.

Alembic is imported only by the functions that run it: the check, which every command that opens
the database makes, reads the newest revision from the migration files' `revision` and
`down_revision` lines itself (importing Alembic costs a command CPU; docs/cli-startup.md).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from app import ROOT

if TYPE_CHECKING:
    import sqlalchemy as sa
    from alembic.config import Config
    from sqlalchemy.engine import URL

VERSIONS = ROOT / "migrations" / "versions"
# `revision = '0018sessions'`, `down_revision: str | None = None`, `down_revision = ('a', 'b')` (a merge).
_ASSIGNED = re.compile(r"^(revision|down_revision)\s*(?::[^=\n]*)?=\s*(.+?)\s*(?:#.*)?$", re.M)


def alembic_config(url: URL) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    # Kept as an attribute, not an ini option: ini interpolation would mangle '%' in passwords.
    cfg.attributes["url"] = url
    return cfg


def upgrade(url: URL, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(alembic_config(url), revision)


def downgrade(url: URL, revision: str = "base") -> None:
    from alembic import command

    command.downgrade(alembic_config(url), revision)


def include_object(obj, name, type_, reflected, compare_to) -> bool:
    """Autogenerate compares our models only: procrastinate's tables come from its own SQL (0003)."""
    return not (type_ in ("table", "index") and name and name.startswith(("procrastinate_", "idx_procrastinate_")))


def revision(url: URL, message: str) -> None:
    from alembic import command

    command.revision(alembic_config(url), message=message, autogenerate=True)


def head_revisions() -> set[str]:
    """The newest revisions of migrations/versions: those no other migration names as its down_revision
    (what Alembic's `heads` says; tests/test_migrations.py compares them)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in VERSIONS.glob("*.py"):
        found = dict(_ASSIGNED.findall(path.read_text(encoding="utf-8")))
        revisions.add(ast.literal_eval(found["revision"]))
        down = ast.literal_eval(found.get("down_revision", "None"))
        parents.update(down if isinstance(down, (tuple, list)) else [down] if down else [])
    return revisions - parents


def check_current(target: URL | sa.Engine) -> bool:
    """Whether the database (a URL, or an engine whose pool the command goes on using) is at the newest migration."""
    import sqlalchemy as sa

    engine = target if isinstance(target, sa.Engine) else sa.create_engine(target, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            if conn.scalar(sa.text("SELECT to_regclass('alembic_version')")) is None:
                return False
            current = set(conn.scalars(sa.text("SELECT version_num FROM alembic_version")))
    finally:
        if engine is not target:
            engine.dispose()
    return current == head_revisions()
