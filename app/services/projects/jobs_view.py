"""The jobs page's data: procrastinate's queue joined with what our tasks reported (progress, error,
duration), periodic jobs grouped per task, job arguments named (project › stage), and worker liveness;
and a project's newest leak report job, which the export page and the API follow."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

# A task is periodic when procrastinate's scheduler has deferred it (it keeps the newest defer per task).
_PERIODIC_TASKS = "SELECT DISTINCT task_name FROM procrastinate_periodic_defers"

_ONE_OFF = sa.text(
    f"""
    SELECT j.id, j.task_name, j.status::text AS status, j.attempts, j.queue_name, j.args,
           r.label, r.step, r.done, r.total, r.error, r.started_at, r.finished_at
      FROM procrastinate_jobs j
      LEFT JOIN job_runs r ON r.job_id = j.id
     WHERE j.task_name NOT IN ({_PERIODIC_TASKS})
     ORDER BY j.id DESC
     LIMIT :limit
    """
)

_PERIODIC = sa.text(
    f"""
    SELECT g.task_name, g.runs, g.succeeded, g.failed, g.waiting, g.last_id,
           l.status::text AS last_status, e.at AS last_at, extract(epoch FROM now() - e.at) AS since
      FROM (SELECT task_name, count(*) AS runs,
                   count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
                   count(*) FILTER (WHERE status = 'failed') AS failed,
                   count(*) FILTER (WHERE status = 'todo') AS waiting,
                   max(id) FILTER (WHERE status <> 'todo') AS last_id
              FROM procrastinate_jobs
             WHERE task_name IN ({_PERIODIC_TASKS})
             GROUP BY task_name) g
      LEFT JOIN procrastinate_jobs l ON l.id = g.last_id
      LEFT JOIN LATERAL (SELECT max(at) AS at FROM procrastinate_events WHERE job_id = g.last_id) e ON true
     ORDER BY g.task_name
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
    step: str = ""
    where: str = ""  # "project › stage", or the project alone
    project_id: int | None = None

    @property
    def seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


@dataclass
class PeriodicRow:
    """One periodic task: how often it ran, and its newest run that started."""

    task: str
    runs: int
    succeeded: int
    failed: int
    waiting: int
    last_status: str | None
    last_at: datetime | None
    seconds_since: float | None = None

    @property
    def ago(self) -> str:
        return ago(self.seconds_since)


def _short(task_name: str) -> str:
    return task_name.split(":")[-1]


@dataclass
class _Names:
    stages: dict[int, tuple[int, str, str]]  # stage id -> (project id, project name, stage name)
    exports: dict[int, tuple[int, str, str]]  # export id -> (project id, project name, format)
    prompts: dict[int, tuple[int, str, int]]  # prompt id -> (stage id, draft kind, version)
    projects: dict[int, str]  # project id -> name


def _names(session: Session, args: list[dict[str, Any]]) -> _Names:
    """The projects, stages, exports and prompt versions that jobs' arguments name, in up to four queries."""
    prompt_ids = {a["prompt_id"] for a in args if isinstance(a.get("prompt_id"), int)}
    prompts = {}
    if prompt_ids:
        rows = session.execute(sa.text("SELECT id, stage_id, draft_kind, version FROM prompts WHERE id = ANY(:ids)"), {"ids": list(prompt_ids)})
        prompts = {r[0]: (r[1], r[2], r[3]) for r in rows}
    stage_ids = {a["stage_id"] for a in args if isinstance(a.get("stage_id"), int)} | {p[0] for p in prompts.values()}
    export_ids = {a["export_id"] for a in args if isinstance(a.get("export_id"), int)}
    project_ids = {a["project_id"] for a in args if isinstance(a.get("project_id"), int)}
    stages, exports, projects = {}, {}, {}
    if stage_ids:
        rows = session.execute(
            sa.text("SELECT s.id, p.id, p.name, s.name FROM stages s JOIN projects p ON p.id = s.project_id AND p.archived_at IS NULL"
                    " WHERE s.id = ANY(:ids)"),
            {"ids": list(stage_ids)},
        )
        stages = {r[0]: (r[1], r[2], r[3]) for r in rows}
    if export_ids:
        rows = session.execute(
            sa.text("SELECT e.id, p.id, p.name, e.format FROM exports e JOIN projects p ON p.id = e.project_id AND p.archived_at IS NULL"
                    " WHERE e.id = ANY(:ids)"),
            {"ids": list(export_ids)},
        )
        exports = {r[0]: (r[1], r[2], r[3]) for r in rows}
    if project_ids:
        rows = session.execute(sa.text("SELECT id, name FROM projects WHERE id = ANY(:ids) AND archived_at IS NULL"), {"ids": list(project_ids)})
        projects = {r[0]: r[1] for r in rows}
    return _Names(stages, exports, prompts, projects)


def _describe(task: str, args: dict[str, Any], names: _Names) -> tuple[str, str, int | None]:
    """(what the job does, where: "project › stage", project id) from its arguments."""
    if "prompt_id" in args and "stage_id" not in args:  # a draft batch: its prompt version names the stage
        prompt = names.prompts.get(args["prompt_id"])
        n = len(args.get("item_ids") or [])
        if prompt is None:
            return f"prompt {args['prompt_id']} (deleted) · {n} item{'s' if n != 1 else ''}", "", None
        args = {"stage_id": prompt[0], "kind": f"{prompt[1]} v{prompt[2]}", "item_ids": args.get("item_ids")}
    if "stage_id" in args:
        stage = names.stages.get(args["stage_id"])
        where = f"{stage[1]} › {stage[2]}" if stage else f"stage {args['stage_id']} (deleted)"
        project_id = stage[0] if stage else None
        if "kind" in args:
            n = len(args.get("item_ids") or [])
            return f"{args['kind']} · {n} item{'s' if n != 1 else ''}", where, project_id
        if task == "agreement":
            return "agreement report", where, project_id
        return task, where, project_id
    if "export_id" in args:
        export = names.exports.get(args["export_id"])
        if export is None:
            return f"export {args['export_id']}", "(deleted)", None
        return f"{export[2]} export #{args['export_id']}", export[1], export[0]
    if "project_id" in args:
        name = names.projects.get(args["project_id"])
        what = {"leaks": "leak report", "hash_images": "image hashes"}.get(task, task)
        return (what, name, args["project_id"]) if name else (what, f"project {args['project_id']} (deleted)", None)
    return "", "", None


def recent_jobs(session: Session, limit: int = 100) -> list[JobRow]:
    """The newest one-off jobs (suggestion batches, agreement reports, exports), named."""
    rows = session.execute(_ONE_OFF, {"limit": limit}).mappings().all()
    names = _names(session, [r["args"] or {} for r in rows])
    out = []
    for r in rows:
        task, args = _short(r["task_name"]), r["args"] or {}
        what, where, project_id = _describe(task, args, names)
        out.append(
            JobRow(
                id=r["id"], task=task, status=r["status"], attempts=r["attempts"], queue=r["queue_name"],
                label=what or r["label"] or "", done=r["done"] or 0,
                total=r["total"] or len(args.get("item_ids") or []), error=r["error"],
                started_at=r["started_at"], finished_at=r["finished_at"], step=r["step"] or "", where=where, project_id=project_id,
            )
        )
    return out


def periodic_jobs(session: Session) -> list[PeriodicRow]:
    """One line per periodic task (reconcile runs every minute: its rows would flood the list)."""
    return [
        PeriodicRow(
            _short(r["task_name"]), r["runs"], r["succeeded"], r["failed"], r["waiting"], r["last_status"], r["last_at"],
            float(r["since"]) if r["since"] is not None else None,
        )
        for r in session.execute(_PERIODIC).mappings()
    ]


def counts(session: Session) -> dict[str, int]:
    """One-off jobs by status."""
    q = sa.text(f"SELECT status::text, count(*) FROM procrastinate_jobs WHERE task_name NOT IN ({_PERIODIC_TASKS}) GROUP BY 1")
    return dict(session.execute(q).all())


# -- prompt runs --------------------------------------------------------------------------------------------

_RUN_JOBS = sa.text(
    """
    SELECT run.prompt_id, run.id AS run_id, j.status::text AS status,
           jsonb_array_length(j.args->'item_ids') AS items, r.done, r.error
      FROM (SELECT DISTINCT ON (prompt_id) * FROM prompt_runs
             WHERE prompt_id = ANY(:prompts) AND (CAST(:run AS bigint) IS NULL OR id = :run)
             ORDER BY prompt_id, id DESC) run
      LEFT JOIN procrastinate_jobs j
        ON j.task_name = 'vlcurate:draft' AND j.id BETWEEN run.first_job AND run.last_job
       AND (j.args->>'prompt_id')::bigint = run.prompt_id
      LEFT JOIN job_runs r ON r.job_id = j.id
    """
)


@dataclass
class RunProgress:
    """A run of a prompt version: how many of its draft jobs wait, run, succeeded or failed, and the
    items they hold and have done (a succeeded job has done all of its items)."""

    run_id: int | None = None
    jobs: int = 0
    waiting: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    items: int = 0
    done: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return self.waiting + self.running > 0


def draft_runs(session: Session, prompt_ids: list[int], run_id: int | None = None) -> dict[int, RunProgress]:
    """Per prompt version, the progress of its newest run (or of run `run_id`), from the draft jobs
    that run queued; a version never run gets an empty one."""
    out = {p: RunProgress() for p in prompt_ids}
    if not prompt_ids:
        return out
    for r in session.execute(_RUN_JOBS, {"prompts": list(prompt_ids), "run": run_id}).mappings():
        run = out[r["prompt_id"]]
        run.run_id = r["run_id"]
        if r["status"] is None:
            continue  # no job: every batch was waiting already, or the jobs are gone
        n = r["items"] or 0
        run.jobs += 1
        run.items += n
        run.waiting += r["status"] == "todo"
        run.running += r["status"] == "doing"
        run.succeeded += r["status"] == "succeeded"
        run.failed += r["status"] == "failed"
        run.done += n if r["status"] == "succeeded" else (r["done"] or 0)
        if r["status"] == "failed" and r["error"] and r["error"] not in run.errors:
            run.errors.append(r["error"])
    return out


# -- a project's leak report job ----------------------------------------------------------------------

# The newest leak job of the project (by the queue's index on its queue name), with what it reported,
# and whether a report was asked for that no job has taken yet (its defer failed: reconcile queues it).
_LEAK_JOB = sa.text(
    """
    SELECT j.id, j.status::text AS status, r.step, r.done, r.total, r.error,
           EXISTS (SELECT 1 FROM job_requests q WHERE q.task = 'leaks' AND q.key = :project) AS requested
      FROM (SELECT 1) AS one
      LEFT JOIN LATERAL (SELECT id, status FROM procrastinate_jobs
                          WHERE queue_name = 'maintenance' AND task_name = 'vlcurate:leaks'
                            AND args->>'project_id' = CAST(:project AS text)
                          ORDER BY id DESC LIMIT 1) AS j ON true
      LEFT JOIN job_runs r ON r.job_id = j.id
    """
)
_STATUS = {"todo": "queued", "doing": "running", "succeeded": "succeeded"}  # the others (failed, cancelled, aborted): failed


@dataclass
class JobState:
    """A job as a page or a script follows it: queued, running (its step, done of total), succeeded or failed."""

    job_id: int | None  # None while its request waits for the reconcile job to queue it
    status: str
    step: str = ""
    done: int = 0
    total: int = 0
    error: str | None = None

    @property
    def active(self) -> bool:
        return self.status in ("queued", "running")


def leak_job(session: Session, project_id: int) -> JobState | None:
    """The project's newest leak report job (None when none was ever asked for). A request that no
    job has taken yet makes it "queued", whatever became of the jobs before."""
    row = session.execute(_LEAK_JOB, {"project": project_id}).mappings().one()
    if row["id"] is None and not row["requested"]:
        return None
    status = _STATUS.get(row["status"], "failed") if row["id"] is not None else "queued"
    if row["requested"] and status != "queued":  # the job asked for after this one is not queued yet
        return JobState(None, "queued")
    return JobState(row["id"], status, row["step"] or "", row["done"] or 0, row["total"] or 0, row["error"])


# -- worker liveness -------------------------------------------------------------------------------------

# procrastinate workers beat every 10 s; a shorter window than a few beats would flicker.
MIN_SILENCE_SECONDS = 30


@dataclass
class WorkerStatus:
    alive: int  # workers whose last heartbeat is recent
    last_heartbeat: datetime | None  # newest heartbeat of any worker, None when none was ever recorded
    seconds_since: float | None
    waiting: int  # jobs queued for a worker

    @property
    def down(self) -> bool:
        return self.alive == 0


def worker_status(session: Session, stalled_seconds: int) -> WorkerStatus:
    """Whether a worker has sent a heartbeat within `stalled_seconds` (the setting that also decides
    when a silent worker's jobs are run again), from procrastinate's table of workers."""
    window = max(stalled_seconds, MIN_SILENCE_SECONDS)
    row = session.execute(
        sa.text(
            """
            SELECT count(*) FILTER (WHERE last_heartbeat >= now() - make_interval(secs => :window)) AS alive,
                   max(last_heartbeat) AS last,
                   extract(epoch FROM now() - max(last_heartbeat)) AS since,
                   (SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo') AS waiting
              FROM procrastinate_workers
            """
        ),
        {"window": window},
    ).mappings().one()
    since = float(row["since"]) if row["since"] is not None else None
    return WorkerStatus(row["alive"], row["last"], since, row["waiting"])


def ago(seconds: float | None) -> str:
    """'12 s', '5 min', '3 h', '2 days' ago."""
    if seconds is None:
        return ""
    s = max(0, int(seconds))
    if s < 90:
        return f"{s} s"
    if s < 90 * 60:
        return f"{round(s / 60)} min"
    if s < 36 * 3600:
        return f"{round(s / 3600)} h"
    return f"{round(s / 86400)} days"
