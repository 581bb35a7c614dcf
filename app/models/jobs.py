"""What the worker reports: each background job's progress, outcome and error; stored agreement reports;
leak and agreement reports asked for and not yet taken by a job."""

from datetime import datetime
from typing import Any

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
    step: Mapped[str] = mapped_column(sa.Text, server_default="")  # what a long job is doing now; done/total count it
    done: Mapped[int] = mapped_column(server_default="0")
    total: Mapped[int] = mapped_column(server_default="0")
    attempts: Mapped[int] = mapped_column(server_default="0")
    error: Mapped[str | None] = mapped_column(sa.Text)
    started_at: Mapped[datetime] = created_at()
    finished_at: Mapped[datetime | None]


class JobRequest(Base):
    """A leak or agreement report asked for and not yet started: the job deletes it when it starts,
    and the reconcile job queues again any that is left (its defer failed)."""

    __tablename__ = "job_requests"

    task: Mapped[str] = mapped_column(sa.String(32), primary_key=True)  # leaks, agreement
    key: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)  # the project or stage id
    requested_at: Mapped[datetime] = created_at()


class AgreementReport(Base):
    """A stage's agreement figures as computed at one time (the dashboard shows the newest)."""

    __tablename__ = "agreement_reports"

    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
    stage_id: Mapped[int] = mapped_column(sa.ForeignKey("stages.id", ondelete="CASCADE"), index=True)
    report: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = created_at()
