"""Request and response models of the API's management calls (updating and hiding records, updating
and deleting projects) and of the annotation table; `vlcurate.models` re-exports them."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints

__all__ = ["AnnotationRow", "GoldImported", "ProjectUpdate", "RecordIds", "RecordsHidden", "StageUpdate", "SuggestionShown", "WorkLog",
           "WorkLogRow"]

MAX_IDS = 10_000  # external ids one request may name
# A name as given, without the spaces around it; a blank one is refused (422 naming the field).
StageName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]
ProjectName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


class StageUpdate(BaseModel):
    """What may change in a stage once it runs; left out (null), a setting stays as it is."""

    id: int = Field(description="The stage")
    name: StageName | None = None
    lease_seconds: int | None = Field(None, ge=1, le=7 * 24 * 3600)
    guidelines: str | None = Field(None, max_length=100_000)
    config: dict[str, Any] | None = Field(
        None, description="Configuration keys to change (checked as at project creation); a key set to null goes back to "
        "its default, a key left out stays",
    )


class ProjectUpdate(BaseModel):
    """A project's new name, description or stage settings; what is left out stays."""

    name: ProjectName | None = None
    description: str | None = Field(None, max_length=100_000)
    stages: list[StageUpdate] = Field(default_factory=list)


class RecordIds(BaseModel):
    ids: list[str] = Field(min_length=1, max_length=MAX_IDS, description="The records' external ids")
    reason: str = Field("", max_length=1000, description="Why, kept in the items' history")


class RecordsHidden(BaseModel):
    hidden: int = Field(description="Items hidden now (out of the queues, finals and exports; their annotations kept)")
    already: int = Field(description="Items hidden before: nothing changed")


class GoldImported(BaseModel):
    imported: int = Field(description="Items marked (or re-marked) gold in the stage")


class SuggestionShown(BaseModel):
    kind: str
    model: str
    model_version: str
    outcome: str = Field(description="accepted, edited or rejected")


class AnnotationRow(BaseModel):
    """One submitted annotation revision, as people analyse them (GET /projects/{id}/annotations)."""

    annotation_id: int
    item_id: int
    external_id: str
    stage_id: int
    stage: str
    annotator: str = Field(description="The username for an admin; for anyone else a stable pseudonym (annotator-<8 hex>)")
    revision: int = Field(description="1 for the first submit of an assignment; more for a resubmit after a send-back")
    payload: dict[str, Any]
    claimed_at: str = Field(description="When the annotator was given the item (ISO 8601)")
    submitted_at: str
    seconds_spent: float | None = Field(description="Active time on the screen the client reported")
    suggestions: list[SuggestionShown] = Field(description="The suggestions shown and what the annotator did with each")
    review: str | None = Field(description="The reviewer's decision on this annotation: accepted, overridden, sent_back; null when none")


class WorkLogRow(BaseModel):
    """One annotator's work on one day in one project (docs/work-log.md)."""

    day: date = Field(description="In the server's work-log time zone")
    annotator: str
    project_id: int
    project: str
    items: int = Field(description="First answers (a revision adds time, not an item)")
    answers: int = Field(description="Every submitted revision")
    active_hours: float = Field(description="Page visible and focused, input within the last 30 s")
    wall_hours: float = Field(description="Claim to submit")
    gold_answers: int
    gold_correct: int = Field(description="Gold answers fully right")
    gold_accuracy: float | None = Field(description="gold_correct / gold_answers; null without gold answers")


class WorkLog(BaseModel):
    workspace_id: int
    timezone: str = Field(description="The zone whose calendar days `day` counts")
    start: date | None
    end: date | None
    rows: list[WorkLogRow]
