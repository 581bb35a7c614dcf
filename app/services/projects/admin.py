"""Changing a project once it runs (admin): its name, description and stages' settings (their
configuration too, checked as at creation); deleting it
(its name typed again); hiding records by external id (discarded, with the reason in their history:
nothing annotated is erased)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.datasets import get_workflow
from app.errors import Conflict, Invalid
from app.lifecycle import ItemStatus
from app.models import AuditEvent, Item, Project, Stage
from app.services.projects.projects import get_project, stages_of
from app.services.users.audit import record
from vlcurate.models_manage import ProjectUpdate

HIDE_ACTION = "item.delete"
_UNSET = object()  # a key a configuration does not set (None may be a value it sets)


def update_project(session: Session, project_id: int, changes: ProjectUpdate, *, actor_id: int | None = None) -> Project:
    """Apply what `changes` gives (what it leaves out stays); a stage it names must be the project's.
    Every change is one audit event with the values before and after."""
    project = get_project(session, project_id)
    stages = {s.id: s for s in stages_of(session, project_id)}
    for n, change in enumerate(changes.stages):
        if change.id not in stages:
            raise Invalid(f"stages[{n}].id: project {project.name!r} has no stage {change.id}.", field=f"stages.{n}.id")
    before, after = {}, {}
    if changes.name is not None and changes.name.strip() != project.name:
        name = changes.name.strip()
        if session.scalar(sa.select(Project.id).where(Project.name == name, Project.id != project_id)):
            raise Conflict(f"A project named '{name}' already exists.", field="name")
        before["name"], after["name"], project.name = project.name, name, name
    if changes.description is not None and changes.description != project.description:
        before["description"], after["description"], project.description = project.description, changes.description, changes.description
    for n, change in enumerate(changes.stages):
        stage = stages[change.id]
        for field in ("name", "lease_seconds", "guidelines"):
            value = getattr(change, field)
            if value is not None and value != getattr(stage, field):
                before[f"stage {stage.id} {field}"], after[f"stage {stage.id} {field}"] = getattr(stage, field), value
                setattr(stage, field, value)
        if change.config is not None:
            _update_config(stage, change.config, f"stages[{n}].config", before, after)
    if after:
        session.flush()
        record(session, "project.update", actor_id=actor_id, target=f"project:{project_id}", before=before, after=after)
    return project


def _update_config(stage: Stage, changes: dict[str, Any], where: str, before: dict[str, Any], after: dict[str, Any]) -> None:
    """Set the stage configuration's keys that `changes` gives (None: back to the default), once the whole
    new configuration passes the check a new project's does; a refusal names the first key at fault."""
    config = dict(stage.config or {})
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    try:
        config = get_workflow(stage.workflow).config_schema.check_stage(config, stage.workflow)
    except Invalid as exc:
        key = next((k for k in changes if any(e.startswith(f"'{k}'") for e in exc.errors)), None)
        named = f"{where}.{key}" if key else where
        raise Invalid(f"{named}: {exc.errors[0] if exc.errors else exc.message}", exc.errors,
                      field=named.replace("[", ".").replace("]", "")) from None
    old = stage.config or {}
    for key in sorted(set(old) | set(config)):
        if old.get(key, _UNSET) != config.get(key, _UNSET):
            before[f"stage {stage.id} config.{key}"] = old.get(key)
            after[f"stage {stage.id} config.{key}"] = config.get(key)
    if config != old:
        stage.config = config


def delete_project(session: Session, project_id: int, confirm: str, *, actor_id: int | None = None) -> None:
    """Delete the project with its stages, items, annotations and exports, once `confirm` is its name."""
    project = get_project(session, project_id)
    if confirm != project.name:
        raise Invalid(f"To delete project {project.id}, confirm with its name, {project.name!r}.", field="confirm")
    items = session.scalar(sa.select(sa.func.count()).select_from(Item).where(Item.project_id == project_id))
    record(session, "project.delete", actor_id=actor_id, target=f"project:{project_id}", name=project.name, items=items)
    session.delete(project)
    session.flush()


@dataclass
class Hidden:
    hidden: int
    already: int


def hide_records(session: Session, project_id: int, ids: list[str], reason: str = "", *, actor_id: int | None = None) -> Hidden:
    """Discard the project's items with these external ids (out of the queues, finals and exports), each
    with an audit event in its history; their annotations, results and suggestions stay. Hiding a
    hidden one changes nothing. An id the project lacks refuses the whole call: nothing is hidden."""
    get_project(session, project_id)
    wanted = list(dict.fromkeys(ids))
    found = dict(session.execute(sa.select(Item.external_id, Item.id).where(
        Item.project_id == project_id, Item.external_id == sa.any_(sa.literal(wanted, sa.ARRAY(sa.Text))))).all())
    unknown = [i for i in wanted if i not in found]
    if unknown:
        shown = ", ".join(repr(i) for i in unknown[:20]) + (f" and {len(unknown) - 20:,} more" if len(unknown) > 20 else "")
        raise Invalid(f"The project has no records with the ids {shown}: nothing was hidden.", field="ids")
    hidden = session.scalars(
        sa.update(Item).where(Item.id.in_(found.values()), Item.status != ItemStatus.discarded)
        .values(status=ItemStatus.discarded, slots_left=0).returning(Item.id)
    ).all()
    session.add_all(AuditEvent(action=HIDE_ACTION, actor_id=actor_id, target=f"item:{item_id}", detail={"reason": reason})
                    for item_id in hidden)
    session.flush()
    return Hidden(hidden=len(hidden), already=len(found) - len(hidden))
