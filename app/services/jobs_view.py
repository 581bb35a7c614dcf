"""The jobs page's data: procrastinate's queue joined with what our tasks reported (progress, error, duration)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

_RECENT = sa.text(
    """
    SELECT j.id, j.task_name, j.status::text AS status, j.attempts, j.queue_name, j.args,
           r.label, r.done, r.total, r.error, r.started_at, r.finished_at
      FROM procrastinate_jobs j
      LEFT JOIN job_runs r ON r.job_id = j.id
     ORDER BY j.id DESC
     LIMIT :limit
    """
)


@dataclass
class JobRow:
    id: int
    task: str
    status: str
    attempts: int
    queue: str
    label: str
    done: int
    total: int
    error: str | None
    started_at: datetime | None
    finished_at: datetime | None

    @property
    def seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


def _label(task: str, args: dict[str, Any]) -> str:
    if "kind" in args:
        return f"{args['kind']} · stage {args.get('stage_id')} · {len(args.get('item_ids') or [])} items"
    return task


def recent_jobs(session: Session, limit: int = 100) -> list[JobRow]:
    rows = session.execute(_RECENT, {"limit": limit}).mappings()
    return [
        JobRow(
            id=r["id"],
            task=r["task_name"].split(":")[-1],
            status=r["status"],
            attempts=r["attempts"],
            queue=r["queue_name"],
            label=r["label"] or _label(r["task_name"], r["args"] or {}),
            done=r["done"] or 0,
            total=r["total"] or len((r["args"] or {}).get("item_ids") or []),
            error=r["error"],
            started_at=r["started_at"],
            finished_at=r["finished_at"],
        )
        for r in rows
    ]


def counts(session: Session) -> dict[str, int]:
    return dict(session.execute(sa.text("SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY 1")).all())
