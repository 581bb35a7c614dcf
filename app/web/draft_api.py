"""The drafting HTTP API under /api/v1 (admins): a stage's draft kinds and prompt versions, a new
version, a run over the stage's items (202 with its jobs), a version's counts and run progress, and
the evaluation of versions against the finals as JSON or Parquet."""

from __future__ import annotations

from fastapi import Depends, Query, Request, Response
from sqlalchemy.orm import Session

from app.datasets.draft import DraftKind
from app.models import Prompt, Role
from app.services.drafting import draft_eval, eval_report, prompts
from app.services.projects import jobs_view, projects
from app.web.assets import attachment
from app.web.deps import BigId, Db, Id, LiveProject, Principal, api_role
from app.web.limits import ApiRouter
from app.web.schemas import FILE, DraftEvaluation, DraftKindOut, PromptIn, PromptOut, RunCounts, RunIn, RunOut, RunProgress

router = ApiRouter(tags=["drafting"], dependencies=[LiveProject])
admin = api_role(Role.admin)
PARQUET = "application/vnd.apache.parquet"


def kind_out(kind: DraftKind) -> DraftKindOut:
    return DraftKindOut(
        name=kind.name, title=kind.title, suggestion_kind=kind.suggestion_kind, placeholders=list(kind.placeholders),
        template=kind.template, system=kind.system, settings=dict(kind.settings), answer_schema=kind.schema, source=kind.source,
    )


def prompt_out(session: Session, prompt: Prompt, run: jobs_view.RunProgress | None) -> PromptOut:
    """A prompt version as the API and the drafts page show it: its text, counts and run progress."""
    counts = prompts.counts(session, prompt)
    return PromptOut(
        id=prompt.id, stage_id=prompt.stage_id, draft_kind=prompt.draft_kind, version=prompt.version, drafter=prompt.drafter,
        system=prompt.system, template=prompt.template, settings=prompt.settings, note=prompt.note,
        created_at=prompt.created_at.isoformat(), counts=RunCounts(items=counts.items, drafted=counts.drafted, failed=counts.failed),
        run=None if run is None else RunProgress(**vars(run), active=run.active),
    )


def stage_prompts(session: Session, stage_id: int) -> list[PromptOut]:
    """Every prompt version of the stage (by kind, then version) with its counts and current run."""
    rows = prompts.versions(session, stage_id)
    runs = jobs_view.draft_runs(session, [p.id for p in rows])
    return [prompt_out(session, p, runs[p.id]) for p in rows]


def create_version(session: Session, settings, stage_id: int, body: PromptIn, actor_id: int) -> Prompt:
    """A new prompt version from what was sent (the page's form is parsed into the same model)."""
    sampling = {k: getattr(body, k) for k in prompts.SAMPLING_KEYS if getattr(body, k) is not None}
    return prompts.new_version(
        session, stage_id, body.draft_kind, drafter=body.drafter, template=body.template, system=body.system, settings=sampling,
        note=body.note, actor_id=actor_id, known_drafters=prompts.drafter_names(settings),
    )


def evaluation_parquet(session: Session, stage_id: int, ids: str, gold: bool) -> Response:
    """The per-item rows of an evaluation as a Parquet download (no bootstrap: the rows need none)."""
    evaluation = draft_eval.evaluate(session, stage_id, draft_eval.parse_ids(ids), gold=gold, samples=0)
    name = f"stage-{stage_id}-drafts-{'-'.join(str(v.prompt_id) for v in evaluation.versions)}.parquet"
    return Response(eval_report.to_parquet(evaluation), media_type=PARQUET, headers={"Content-Disposition": attachment(name)})


PROMPT_IDS = Query(..., alias="prompts", max_length=200, description="Prompt version ids, comma-separated (e.g. 1,2)")


@router.get("/stages/{stage_id}/draft-kinds", response_model=list[DraftKindOut])
def list_kinds(stage_id: Id, session: Db, user: Principal = Depends(admin)):
    """What a model can draft for the stage's workflow, each with its default prompt and answer schema."""
    return [kind_out(k) for k in prompts.kinds_for(projects.get_stage(session, stage_id))]


@router.get("/stages/{stage_id}/prompts", response_model=list[PromptOut])
def list_prompts(stage_id: Id, session: Db, user: Principal = Depends(admin)):
    """The stage's prompt versions, with what each drafted and its run's progress."""
    projects.get_stage(session, stage_id)
    return stage_prompts(session, stage_id)


@router.post("/stages/{stage_id}/prompts", status_code=201, response_model=PromptOut)
def create_prompt(request: Request, stage_id: Id, body: PromptIn, session: Db, user: Principal = Depends(admin)):
    """Add the next version of the stage's prompt for a draft kind (what is left out: the kind's default)."""
    return prompt_out(session, create_version(session, request.app.state.settings, stage_id, body, user.id), None)


@router.get("/prompts/{prompt_id}", response_model=PromptOut)
def get_prompt(
    prompt_id: BigId,
    session: Db,
    run: BigId | None = Query(None, description="The run to follow (its id, as starting it answered); default: the newest"),
    user: Principal = Depends(admin),
):
    """A prompt version, its counts and the progress of its newest run (or of `run`)."""
    prompt = prompts.get(session, prompt_id)
    return prompt_out(session, prompt, jobs_view.draft_runs(session, [prompt.id], run)[prompt.id])


@router.post("/prompts/{prompt_id}/runs", status_code=202, response_model=RunOut)
def run_prompt(request: Request, prompt_id: BigId, body: RunIn, session: Db, user: Principal = Depends(admin)):
    """Queue draft jobs for the version over the scope's items; follow them with GET /prompts/{id}."""
    started = prompts.start_run(session, request.app.state.settings, prompt_id, body.scope, sample=body.sample, seed=body.seed,
                                actor_id=user.id)
    return RunOut(prompt_id=prompt_id, run_id=started.run_id, items=started.items, batches=started.batches, job_ids=started.job_ids)


@router.get("/stages/{stage_id}/drafts/evaluation", response_model=DraftEvaluation)
def evaluation(
    stage_id: Id,
    session: Db,
    ids: str = PROMPT_IDS,
    gold: bool = Query(False, description="Against the stage's gold answers instead of its finals"),
    samples: int = Query(1000, ge=0, le=10_000),
    seed: int = Query(0, ge=0, le=2**31 - 1),
    user: Principal = Depends(admin),
):
    """Each version's drafts against what people finished: agreement with bootstrap 95 % intervals,
    share accepted unchanged, schema-valid share, latency and tokens."""
    found = draft_eval.evaluate(session, stage_id, draft_eval.parse_ids(ids), gold=gold, samples=samples, seed=seed)
    return eval_report.as_dict(found)


@router.get("/stages/{stage_id}/drafts/evaluation.parquet", response_class=Response, responses=FILE)
def evaluation_file(stage_id: Id, session: Db, ids: str = PROMPT_IDS, gold: bool = Query(False), user: Principal = Depends(admin)):
    """The evaluation's per-item rows: item, version, draft and final (JSON text), score."""
    return evaluation_parquet(session, stage_id, ids, gold)
