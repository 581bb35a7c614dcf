"""Browsing a project's items: filters (current stage, status, annotator, text) and keyset pages by id,
so a page stays the same rows while items move on (no offset to drift, no duplicates or gaps)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.errors import Invalid
from app.lifecycle import ItemStatus
from app.models import Assignment, Item, Stage, User

PAGE_SIZE = 50
SUMMARY_CHARS = 240


@dataclass(frozen=True)
class ItemFilter:
    stage_id: int | None = None
    status: ItemStatus | None = None
    annotator_id: int | None = None
    text: str = ""

    @classmethod
    def parse(cls, stage: str = "", status: str = "", annotator: str = "", text: str = "") -> ItemFilter:
        """The filter from query parameters as typed (empty means any)."""
        if status and status not in ItemStatus.__members__:
            raise Invalid(f"Unknown status {status!r}; use one of: {', '.join(ItemStatus)}.")
        for name, value in (("stage", stage), ("annotator", annotator)):
            if value and not value.isdigit():
                raise Invalid(f"The {name} filter is an id.")
        return cls(int(stage) if stage else None, ItemStatus(status) if status else None,
                   int(annotator) if annotator else None, text.strip())


@dataclass(frozen=True)
class ItemRow:
    id: int
    external_id: str
    stage: str | None
    status: str
    summary: str
    annotators: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ItemPage:
    rows: list[ItemRow]
    after: int | None  # the next page starts after this id (None: this is the last page)
    before: int | None  # the previous page ends before this id (None: this is the first page)


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _matching(project_id: int, f: ItemFilter) -> sa.ColumnElement[bool]:
    conditions = [Item.project_id == project_id]
    if f.stage_id is not None:
        conditions.append(Item.stage_id == f.stage_id)
    if f.status is not None:
        conditions.append(Item.status == f.status)
    if f.annotator_id is not None:
        # A semi-join the planner drives from the annotator's assignments (indexed by annotator).
        conditions.append(Item.id.in_(sa.select(Assignment.item_id).where(Assignment.annotator_id == f.annotator_id)))
    if f.text:
        pattern = _like(f.text)
        conditions.append(sa.or_(Item.external_id.ilike(pattern), sa.cast(Item.data, sa.Text).ilike(pattern)))
    return sa.and_(*conditions)


def list_items(
    session: Session, project_id: int, f: ItemFilter, *, after: int | None = None, before: int | None = None,
    limit: int = PAGE_SIZE,
) -> ItemPage:
    """One page of the project's items matching `f`, in id order: the first page, the page after id
    `after`, or the page before id `before`."""
    where = _matching(project_id, f)
    backwards = before is not None and after is None
    q = (
        sa.select(Item.id, Item.external_id, Stage.name, Item.status, sa.func.left(sa.cast(Item.data, sa.Text), SUMMARY_CHARS))
        .outerjoin(Stage, Stage.id == Item.stage_id)
        .where(where)
        .limit(limit + 1)
    )
    if backwards:
        q = q.where(Item.id < before).order_by(Item.id.desc())
    else:
        q = q.where(Item.id > after) if after is not None else q
        q = q.order_by(Item.id)
    found = session.execute(q).all()
    more = len(found) > limit
    found = found[:limit]
    if backwards:
        found.reverse()
    if not found:
        return ItemPage([], None, None)
    first, last = found[0][0], found[-1][0]

    def exists(condition) -> bool:
        return bool(session.scalar(sa.select(sa.exists().where(where, condition))))

    has_next = more if not backwards else exists(Item.id > last)
    has_prev = more if backwards else (after is not None and exists(Item.id < first))
    names = annotators_of(session, [r[0] for r in found])
    rows = [ItemRow(i, ext, stage, status, summary, names.get(i, [])) for i, ext, stage, status, summary in found]
    return ItemPage(rows, last if has_next else None, first if has_prev else None)


def annotators_of(session: Session, item_ids: list[int]) -> dict[int, list[str]]:
    """Who holds or held each item, in any stage (one query for the page)."""
    out: dict[int, set[str]] = defaultdict(set)
    for item_id, name in session.execute(
        sa.select(Assignment.item_id, User.username).join(User, User.id == Assignment.annotator_id)
        .where(Assignment.item_id.in_(item_ids))
    ):
        out[item_id].add(name)
    return {k: sorted(v) for k, v in out.items()}


def annotator_choices(session: Session) -> list[tuple[int, str]]:
    """Everyone who may annotate, for the filter (users are few; items are many)."""
    return [(i, n) for i, n in session.execute(sa.select(User.id, User.username).order_by(User.username))]
