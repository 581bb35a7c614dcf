"""The gold-item and leaks HTTP API under /api/v1: import gold answers, make a final gold, accuracy, leak
reports (made by the worker: a request queues the job, follows it and reads the stored report)."""

from __future__ import annotations


from fastapi import Body, Depends, File, Query, Request, UploadFile
from pydantic import BaseModel, Field

from app.models import Role
from app.services import gold
from app.web.deps import INT4_MAX, BigId, Db, Id, Principal, api_role
from app.web.limits import ApiRouter
from app.web.schemas import GoldAccuracy, GoldImported, LeakJob, LeakReport, SplitVersionOut
from app.web.uploads import spooled

router = ApiRouter(tags=["api"])


class MakeGoldIn(BaseModel):
    stage_id: int = Field(ge=0, le=INT4_MAX, description="The stage whose final record becomes the truth")


@router.post("/stages/{stage_id}/gold", response_model=GoldImported)
def import_gold(
    request: Request,
    stage_id: Id,
    session: Db,
    file: UploadFile = File(..., description='JSONL: {"id": "<external id>", "answer": {<payload as the stage\'s submit takes it>}} per line'),
    user: Principal = Depends(api_role(Role.admin)),
):
    """Mark the items named by external id as gold items of the stage with their correct answers.
    Answers are validated like annotations; any bad line imports nothing (422 lists every line)."""
    body = spooled(file, request.app.state.settings.max_upload_bytes).read()
    return GoldImported(imported=gold.import_answers(session, stage_id, body, actor_id=user.id))


@router.post("/items/{item_id}/gold", response_model=GoldImported)
def make_final_gold(item_id: BigId, session: Db, body: MakeGoldIn = Body(...), user: Principal = Depends(api_role(Role.admin))):
    """Make the item's final record in the stage the truth of a gold item there (it leaves the data)."""
    gold.make_final_gold(session, item_id, body.stage_id, actor_id=user.id)
    return GoldImported(imported=1)


@router.get("/stages/{stage_id}/gold/accuracy", response_model=GoldAccuracy)
def gold_accuracy(
    stage_id: Id,
    session: Db,
    samples: int = Query(1000, ge=0, le=10_000),
    seed: int = Query(0, ge=0, le=2**31 - 1),
    user: Principal = Depends(api_role(Role.reviewer)),
):
    """Accuracy on the stage's gold items per annotator: answers, estimate with its bootstrap 95%
    interval, whether flagged, and the accuracy by day."""
    return gold.accuracy_report(session, stage_id, samples=samples, seed=seed)


def _leak_job(session, project_id: int) -> LeakJob:
    from app.services import jobs_view

    state = jobs_view.leak_job(session, project_id) or jobs_view.JobState(None, "none")
    base = f"/api/v1/projects/{project_id}/leaks"
    return LeakJob(project_id=project_id, job_id=state.job_id, status=state.status, step=state.step, done=state.done,
                   total=state.total, error=state.error, poll=f"{base}/job", report=base)


@router.post("/projects/{project_id}/leaks", status_code=202, response_model=LeakJob)
def find_leaks(request: Request, project_id: Id, session: Db, user: Principal = Depends(api_role(Role.admin))):
    """Queue the worker job that makes the newest split version's leakage and duplicates report
    (one waits at a time: asking again while one waits returns that one). Follow it at `poll`;
    once it succeeded, GET `report`."""
    from app.services import projects, splits
    from app.worker import jobs

    projects.get_project(session, project_id)  # 404 for an unknown project
    splits.get_definition(session, project_id)  # 404 without a split version: nothing to report on
    jobs.defer_leaks(request.app.state.settings, project_id)
    return _leak_job(session, project_id)


@router.get("/projects/{project_id}/leaks/job", response_model=LeakJob)
def leak_job(project_id: Id, session: Db, user: Principal = Depends(api_role(Role.admin))):
    """The project's newest leak report job: queued, running (its step, done of total), succeeded or
    failed (with its error); status "none" when no report was ever asked for."""
    from app.services import projects

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
    from app.services import leaks

    return leaks.stored(session, project_id, version)


@router.post("/projects/{project_id}/leaks/keep-together", status_code=201, response_model=SplitVersionOut)
def keep_together(project_id: Id, session: Db, user: Principal = Depends(api_role(Role.admin))):
    """Put each leaked group of the newest split version's newest report into one split: saved as a
    new split version (POST .../leaks again to check it)."""
    from app.services import leaks

    new = leaks.keep_newest_together(session, project_id, actor_id=user.id)
    return SplitVersionOut(version=new.version, config=new.config, counts=new.ordered_counts)
