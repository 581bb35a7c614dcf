"""Browsing a project's items: filters (current stage, status, annotator, text) and keyset pages by id,
so a page stays the same rows while items move on (no offset to drift, no duplicates or gaps)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from app.db import INT8_MAX
from app.errors import Invalid, ascii_digits
from app.lifecycle import ItemStatus
from app.models import Assignment, Item, Stage, User

PAGE_SIZE = 50
SCAN_WINDOW = 20_000  # items a text search reads for one page
FIRST_STRETCH = 1_000  # ... of which it reads this many first
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
            if value and not ascii_digits(value):
                raise Invalid(f"The {name} filter is an id.")
        if "\x00" in text:  # PostgreSQL takes no NUL in a text parameter (it would answer a 500)
            raise Invalid("The text filter holds a NUL character (\\u0000), which no item can hold.")
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
    searched_to: int | None = None  # a text search stopped at this id before filling the page


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _one_of(column, value: Any) -> sa.ColumnElement[bool]:
    """`column = ANY(ARRAY[value])`: the same test as `column = value`, except that the planner does not
    drop the column from ORDER BY (it drops columns held equal to a constant)."""
    return column == sa.func.any(sa.literal([value], postgresql.ARRAY(column.type)))


def _query(project_id: int, f: ItemFilter) -> tuple[list[sa.ColumnElement[bool]], list[Any]]:
    """The filter's conditions and an ORDER BY equal to id order for its rows, chosen so that one index
    yields the page in order. Ordered by id alone, the planner walks the primary key and filters,
    expecting a project's rows spread evenly over the table; when they are not (a project imported
    after a large one), that scan crosses every earlier row. So the order names the filter's own
    columns first, and only the index on (them, id) can give it: (project_id, status, id),
    (stage_id, id) or (project_id, id)."""
    conditions: list[sa.ColumnElement[bool]] = []
    if f.status is not None:
        # (status = constant is a plain index condition; an ANY on the index's second column is not.)
        conditions += [_one_of(Item.project_id, project_id), Item.status == f.status]
        order = [Item.project_id, Item.status]
        if f.stage_id is not None:
            conditions.append(Item.stage_id == f.stage_id)
    elif f.stage_id is not None:
        conditions += [Item.project_id == project_id, _one_of(Item.stage_id, f.stage_id)]
        order = [Item.stage_id]
    else:
        conditions.append(_one_of(Item.project_id, project_id))
        order = [Item.project_id]
    if f.annotator_id is not None:
        # A semi-join the planner can drive from the annotator's assignments (indexed by annotator).
        conditions.append(Item.id.in_(sa.select(Assignment.item_id).where(Assignment.annotator_id == f.annotator_id)))
    if f.text:
        pattern = _like(f.text)
        conditions.append(sa.or_(Item.external_id.ilike(pattern), sa.cast(Item.data, sa.Text).ilike(pattern)))
    return conditions, order


def list_items(
    session: Session, project_id: int, f: ItemFilter, *, after: int | None = None, before: int | None = None,
    limit: int = PAGE_SIZE, window: int = SCAN_WINDOW,
) -> ItemPage:
    """One page of the project's items matching `f`, in id order: the first page, the page after id
    `after`, or the page before id `before`. A text search reads at most `window` items per page (no
    index serves a substring of any field): a page it leaves short ends where the search stopped, and
    its next (or previous) link searches on from there."""
    conditions, order = _query(project_id, f)
    backwards = before is not None and after is None
    q = _page_query(session, project_id, f, conditions, order, after, before, limit)
    # A text search reads a short stretch first (a common word fills the page there), then the window.
    for stretch in (sorted({min(window, FIRST_STRETCH), window}) if f.text else [None]):
        edge = _window_edge(session, project_id, after, before, backwards, stretch) if stretch else None
        bounded = q if edge is None else q.where(Item.id >= edge if backwards else Item.id <= edge)
        found = session.execute(bounded).all()
        more = len(found) > limit
        if more or edge is None:
            break
    found = found[:limit]
    if backwards:
        found.reverse()
    ids = [r[0] for r in found]

    def exists(condition, desc: bool) -> bool:
        if f.text:  # an unbounded search just to draw a link: assume there is more where we came from
            return True
        # The nearest matching id in the filter's own index order (an EXISTS would walk the primary key).
        keys = [*(c.desc() for c in order), Item.id.desc()] if desc else [*order, Item.id]
        return session.scalar(sa.select(Item.id).where(*conditions, condition).order_by(*keys).limit(1)) is not None

    if backwards:
        prev = ids[0] if more else edge  # the search stopped at `edge`: search on before it
        nxt = (ids[-1] if ids else before - 1) if exists(Item.id >= before, desc=False) else None
    else:
        nxt = ids[-1] if more else edge
        prev = (ids[0] if ids else after + 1) if after is not None and exists(Item.id <= after, desc=True) else None
    names = annotators_of(session, ids)
    rows = [ItemRow(i, ext, stage, status, summary, names.get(i, [])) for i, ext, stage, status, summary in found]
    return ItemPage(rows, nxt, prev, searched_to=edge if edge is not None and not more else None)


def _page_query(session: Session, project_id: int, f: ItemFilter, conditions: list, order: list,
                after: int | None, before: int | None, limit: int) -> sa.Select:
    """The page's rows (one more than `limit`, to tell whether more follow), read from `after` up or from `before` down."""
    q = (
        sa.select(Item.id, Item.external_id, Stage.name, Item.status, sa.func.left(sa.cast(Item.data, sa.Text), SUMMARY_CHARS))
        .outerjoin(Stage, Stage.id == Item.stage_id)
        .where(*conditions)
        .limit(limit + 1)
    )
    if before is not None and after is None:
        return q.where(Item.id < before).order_by(*[c.desc() for c in order], Item.id.desc())
    q = q.where(Item.id > after) if after is not None else q
    q = q.order_by(*order, Item.id)
    if f.text and after is None:
        # Bounded below too: a range scan of the primary key then starts at the project's first item.
        start = session.scalar(sa.select(Item.id).where(_one_of(Item.project_id, project_id)).order_by(Item.project_id, Item.id).limit(1))
        q = q.where(Item.id >= start) if start is not None else q
    return q


def _window_edge(session: Session, project_id: int, after: int | None, before: int | None, backwards: bool, window: int) -> int | None:
    """Where a text search's page stops reading: `window` ids on from where the page starts (ids within
    a project are near dense: items are imported in bulk), or None when the project has no item beyond."""
    mine = _one_of(Item.project_id, project_id)

    def probe(*conditions, desc: bool = False) -> int | None:
        order = [Item.project_id.desc(), Item.id.desc()] if desc else [Item.project_id, Item.id]
        return session.scalar(sa.select(Item.id).where(mine, *conditions).order_by(*order).limit(1))

    if backwards:
        edge = before - window
        return edge if probe(Item.id < edge, desc=True) is not None else None
    start = after if after is not None else probe()
    if start is None:
        return None
    # Held to bigint's range: a page after an id near its top would otherwise stop past it (a 500).
    edge = min(start + window - (0 if after is not None else 1), INT8_MAX)
    return edge if probe(Item.id > edge) is not None else None


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
