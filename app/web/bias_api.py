"""The draft-bias report under /api/v1 (reviewers and admins): JSON, and its figures as Parquet rows."""

from __future__ import annotations

from typing import Any

from fastapi import Depends, Query, Response
from pydantic import BaseModel, Field

from app.models import Role
from app.services.quality import bias
from app.web.assets import attachment
from app.web.deps import Db, Id, LiveProject, Principal, api_role
from app.web.limits import ApiRouter

router = ApiRouter(tags=["quality"], dependencies=[LiveProject])
reviewer = api_role(Role.reviewer)
PARQUET = "application/vnd.apache.parquet"
PARQUET_FILE = {200: {"description": "The figures as Parquet", "content": {PARQUET: {"schema": {"type": "string", "format": "binary"}}}}}
SAMPLES = Query(1000, ge=0, le=10_000, description="Bootstrap samples of each interval")
SEED = Query(0, ge=0, le=2**31 - 1, description="The bootstrap's seed")


class DraftBias(BaseModel):
    """What drafts do to annotators in a stage (docs/draft-bias.md). Each figure is {estimate, low, high, n}
    with a 95 % bootstrap interval; arms are `shown`, `control` (drafts hidden) and `probe`."""

    stage_id: int
    control_share: float = Field(description="Share of assignments in the control arm")
    arm_seed: int = Field(description="The seed of the arms' draw")
    probe_share: float = Field(description="Share of gold assignments outside the control arm shown a probe")
    samples: int
    seed: int
    overall: dict[str, Any] = Field(description="The stage's figures: arms, acceptance, edit_rate, edit_distance, probe_catch, shift")
    models: list[dict[str, Any]] = Field(description="Per draft kind, model version and prompt: acceptance, edit rate, edit distance")
    annotators: list[dict[str, Any]] = Field(description="Per annotator: the stage's figures over their answers")


@router.get("/stages/{stage_id}/bias", response_model=DraftBias)
def draft_bias(stage_id: Id, session: Db, samples: int = SAMPLES, seed: int = SEED, user: Principal = Depends(reviewer)):
    """Acceptance and edit rates with drafts shown and hidden, probe catch rate, gold agreement and time
    per arm, and the label shift between arms, per stage, model version and annotator."""
    return bias.stage_report(session, stage_id, samples=samples, seed=seed)


@router.get("/stages/{stage_id}/bias.parquet", response_class=Response, responses=PARQUET_FILE)
def draft_bias_file(stage_id: Id, session: Db, samples: int = SAMPLES, seed: int = SEED, user: Principal = Depends(reviewer)):
    """The report's figures as rows: scope (stage, model, annotator), group, figure, estimate, low, high, n."""
    body = bias.to_parquet(bias.stage_report(session, stage_id, samples=samples, seed=seed))
    return Response(body, media_type=PARQUET, headers={"Content-Disposition": attachment(f"stage-{stage_id}-draft-bias.parquet")})
