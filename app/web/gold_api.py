"""The gold-item HTTP API under /api/v1: import gold answers, make a final gold, accuracy."""

from __future__ import annotations


from fastapi import Body, Depends, File, Query, Request, UploadFile
from pydantic import BaseModel, Field

from app.models import Role
from app.services.quality import accuracy, gold
from app.web.deps import BigId, Db, INT4_MAX, Id, LiveProject, Principal, api_role
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
