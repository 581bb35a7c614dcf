"""REST API for reviewers: the review queue of a stage, accepting or writing a final version, and
sending an item back to its annotators (the same services and checks as the review pages)."""

from __future__ import annotations

from fastapi import Depends, Query

from app.models import Role
from app.services.review import review
from app.web.deps import BigId, Db, Id, LiveProject, Principal, api_role
from app.web.limits import ApiRouter
from app.web.schemas import ReviewIn, ReviewOut, ReviewRow, SendBackIn

router = ApiRouter(tags=["review"], dependencies=[LiveProject])
reviewer = api_role(Role.reviewer)


@router.get("/stages/{stage_id}/review", response_model=list[ReviewRow])
def review_queue(stage_id: Id, session: Db, limit: int = Query(500, ge=1, le=5000), user: Principal = Depends(reviewer)):
    """Items of the stage waiting for review, the ones annotators disagree on most first."""
    return [ReviewRow(**row.__dict__) for row in review.review_queue(session, stage_id, limit=limit, reviewer_id=user.id)]


@router.post("/stages/{stage_id}/review/{item_id}", response_model=ReviewOut)
def resolve(stage_id: Id, item_id: BigId, body: ReviewIn, session: Db, user: Principal = Depends(reviewer)):
    """Finalize a reviewed item: accept one annotation, or give the final version (validated like an annotation)."""
    item = review.resolve(session, stage_id, item_id, user.id, accept_annotation_id=body.accept_annotation_id,
                          payload=body.payload, comment=body.comment)
    return ReviewOut(item_id=item.id, status=item.status, stage_id=item.stage_id)


@router.post("/stages/{stage_id}/review/{item_id}/send-back", response_model=ReviewOut)
def send_back(stage_id: Id, item_id: BigId, body: SendBackIn, session: Db, user: Principal = Depends(reviewer)):
    """Return a reviewed item to its annotators with a comment; their next submits are new revisions."""
    item = review.send_back(session, stage_id, item_id, user.id, body.comment)
    return ReviewOut(item_id=item.id, status=item.status, stage_id=item.stage_id)


@router.post("/stages/{stage_id}/review/{item_id}/take-back", response_model=ReviewOut)
def take_back(stage_id: Id, item_id: BigId, session: Db, user: Principal = Depends(reviewer)):
    """Bring a sent-back item back to review: each annotator's latest annotation counts again."""
    item = review.take_back(session, stage_id, item_id, user.id)
    return ReviewOut(item_id=item.id, status=item.status, stage_id=item.stage_id)
