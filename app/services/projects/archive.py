"""Deleting a project archives it: `archived_at` and `archived_by` are set, and from then on every
list, page, queue, job and route leaves the project out (an id of it, of its stages, items,
assignments, exports or prompts is answered 404 like an unknown one). Nothing of it is erased: its
stages, items, annotations, results and exports stay as they were, and a restore brings it all back.
Each way is one audit event. Names stay unique over live and archived projects together, so a
restore never clashes with a project made since."""

from __future__ import annotations

import sqlalchemy as sa
import sqlalchemy.orm
from sqlalchemy.orm import Session

from app.db import INT8_MAX
from app.errors import Conflict, Invalid, NotFound, ascii_digits
from app.models import Item, Project
from app.services.users.audit import record

# The project that an id of each kind belongs to, as a scalar subquery over the bound `:v`.
OWNERS = {
    "project_id": ("project", "SELECT CAST(:v AS bigint)"),
    "stage_id": ("stage", "SELECT project_id FROM stages WHERE id = :v"),
    "item_id": ("item", "SELECT project_id FROM items WHERE id = :v"),
    "assignment_id": ("assignment", "SELECT i.project_id FROM assignments a JOIN items i ON i.id = a.item_id WHERE a.id = :v"),
    "export_id": ("export", "SELECT project_id FROM exports WHERE id = :v"),
    "prompt_id": ("prompt", "SELECT s.project_id FROM prompts pr JOIN stages s ON s.id = pr.stage_id WHERE pr.id = :v"),
}

def live(column) -> sa.ColumnElement[bool]:
    """A condition that keeps rows whose project (`column`, a project id) is not archived."""
    archived = sa.orm.aliased(Project)  # its own name: a query that joins projects itself is not correlated with it
    return ~sa.exists().where(archived.id == column, archived.archived_at.is_not(None))


def archived_ids(ids: dict[str, object]) -> dict[str, int]:
    """The ids among a route's path parameters that can name a project's row (kinds of OWNERS, in range)."""
    found = {}
    for name, value in ids.items():
        text = str(value)
        if name in OWNERS and ascii_digits(text) and int(text) <= INT8_MAX:
            found[name] = int(text)
    return found


def archived_target(session: Session, ids: dict[str, int]) -> str | None:
    """The first of `ids` (kind -> id) whose project is archived, as "No stage with id 5.", or None:
    one statement, whatever the number of ids."""
    if not ids:
        return None
    parts, params = [], {}
    for n, (name, value) in enumerate(ids.items()):
        owner = OWNERS[name][1].replace(":v", f":v{n}")
        parts.append(f"SELECT {n} AS n FROM projects p WHERE p.archived_at IS NOT NULL AND p.id = ({owner})")
        params[f"v{n}"] = value
    hit = session.scalar(sa.text(" UNION ALL ".join(parts) + " LIMIT 1"), params)
    if hit is None:
        return None
    name, value = list(ids.items())[hit]
    return f"No {OWNERS[name][0]} with id {value}."


def archive_project(session: Session, project_id: int, confirm: str, *, actor_id: int | None = None) -> Project:
    """Archive the project (the delete of the page, API, client and CLI), once `confirm` is its name."""
    project = session.get(Project, project_id, with_for_update=True)
    if project is None or project.archived_at is not None:
        raise NotFound(f"No project with id {project_id}.")
    if confirm != project.name:
        raise Invalid(f"To delete project {project.id}, confirm with its name, {project.name!r}.", field="confirm")
    items = session.scalar(sa.select(sa.func.count()).select_from(Item).where(Item.project_id == project_id))
    project.archived_at, project.archived_by = sa.func.now(), actor_id
    session.flush()
    session.refresh(project)
    record(session, "project.archive", actor_id=actor_id, target=f"project:{project_id}", name=project.name, items=items)
    return project


def restore_project(session: Session, project_id: int, *, actor_id: int | None = None) -> Project:
    """Bring an archived project back, as it was when archived."""
    project = session.get(Project, project_id, with_for_update=True)
    if project is None:
        raise NotFound(f"No project with id {project_id}.")
    if project.archived_at is None:
        raise Conflict(f"Project {project.name!r} is not archived.")
    archived_at = project.archived_at.isoformat()
    project.archived_at, project.archived_by = None, None
    session.flush()
    record(session, "project.restore", actor_id=actor_id, target=f"project:{project_id}", name=project.name, archived_at=archived_at)
    return project


def name_taken(session: Session, name: str, *, other_than: int | None = None) -> None:
    """A Conflict when a project, live or archived, already has this name."""
    query = sa.select(Project.archived_at).where(Project.name == name)
    if other_than is not None:
        query = query.where(Project.id != other_than)
    found = session.execute(query).first()
    if found is None:
        return
    if found.archived_at is not None:
        raise Conflict(f"A project named '{name}' exists and is archived (deleted): names stay unique, so restore "
                       "it (admin, the projects list's archived filter) or choose another name.", field="name")
    raise Conflict(f"A project named '{name}' already exists.", field="name")
