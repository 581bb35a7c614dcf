"""Declarative base and shared column types for all tables."""

from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, mapped_column

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSONB, list[Any]: JSONB, datetime: sa.DateTime(timezone=True)}


def created_at():
    return mapped_column(sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def status_column(statuses: type[StrEnum], start: StrEnum):
    """A lifecycle status (app.lifecycle): VARCHAR(16) in the database, where a named CHECK lists the
    values, and the enum member in Python. Unknown strings pass through to meet that CHECK."""
    return mapped_column(
        sa.Enum(
            statuses,
            native_enum=False,
            create_constraint=False,
            length=16,
            values_callable=lambda e: [m.value for m in e],
        ),
        server_default=start.value,
    )
