"""The leaks HTTP API under /api/v1: leak reports, made by the worker (a request queues the job,
follows it and reads the stored report), and keeping each leaked group in one split."""

from __future__ import annotations

from fastapi import Depends, Query, Request

from app.models import Role
from app.web.deps import Db, Id, LiveProject, Principal, api_role
from app.web.limits import ApiRouter
from app.web.schemas import LeakJob, LeakReport, SplitVersionOut

router = ApiRouter(tags=["api"], dependencies=[LiveProject])


def _leak_job(session, project_id: int) -> LeakJob:
    from app.services.projects import jobs_view

    state = jobs_view.leak_job(session, project_id) or jobs_view.JobState(None, "none")
    base = f"/api/v1/projects/{project_id}/leaks"
    return LeakJob(project_id=project_id, job_id=state.job_id, status=state.status, step=state.step, done=state.done,
                   total=state.total, error=state.error, poll=f"{base}/job", report=base)


@router.post("/projects/{project_id}/leaks", status_code=202, response_model=LeakJob)
def find_leaks(request: Request, project_id: Id, session: Db, user: Principal = Depends(api_role(Role.admin))):
    """Queue the worker job that makes the newest split version's leakage and duplicates report
    (one waits at a time: asking again while one waits returns that one). Follow it at `poll`;
    once it succeeded, GET `report`."""
    from app.services.exports import splits
    from app.services.projects import projects
    from app.worker import jobs

    projects.get_project(session, project_id)  # 404 for an unknown project
    splits.get_definition(session, project_id)  # 404 without a split version: nothing to report on
    jobs.defer_leaks(request.app.state.settings, project_id)
    return _leak_job(session, project_id)


@router.get("/projects/{project_id}/leaks/job", response_model=LeakJob)
def leak_job(project_id: Id, session: Db, user: Principal = Depends(api_role(Role.admin))):
    """The project's newest leak report job: queued, running (its step, done of total), succeeded or
    failed (with its error); status "none" when no report was ever asked for."""
    from app.services.projects import projects

    projects.get_project(session, project_id)  # 404 for an unknown project
    return _leak_job(session, project_id)


@router.get("/projects/{project_id}/leaks", response_model=LeakReport)
def leak_report(
    project_id: Id,
    session: Db,
    version: int | None = Query(None, ge=1, le=2**31 - 1, description="Split definition version (default: the newest)"),
    user: Principal = Depends(api_role(Role.admin)),
):
    """The newest stored leakage and duplicates report of a split version: leaked groups per split
    pair and duplicate groups within a split, each with its items and why they match."""
    from app.services.leaks import leaks

    return leaks.stored(session, project_id, version)


@router.post("/projects/{project_id}/leaks/keep-together", status_code=201, response_model=SplitVersionOut)
def keep_together(project_id: Id, session: Db, user: Principal = Depends(api_role(Role.admin))):
    """Put each leaked group of the newest split version's newest report into one split: saved as a
    new split version (POST .../leaks again to check it)."""
    from app.services.leaks import leaks

    new = leaks.keep_newest_together(session, project_id, actor_id=user.id)
    return SplitVersionOut(version=new.version, config=new.config, counts=new.ordered_counts)
