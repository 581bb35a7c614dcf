"""Maintained counts: item totals per project, stage and status, a stage's finished items and first
annotations, and each annotator's submits per stage. Triggers in migration 0011 keep them exact in
the transaction that changes the counted rows (bulk imports and COPY included), so progress figures
read a few rows instead of counting millions. Rows are split into shards (the writing backend's pid
mod 16) so that concurrent submits rarely wait on one counter row; a figure is the sum over shards."""

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base


class ItemCount(Base):
    """Items of a project by stage (0: in no stage) and status."""

    __tablename__ = "item_counts"

    project_id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    stage_id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    status: Mapped[str] = mapped_column(sa.String(16), primary_key=True)
    shard: Mapped[int] = mapped_column(sa.SmallInteger, primary_key=True, autoincrement=False)
    n: Mapped[int] = mapped_column(sa.BigInteger)


class StageCount(Base):
    """Of a stage: items with a final record (`finished`) and first revisions of annotations."""

    __tablename__ = "stage_counts"

    stage_id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    shard: Mapped[int] = mapped_column(sa.SmallInteger, primary_key=True, autoincrement=False)
    finished: Mapped[int] = mapped_column(sa.BigInteger, server_default="0")
    annotations: Mapped[int] = mapped_column(sa.BigInteger, server_default="0")


class AnnotatorCount(Base):
    """An annotator's submitted assignments in a stage ("you did N")."""

    __tablename__ = "annotator_counts"

    stage_id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    annotator_id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    submitted: Mapped[int] = mapped_column(sa.BigInteger)
