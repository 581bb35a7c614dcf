"""Projects and stages: creation, listing, and the per-stage progress counts.

The dataset registry (`app.datasets`) is imported by the functions that check workflows, not at the
top: importing every dataset package costs a command CPU, and listing projects or finding
one by name (`vlcurate project list`, `splits`, `leaks`) needs none of it (docs/cli-startup.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy.orm import Session

from app.errors import Invalid, NotFound, ascii_digits, format_validation_error
from app.lifecycle import ItemStatus
from app.models import Annotation, GoldItem, ItemCount, ItemResult, Project, Stage, StageCount, Workspace
from app.services.projects import archive
from app.services.users.audit import record
from app.services.users.workspaces import default_workspace_id


class StageSpec(BaseModel):
    workflow: str = Field(max_length=100)
    name: str | None = Field(default=None, max_length=100)
    overlap: int = Field(default=1, ge=1, le=50)
    lease_seconds: int = Field(default=900, ge=10, le=7 * 24 * 3600)
    guidelines: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    # Agreement sampling: `overlap` annotators on a random sample of this many items, one on the rest.
    sample_size: int | None = Field(default=None, ge=1, le=2**31 - 1)
    sample_seed: int = Field(default=0, ge=0, le=2**31 - 1)


def stage_specs_for(
    first: str,
    *,
    then: Sequence[str] | None = None,
    overlap: int = 1,
    sample_size: int | None = None,
    sample_seed: int = 0,
    lease_seconds: int = 900,
    config: dict[str, Any] | None = None,
    config_for_all: bool = False,
) -> list[StageSpec]:
    """The stages of a new project that starts with workflow `first`: then the stages `then` names
    (the command line lists the pipeline), by default the workflow's own follow-on stages (the project
    form offers first stages only). `config` is the first stage's, or every stage's with `config_for_all`."""
    from app.datasets import follow_on

    names = (first, *(tuple(then) if then is not None else follow_on(first)))
    configs = _shared_config(names, config or {}) if config_for_all else [config or {}] + [{}] * (len(names) - 1)
    try:
        return [
            StageSpec(
                workflow=w, overlap=overlap, lease_seconds=lease_seconds, sample_size=sample_size, sample_seed=sample_seed,
                config=c,
            )
            for w, c in zip(names, configs)
        ]
    except ValidationError as exc:  # the form and the command line pass their values unchecked
        raise Invalid("The stage settings are not valid: " + "; ".join(format_validation_error(exc)), format_validation_error(exc)) from None


def _shared_config(names: Sequence[str], config: dict[str, Any]) -> list[dict[str, Any]]:
    """One configuration for a whole pipeline, cut into each stage's share: a stage gets the keys its
    workflow reads; a key that no stage reads stays with the first, whose check then refuses it."""
    from app.datasets import get_workflow

    known = [set(get_workflow(w).config_schema.descriptions()) if _is_workflow(w) else set() for w in names]
    read_somewhere = set().union(*known)
    return [
        {k: v for k, v in config.items() if k in keys or (i == 0 and k not in read_somewhere)}
        for i, keys in enumerate(known)
    ]


def _is_workflow(name: str) -> bool:
    from app.datasets import get_workflow

    try:
        get_workflow(name)
    except Invalid:
        return False
    return True


def create_project(
    session: Session, name: str, stages: list[StageSpec], *, description: str = "", actor_id: int | None = None,
    workspace_id: int | None = None,
) -> Project:
    """A new project with its stages, in `workspace_id` (default: the default workspace)."""
    name = name.strip()
    if not name:
        raise Invalid("A project needs a name.", field="name")
    if len(name) > 200:  # the column's width
        raise Invalid("A project's name has at most 200 characters.", field="name")
    _check_stages(stages)
    archive.name_taken(session, name)
    if workspace_id is None:
        workspace_id = default_workspace_id(session)
    elif session.get(Workspace, workspace_id) is None:
        raise NotFound(f"No workspace with id {workspace_id}.", field="workspace")
    project = Project(name=name, description=description, created_by=actor_id, workspace_id=workspace_id)
    session.add(project)
    session.flush()
    for position, spec in enumerate(stages):
        session.add(
            Stage(
                project_id=project.id,
                position=position,
                name=spec.name or spec.workflow,
                workflow=spec.workflow,
                overlap=spec.overlap,
                lease_seconds=spec.lease_seconds,
                guidelines=spec.guidelines,
                config=spec.config,
                sample_size=spec.sample_size,
                sample_seed=spec.sample_seed,
            )
        )
    session.flush()
    record(session, "project.create", actor_id=actor_id, target=f"project:{project.id}", name=name, workspace=project.workspace_id)
    return project


def _check_stages(stages: list[StageSpec]) -> None:
    """The stages of one dataset, each after the stage it builds on, with a valid config (set on the
    spec as validated) and two or more annotators where it samples for agreement."""
    from app.datasets import dataset_of, get_workflow

    if not stages:
        raise Invalid("A project needs at least one stage.")
    earlier: list[str] = []
    dataset = dataset_of(stages[0].workflow)  # raises Invalid naming the known workflows
    for spec in stages:
        needed = get_workflow(spec.workflow).requires
        if dataset_of(spec.workflow) is not dataset:
            raise Invalid(
                f"The stage '{spec.workflow}' belongs to another dataset than '{stages[0].workflow}': "
                f"a project curates one dataset ({dataset.name}: {', '.join(t.name for t in dataset.workflows)})."
            )
        if needed and needed not in earlier:
            raise Invalid(f"The stage '{spec.workflow}' builds on '{needed}', which must come before it.")
        earlier.append(spec.workflow)
        try:
            spec.config = get_workflow(spec.workflow).config_schema.check_stage(spec.config, spec.workflow)
        except Invalid as exc:
            raise Invalid(f"Stage {len(earlier)} ({spec.name or spec.workflow}): {exc.message}", exc.errors) from None
        if spec.sample_size is not None and spec.overlap < 2:
            raise Invalid(
                f"The stage '{spec.name or spec.workflow}' samples {spec.sample_size} items for agreement: "
                "give it two or more annotators per item (overlap), or no sample.",
                field="overlap",
            )


def get_project(session: Session, project_id: int) -> Project:
    """A live project (an archived one is not found, as everywhere but its restore)."""
    project = session.get(Project, project_id)
    if project is None or project.archived_at is not None:
        raise NotFound(f"No project with id {project_id}.")
    return project


def find_project(session: Session, ref: str) -> Project:
    """A project by id or by name (the CLI accepts either)."""
    if ascii_digits(ref):
        return get_project(session, int(ref))
    project = session.scalar(sa.select(Project).where(Project.name == ref, Project.archived_at.is_(None)))
    if project is None:
        raise NotFound(f"No project named '{ref}'.")
    return project


def stages_of(session: Session, project_id: int) -> list[Stage]:
    return list(session.scalars(sa.select(Stage).where(Stage.project_id == project_id).order_by(Stage.position)))


def get_stage(session: Session, stage_id: int) -> Stage:
    stage = session.get(Stage, stage_id)
    if stage is None:
        raise NotFound(f"No stage with id {stage_id}.")
    return stage


@dataclass
class StageProgress:
    id: int
    name: str
    workflow: str
    position: int
    overlap: int
    sample_size: int | None = None  # overlap only on a sample of this many items
    active: int = 0  # in this stage, open for annotation
    review: int = 0  # in this stage, waiting for review
    finished: int = 0  # passed this stage (final record written)
    discarded: int = 0  # discarded in this stage
    annotations: int = 0

    @property
    def total(self) -> int:
        return self.active + self.review + self.finished

    @property
    def percent(self) -> int:
        return int(100 * self.finished / self.total) if self.total else 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "workflow": self.workflow,
            "position": self.position,
            "overlap": self.overlap,
            "sample_size": self.sample_size,
            "counts": {
                "active": self.active,
                "review": self.review,
                "finished": self.finished,
                "discarded": self.discarded,
                "total": self.total,
                "annotations": self.annotations,
            },
            "percent": self.percent,
        }


@dataclass
class ProjectProgress:
    id: int
    name: str
    description: str
    items: int = 0
    done: int = 0
    discarded: int = 0
    stages: list[StageProgress] = field(default_factory=list)
    archived_at: Any = None  # when it was deleted (archived), for the admin's archived list

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "items": self.items,
            "done": self.done,
            "discarded": self.discarded,
            "stages": [s.as_dict() for s in self.stages],
            "archived_at": self.archived_at,
        }


def progress(
    session: Session, project_ids: list[int] | None = None, *, archived: bool = False, visible: sa.ColumnElement[bool] | None = None
) -> list[ProjectProgress]:
    """Progress of the given live projects (all when None; only those `visible` matches, a condition on
    `Project`, see workspaces.visible_projects) in four grouped queries; with `archived`, of the
    archived ones instead (the admin's list of what can be restored)."""
    pq = sa.select(Project).where(Project.archived_at.is_not(None) if archived else Project.archived_at.is_(None)).order_by(Project.id)
    if project_ids is not None:
        pq = pq.where(Project.id.in_(project_ids))
    if visible is not None:
        pq = pq.where(visible)
    projects = {p.id: ProjectProgress(p.id, p.name, p.description, archived_at=p.archived_at) for p in session.scalars(pq)}
    if not projects:
        return []
    ids = list(projects)
    stage_rows = session.scalars(
        sa.select(Stage).where(Stage.project_id.in_(ids)).order_by(Stage.project_id, Stage.position)
    )
    stages: dict[int, StageProgress] = {}
    for s in stage_rows:
        sp = StageProgress(s.id, s.name, s.workflow, s.position, s.overlap, s.sample_size)
        stages[s.id] = sp
        projects[s.project_id].stages.append(sp)
    _add_item_counts(session, projects, stages)
    _add_stage_counts(session, stages)
    return list(projects.values())


def _add_item_counts(session: Session, projects: dict[int, ProjectProgress], stages: dict[int, StageProgress]) -> None:
    """Items by status, per project and stage."""
    # Maintained counts (app.models.counts), not count(*) over the items: a few rows per stage. Sums
    # of bigints are numeric in PostgreSQL (Decimal here): cast back, so the counts are ints.
    for project_id, stage_id, status, n in session.execute(
        sa.select(ItemCount.project_id, ItemCount.stage_id, ItemCount.status, _int_sum(ItemCount.n))
        .where(ItemCount.project_id.in_(list(projects)), ItemCount.status != ItemStatus.gold)  # gold items are no part of the data
        .group_by(ItemCount.project_id, ItemCount.stage_id, ItemCount.status)
    ):
        p = projects[project_id]
        p.items += n
        if status == ItemStatus.done:
            p.done += n
        elif status == ItemStatus.discarded:
            p.discarded += n
            if stage_id in stages:
                stages[stage_id].discarded += n
        elif stage_id in stages:
            setattr(stages[stage_id], status, getattr(stages[stage_id], status) + n)


def _add_stage_counts(session: Session, stages: dict[int, StageProgress]) -> None:
    """Finished items and first annotations per stage, less what gold items hold."""
    for stage_id, finished, first_revisions in session.execute(
        sa.select(StageCount.stage_id, _int_sum(StageCount.finished), _int_sum(StageCount.annotations))
        .where(StageCount.stage_id.in_(list(stages)))
        .group_by(StageCount.stage_id)
    ):
        stages[stage_id].finished = finished
        stages[stage_id].annotations = first_revisions
    # Read from the gold set (small), never over the stage's annotations.
    for stage_id, n in session.execute(
        sa.select(GoldItem.stage_id, sa.func.count())
        .join(Annotation, sa.and_(Annotation.item_id == GoldItem.item_id, Annotation.stage_id == GoldItem.stage_id))
        .where(GoldItem.stage_id.in_(list(stages)), Annotation.revision == 1)
        .group_by(GoldItem.stage_id)
    ):
        stages[stage_id].annotations -= n
    finals = sa.exists().where(ItemResult.item_id == GoldItem.item_id, ItemResult.stage_id == GoldItem.stage_id)
    for stage_id, n in session.execute(
        sa.select(GoldItem.stage_id, sa.func.count()).where(GoldItem.stage_id.in_(list(stages)), finals).group_by(GoldItem.stage_id)
    ):
        stages[stage_id].finished -= n


def _int_sum(column) -> sa.ColumnElement[int]:
    return sa.cast(sa.func.sum(column), sa.BigInteger)


def _stage_progress_statement() -> sa.Select:
    """One stage's row of `progress`, in one statement: the stage and its counts as scalar
    subqueries (a few counter rows each), less what gold items hold."""
    stage = sa.bindparam("stage_id", type_=sa.Integer)

    def items(status: ItemStatus) -> sa.ScalarSelect:
        return (sa.select(sa.func.coalesce(sa.func.sum(ItemCount.n), 0))
                .where(ItemCount.stage_id == stage, ItemCount.status == status).scalar_subquery())

    def counted(column) -> sa.ScalarSelect:
        return sa.select(sa.func.coalesce(sa.func.sum(column), 0)).where(StageCount.stage_id == stage).scalar_subquery()

    gold_annotations = (
        sa.select(sa.func.count()).select_from(GoldItem)
        .join(Annotation, sa.and_(Annotation.item_id == GoldItem.item_id, Annotation.stage_id == GoldItem.stage_id))
        .where(GoldItem.stage_id == stage, Annotation.revision == 1).scalar_subquery()
    )
    gold_finished = (
        sa.select(sa.func.count()).select_from(GoldItem)
        .where(GoldItem.stage_id == stage,
               sa.exists().where(ItemResult.item_id == GoldItem.item_id, ItemResult.stage_id == GoldItem.stage_id))
        .scalar_subquery()
    )
    return sa.select(
        Stage.id, Stage.name, Stage.workflow, Stage.position, Stage.overlap, Stage.sample_size,
        items(ItemStatus.active), items(ItemStatus.review), counted(StageCount.finished) - gold_finished,
        items(ItemStatus.discarded), counted(StageCount.annotations) - gold_annotations,
    ).where(Stage.id == stage)


_STAGE_PROGRESS = _stage_progress_statement()  # built once: building it costs more than running it


def stage_progress(session: Session, stage_id: int) -> StageProgress:
    """One stage's progress (its bar on the annotation screen), equal to its part of `project_progress`."""
    row = session.execute(_STAGE_PROGRESS, {"stage_id": stage_id}).one_or_none()
    if row is None:
        raise NotFound(f"No stage with id {stage_id}.")
    return StageProgress(*row)


def project_progress(session: Session, project_id: int) -> ProjectProgress:
    found = progress(session, [project_id])
    if not found:
        raise NotFound(f"No project with id {project_id}.")
    return found[0]
