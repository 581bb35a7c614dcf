"""REST API for suggestions computed outside (a model in a notebook): pushed in batches to a stage."""

from __future__ import annotations

from fastapi import Depends

from app.models import Role
from app.services.drafting import suggestion_push
from app.web.deps import Db, Id, LiveProject, Principal, api_role
from app.web.limits import ApiRouter
from app.web.schemas import SuggestionsIn, SuggestionsOut

router = ApiRouter(tags=["suggestions"], dependencies=[LiveProject])


@router.post("/stages/{stage_id}/suggestions", response_model=SuggestionsOut)
def push_suggestions(stage_id: Id, body: SuggestionsIn, session: Db, user: Principal = Depends(api_role(Role.admin))):
    """Store a batch of suggestions, all or none: each names its item by external id and one of the
    stage's suggestion kinds. Idempotent by model version: the same row again changes nothing."""
    stored, unchanged = suggestion_push.push(session, stage_id, [s.model_dump() for s in body.suggestions])
    return SuggestionsOut(stored=stored, unchanged=unchanged)
