"""Request and response models of the vlcurate REST API (/api/v1), defined once: the server declares its
routes with them (its OpenAPI schema) and the client parses answers with them. Pydantic only, so the
client installs without the server's dependencies."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# The most time one answer may say it took: a screen left open over a long holiday, not more.
MAX_SECONDS_SPENT = 31 * 24 * 3600

class StageCounts(BaseModel):
    active: int = Field(description="Open for annotation in this stage")
    review: int = Field(description="Waiting for review")
    finished: int = Field(description="Passed this stage (final record written)")
    discarded: int
    total: int
    annotations: int


class StageOut(BaseModel):
    id: int
    name: str
    workflow: str
    position: int
    overlap: int
    sample_size: int | None = Field(description="Overlap only on a random sample of this many items")
    counts: StageCounts
    percent: int


class ProjectOut(BaseModel):
    """A project with its stages and their progress counts."""

    id: int
    name: str
    description: str
    items: int
    done: int
    discarded: int
    stages: list[StageOut]
    archived_at: datetime | None = Field(default=None, description="When the project was deleted (archived); None while it is live")


class ImportOut(BaseModel):
    created: int = Field(description="Items created")
    images: int = Field(description="Images the records name")
    new_images: int = Field(description="Images not stored before")


class RecordsOut(ImportOut):
    skipped: int = Field(description="Records whose id the project has already (left as they are)")
    updated: int = Field(0, description="Records whose id the project had, updated (on_conflict=update): a new revision each")


class ClaimOut(BaseModel):
    assignment_id: int
    item_id: int
    lease_until: str
    data: dict[str, Any]
    assets: dict[str, str]
    results: dict[str, dict[str, Any]] = Field(description="Earlier stages' final records, by workflow name")
    suggestions: list[dict[str, Any]]


class SubmitIn(BaseModel):
    payload: dict[str, Any]
    idempotency_key: str = Field(min_length=1, max_length=100)
    seconds_spent: float | None = Field(default=None, ge=0, le=MAX_SECONDS_SPENT, allow_inf_nan=False)
    active_seconds: float | None = Field(
        default=None, ge=0, le=MAX_SECONDS_SPENT, allow_inf_nan=False,
        description="Time with focus and input on the item, idle spells over 30 s left out; with what its drafts gathered, "
                    "stored capped at the time since the claim and the stage's lease length (and 4 hours)",
    )


class SubmitOut(BaseModel):
    annotation_id: int
    revision: int
    replayed: bool = Field(description="True when this idempotency key was submitted before: nothing new was stored")
    item_status: str


class DraftIn(BaseModel):
    payload: dict[str, Any]
    active_seconds: float | None = Field(
        default=None, ge=0, le=MAX_SECONDS_SPENT, allow_inf_nan=False,
        description="Active time on the item so far (earlier drafts' included); the draft keeps the most it was told, "
                    "capped at the time since the claim and the lease's length, and the submit takes it",
    )


class StageRef(BaseModel):
    id: int
    name: str
    workflow: str


class AgreementReport(BaseModel):
    """A stage's agreement figures. Facets and per-annotator figures depend on the workflow, so their
    insides are open dictionaries; a future top-level field passes through."""

    model_config = ConfigDict(extra="allow")

    stage: StageRef
    items: int = Field(description="Items with two or more annotators")
    annotators: list[str]
    samples: int = Field(description="Bootstrap samples of the 95% intervals")
    seed: int
    facets: dict[str, dict[str, Any]] = Field(description="Per facet: kind, metrics with estimate/low/high, pairs, ...")
    per_annotator: dict[str, dict[str, Any]]
    computed_at: str | None = Field(default=None, description="When the worker stored it (stored reports only)")


class SplitVersionOut(BaseModel):
    version: int
    config: dict[str, Any]
    counts: dict[str, int] = Field(description="Items per split, in the order exports write them")


class SplitVersionListed(SplitVersionOut):
    created_at: str


class ExportIn(BaseModel):
    format: str
    version: int | None = Field(default=None, ge=1, le=2**31 - 1, description="Split version; default the newest")
    splits: bool = Field(default=True, description="False: one split, 'all'")
    target: str | None = Field(default=None, description="s3://bucket/prefix; default this server (download from /api/v1/exports/{id}/files/...)")
    gold: bool = Field(default=False, description="Also write the stages' gold items (id, stage, record, answer) to gold.jsonl; they are never in the data files")


class ExportOut(BaseModel):
    id: int
    project_id: int
    format: str
    status: str
    done: int
    total: int
    error: str | None
    target: str | None = Field(description="The s3:// target; null for this server")
    manifest: dict[str, Any] | None = Field(description="Counts, split config and sha256 of every file, once done")


class UserCreated(BaseModel):
    id: int
    username: str
    role: str


class UserOut(UserCreated):
    is_active: bool


class TokenIn(BaseModel):
    name: str = Field(default="", max_length=100)


class TokenOut(BaseModel):
    id: int
    token: str = Field(description="Shown once; only its hash is stored")


# -- items, history, finals, settings ------------------------------------------------------------


class ItemRow(BaseModel):
    id: int
    external_id: str
    stage: str | None = Field(description="The stage the item is in")
    status: str
    summary: str = Field(description="The start of the item's data, as text")
    annotators: list[str] = Field(description="Who holds or held the item, in any stage")


class ItemPage(BaseModel):
    """One page of items in id order. `next` is the cursor of the following page (pass it as `after`);
    it stays correct while items change, since it is an id, not an offset."""

    items: list[ItemRow]
    next: int | None = Field(description="Pass as `after` for the next page; null on the last page")
    searched_to: int | None = Field(default=None, description="A text search stopped reading at this id before filling the page")


class HistoryEntry(BaseModel):
    at: str
    what: str = Field(description="annotation (revision n), final (source), suggestion kind, or a review action")
    who: str
    stage: str
    stage_id: int | None = None
    kind: str | None = Field(default=None, description="A suggestion's kind")
    payload: dict[str, Any] | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


class CurrentAnnotation(BaseModel):
    annotation_id: int = Field(description="What a reviewer accepts (POST /stages/{id}/review/{item_id})")
    annotator: str
    payload: dict[str, Any]
    submitted_at: str


class ItemOut(BaseModel):
    """One item with everything that happened to it, oldest first."""

    id: int
    external_id: str
    project_id: int
    stage_id: int | None
    status: str
    data: dict[str, Any]
    assets: dict[str, str] = Field(description="Stored images by JSON pointer into data: their sha256")
    results: dict[str, dict[str, Any]] = Field(description="The latest final record of each stage, by task name")
    annotations: list[CurrentAnnotation] = Field(description="Each annotator's latest submitted annotation in the item's current stage")
    history: list[HistoryEntry]


class FinalRecord(BaseModel):
    """One line of GET /projects/{id}/finals (JSON lines): a finished item as the published export writes it."""

    external_id: str
    item_id: int
    split: str
    record: dict[str, Any] = Field(description="The record as the dataset's published export writes it")
    images: dict[str, str] = Field(description="Stored images by JSON pointer into the record: their sha256 (GET /images/{sha256})")


class StageSettings(BaseModel):
    id: int
    name: str
    workflow: str
    position: int
    overlap: int
    lease_seconds: int
    sample_size: int | None
    sample_seed: int
    guidelines: str
    config: dict[str, Any]
    suggestion_kinds: list[str] = Field(description="The kinds of suggestion this stage's task reads")


class ProjectSettings(BaseModel):
    id: int
    name: str
    description: str
    dataset: str = Field(description="The dataset package the project curates")
    image_fields: list[str] = Field(description="JSON pointers of the record fields that name images")
    formats: list[str] = Field(description="Export formats that can express this dataset")
    stages: list[StageSettings]


# -- suggestions pushed from outside ----------------------------------------------------------------


class SuggestionIn(BaseModel):
    external_id: str = Field(min_length=1, max_length=1000, description="The item's id in the project")
    kind: str = Field(min_length=1, max_length=64, description="One of the stage's suggestion kinds")
    model: str = Field(min_length=1, max_length=200)
    model_version: str = Field(default="", max_length=200)
    score: float | None = Field(default=None, allow_inf_nan=False)
    payload: dict[str, Any]


class SuggestionsIn(BaseModel):
    suggestions: list[SuggestionIn] = Field(min_length=1, max_length=5000)


class SuggestionsOut(BaseModel):
    stored: int = Field(description="New suggestions, or ones whose payload or score changed")
    unchanged: int = Field(description="Pushed before with the same model version, payload and score")


# -- review -----------------------------------------------------------------------------------------


class ReviewRow(BaseModel):
    item_id: int
    external_id: str
    annotations: int
    agreement: float = Field(description="Mean pairwise agreement of its annotations")
    reason: str | None = Field(default=None, description='Why it waits besides disagreement: "routed: annotator below gold accuracy"')
    accuracy: float | None = Field(default=None, description="When routed: the lowest gold accuracy among its flagged annotators")


class ReviewIn(BaseModel):
    """Accept one annotation (`accept_annotation_id`) or write the final version (`payload`)."""

    accept_annotation_id: int | None = Field(default=None, ge=0, le=2**63 - 1)
    payload: dict[str, Any] | None = None
    comment: str = Field(default="", max_length=1000)


class SendBackIn(BaseModel):
    comment: str = Field(min_length=1, max_length=1000, description="What the annotators should change")


class ReviewOut(BaseModel):
    item_id: int
    status: str
    stage_id: int | None


class Interval(BaseModel):
    estimate: float
    low: float | None = Field(None, description="Bootstrap 95 % interval; null when it cannot be drawn")
    high: float | None = None


class AccuracyDay(BaseModel):
    day: str
    accuracy: float
    items: int


class AnnotatorAccuracy(BaseModel):
    items: int = Field(description="Gold answers scored")
    accuracy: Interval
    flagged: bool
    trend: list[AccuracyDay]


class GoldAccuracy(BaseModel):
    """An annotation stage's accuracy on its gold items, per annotator (by username)."""

    gold_items: int
    threshold: float
    min_items: int
    route_to_review: bool
    samples: int
    seed: int
    annotators: dict[str, AnnotatorAccuracy]


class LeakItem(BaseModel):
    id: int
    external_id: str
    split: str
    image: str | None = Field(None, description="sha256 of the item's first image")
    text: str | None = None


class LeakGroup(BaseModel):
    leak: bool = Field(description="Whether the group spans more than one split")
    splits: list[str]
    kinds: list[str] = Field(description="Why its items match: same image, near image, same text, near text")
    items: list[LeakItem]


class LeakReport(BaseModel):
    """Leaked duplicate groups across the splits of a split version, and duplicate groups within one."""

    version: int
    definition_id: int
    counts: dict[str, int]
    items: int
    images: int
    texts: int
    image_distance: int
    text_threshold: float
    leaked_groups: int
    leaks: dict[str, int] = Field(description="Leaked groups per split pair ('train / test')")
    within_split_groups: int
    common_texts: dict[str, int] = Field(description="Texts shared by many items, left out as boilerplate")
    groups: list[LeakGroup]
    hashed_now: int
    seconds: dict[str, float]
    peak_rss_mb: float
    matchers: dict[str, str] = Field(default_factory=dict, description="Which matchers ran for images and for texts, and why an optional one did not")



class LeakJob(BaseModel):
    """A project's newest leak report job, which the worker runs: follow it at `poll`, read its report at `report`."""

    project_id: int
    job_id: int | None = Field(description="The job; null while the request waits to be queued (the reconcile job queues it)")
    status: str = Field(description="queued, running, succeeded or failed")
    step: str = Field("", description="What a running job is doing: hashing images, matching images, matching texts, embedding ...")
    done: int = Field(0, description="Work done in the step")
    total: int = Field(0, description="Work in the step")
    error: str | None = None
    poll: str = Field(description="GET it for the job's state")
    report: str = Field(description="GET it for the newest stored report, once the job succeeded")


from vlcurate.models_drafting import *  # noqa: E402, F403  (one namespace for every model of the API)
from vlcurate.models_manage import *  # noqa: E402, F403
from vlcurate.models_workspaces import *  # noqa: E402, F403

__all__ = [name for name, value in list(globals().items()) if isinstance(value, type) and issubclass(value, BaseModel) and value is not BaseModel]
