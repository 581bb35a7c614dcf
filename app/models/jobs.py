"""What the worker reports about each background job: progress, outcome and error, for the jobs page."""

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at


class JobRun(Base):
    """One procrastinate job as our tasks saw it; procrastinate's own tables hold the queue."""

    __tablename__ = "job_runs"

    job_id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    task: Mapped[str] = mapped_column(sa.String(64))
    label: Mapped[str] = mapped_column(sa.Text, server_default="")
    # running, succeeded, failed (may be retried; procrastinate's status says which)
    status: Mapped[str] = mapped_column(sa.String(16))
    done: Mapped[int] = mapped_column(server_default="0")
    total: Mapped[int] = mapped_column(server_default="0")
    attempts: Mapped[int] = mapped_column(server_default="0")
    error: Mapped[str | None] = mapped_column(sa.Text)
    started_at: Mapped[datetime] = created_at()
    finished_at: Mapped[datetime | None]
