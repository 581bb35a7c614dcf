"""The gold-item HTTP API under /api/v1: import gold answers, make a final gold, accuracy; the qualification
quiz and auto-pause: standings, lift a pause, reset quiz tries."""

from __future__ import annotations


from datetime import datetime

from fastapi import Body, Depends, File, Query, Request, Response, UploadFile
from pydantic import BaseModel, Field

from app.models import Role
from app.services.quality import accuracy, gold, qualification
from app.web.deps import INT4_MAX, BigId, Db, Id, LiveProject, Principal, api_role, api_user
from app.web.limits import ApiRouter
from app.web.schemas import GoldAccuracy, GoldImported
from app.web.uploads import spooled

router = ApiRouter(tags=["api"], dependencies=[LiveProject])


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
    return accuracy.accuracy_report(session, stage_id, samples=samples, seed=seed)


class Standing(BaseModel):
    annotator_id: int
    annotator: str
    quiz: str = Field(description="passed, failed (no try left), taking, or empty when the stage has no quiz")
    tries_used: int = Field(description="Quiz tries failed")
    last_score: float | None = Field(description="The score of the last failed try (the sum of its answers' gold scores)")
    paused_at: datetime | None = Field(description="When auto-pause stopped their leases; null when not paused")
    pause_accuracy: float | None = Field(description="The rolling gold accuracy that paused them")


@router.get("/stages/{stage_id}/qualification", response_model=list[Standing])
def standings(stage_id: Id, session: Db, user: Principal = Depends(api_role(Role.reviewer))):
    """Everyone who took the stage's quiz or is paused there: quiz standing, tries used, pause."""
    return [Standing(**s.__dict__) for s in qualification.standings(session, stage_id)]


@router.post("/stages/{stage_id}/annotators/{annotator_id}/lift-pause", status_code=204, response_class=Response)
def lift_pause(stage_id: Id, annotator_id: Id, session: Db, user: Principal = Depends(api_user)) -> None:
    """Lift the annotator's auto-pause in the stage: their claims give items again (an admin or the
    workspace's manager; 409 when they are not paused)."""
    qualification.lift_pause(session, stage_id, annotator_id, user)


@router.post("/stages/{stage_id}/annotators/{annotator_id}/reset-quiz", status_code=204, response_class=Response)
def reset_quiz(stage_id: Id, annotator_id: Id, session: Db, user: Principal = Depends(api_user)) -> None:
    """Give the annotator every try of the stage's quiz again (an admin or the workspace's manager)."""
    qualification.reset_quiz(session, stage_id, annotator_id, user)
