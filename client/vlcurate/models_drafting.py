"""Request and response models of the API's drafting calls (prompt versions, runs and their
evaluation); `vlcurate.models` re-exports them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = ["DraftEvaluation", "DraftKindOut", "EvaluationFigure", "PromptIn", "PromptOut", "RunCounts", "RunIn", "RunOut", "RunProgress", "VersionEvaluation"]


class DraftKindOut(BaseModel):
    """What a vision-language model can draft for a stage, with its default prompt."""

    name: str
    title: str
    suggestion_kind: str = Field(description="The suggestion kind its drafts fill (what the stage's screen reads)")
    placeholders: list[str] = Field(description="The {fields} a template may name")
    template: str = Field(description="The default prompt")
    system: str
    settings: dict[str, Any] = Field(description="Default max_tokens / temperature")
    answer_schema: dict[str, Any] = Field(description="The JSON schema the model answers in")
    source: str = Field(description="Where the default prompt comes from")


class PromptIn(BaseModel):
    """A new prompt version; what is left out comes from the kind's default prompt."""

    draft_kind: str = Field(max_length=64)
    drafter: str = Field(max_length=64, description="A drafter the server's VLCURATE_DRAFTERS_FILE names")
    template: str | None = Field(None, max_length=100_000, description="With {fields} of the record (the kind's placeholders)")
    system: str | None = Field(None, max_length=100_000)
    max_tokens: int | None = Field(None, ge=1, le=32768)
    temperature: float | None = Field(None, ge=0, le=2)
    seed: int | None = Field(None, ge=0, le=2**31 - 1)
    note: str = Field("", max_length=2000, description="What changed in this version")


class RunCounts(BaseModel):
    items: int = Field(description="Items the stage drafts for")
    drafted: int = Field(description="With a valid draft of this version")
    failed: int = Field(description="With a failed draft (and no valid one)")


class RunProgress(BaseModel):
    """The draft jobs of a run: how many wait, run, succeeded or failed, and their items."""

    run_id: int | None = Field(description="The run (null: the version was never run)")
    jobs: int
    waiting: int
    running: int
    succeeded: int
    failed: int
    items: int
    done: int
    active: bool = Field(description="Some job still waits or runs")
    errors: list[str] = Field(description="Why failed jobs failed")


class PromptOut(BaseModel):
    """A prompt version, what it has drafted, and its run's progress."""

    id: int
    stage_id: int
    draft_kind: str
    version: int
    drafter: str
    system: str
    template: str
    settings: dict[str, Any]
    note: str
    created_at: str
    counts: RunCounts
    run: RunProgress | None = Field(None, description="The newest run's progress (or the run asked for)")


class RunIn(BaseModel):
    scope: Literal["all", "missing", "sample"] = Field("missing", description="Every item, the items lacking a valid draft of this version, or a sample")
    sample: int | None = Field(None, ge=1, le=10_000_000, description="With scope=sample: how many items")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="With scope=sample: the sample's seed")


class RunOut(BaseModel):
    prompt_id: int
    run_id: int = Field(description="Follow it with GET /prompts/{prompt_id}?run={run_id}")
    items: int = Field(description="Items the run drafts")
    batches: int
    job_ids: list[int] = Field(description="The draft jobs queued (a batch already waiting is not queued twice)")


class EvaluationFigure(BaseModel):
    name: str = Field(description="Cohen's kappa (one per facet where a task has several), share agreeing, or mean agreement")
    estimate: float | None
    low: float | None = Field(description="Bootstrap 95 % interval; null when it cannot be drawn")
    high: float | None
    items: int


class VersionEvaluation(BaseModel):
    prompt_id: int
    draft_kind: str
    version: int
    drafter: str
    note: str
    items: int = Field(description="Finished (or gold) items compared")
    figures: list[EvaluationFigure] = Field(description="Agreement of drafts with the finals, the headline first")
    uncomparable: int = Field(description="Drafts the kind cannot shape as an answer")
    accepted: int = Field(description="Shown drafts annotators accepted unchanged")
    shown: int = Field(description="Drafts with a recorded outcome")
    accepted_share: float | None
    valid: int
    failed: int
    valid_share: float | None = Field(description="Valid drafts / (valid + failed)")
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    prompt_tokens: float | None = Field(description="Mean per model call")
    completion_tokens: float | None


class DraftEvaluation(BaseModel):
    """Prompt versions of a stage measured against the people who finished its items."""

    stage_id: int
    workflow: str
    measure: str = Field(description="Cohen's kappa (a label task) or the task's mean agreement")
    gold: bool = Field(description="Measured against the stage's gold answers instead of its finals")
    samples: int
    seed: int
    versions: list[VersionEvaluation]
