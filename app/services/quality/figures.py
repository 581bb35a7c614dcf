"""Project figures: kept and discarded items by item fields, and workflows' answer shares and edit means."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.orm import Session

from app.datasets import dataset_of
from app.datasets.dataset import Chart, Dataset
from app.lifecycle import ItemStatus
from app.models import Item, ItemResult, Stage, SuggestionOutcome
from app.services.projects.projects import stages_of


@dataclass
class Tally:
    kept: int = 0  # passed the first stage
    discarded: int = 0
    open: int = 0  # still in the first stage

    def add(self, other: Tally) -> None:
        self.kept += other.kept
        self.discarded += other.discarded
        self.open += other.open


@dataclass
class Breakdown:
    """Kept and discarded items by up to two item fields (ColorSwap: caption source x image source)."""

    fields: tuple[str, ...]
    rows: list[str]
    columns: list[str]
    cells: dict[tuple[str, str], Tally]

    def cell(self, row: str, column: str) -> Tally:
        return self.cells.get((row, column), Tally())

    def row_total(self, row: str) -> Tally:
        total = Tally()
        for c in self.columns:
            total.add(self.cell(row, c))
        return total

    def column_total(self, column: str) -> Tally:
        total = Tally()
        for r in self.rows:
            total.add(self.cell(r, column))
        return total

    def total(self) -> Tally:
        total = Tally()
        for cell in self.cells.values():
            total.add(cell)
        return total


def breakdown(session: Session, project_id: int) -> Breakdown | None:
    """Counts by the dataset's breakdown fields; None when it declares none."""
    stages = stages_of(session, project_id)
    if not stages:
        return None
    fields = dataset_of(stages[0].workflow).breakdown[:2]
    if not fields:
        return None
    first = stages[0].id
    keys = [sa.func.coalesce(Item.data[f].astext, "—") for f in fields]
    if len(keys) == 1:
        keys.append(sa.literal(""))
    pending = sa.and_(Item.stage_id == first, Item.status.in_((ItemStatus.active, ItemStatus.review)))
    cells: dict[tuple[str, str], Tally] = {}
    for row, column, status, is_pending, n in session.execute(
        sa.select(keys[0], keys[1], Item.status, pending, sa.func.count())
        .where(Item.project_id == project_id, Item.status != ItemStatus.gold)
        .group_by(keys[0], keys[1], Item.status, pending)
    ):
        tally = cells.setdefault((row, column), Tally())
        if status == ItemStatus.discarded:
            tally.discarded += n
        elif is_pending:
            tally.open += n
        else:
            tally.kept += n
    return Breakdown(
        fields=fields,
        rows=sorted({r for r, _ in cells}),
        columns=sorted({c for _, c in cells}),
        cells=cells,
    )


@dataclass
class ShareRow:
    value: str
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class MeanRow:
    category: str
    mean: float
    n: int


@dataclass
class StageFigures:
    """A stage's final answers counted per item field value, and means of edit figures."""

    stage: str
    answer: str
    answers: tuple[str, ...]
    groups: list[tuple[str, list[ShareRow]]]
    means: list[tuple[str, list[MeanRow]]]


def figures(session: Session, project_id: int) -> list[StageFigures]:
    """Figures for every stage whose dataset declares them, aggregated in the database."""
    out = []
    for stage in stages_of(session, project_id):
        spec = dataset_of(stage.workflow).figures.get(stage.workflow)
        if spec is None:
            continue
        # The latest final record of each item in this stage.
        final = _latest_results(stage.id)
        answer = final.c.payload[spec.answer].astext
        groups = []
        for field_name in spec.by:
            value = sa.func.coalesce(Item.data[field_name].astext, "—")
            rows: dict[str, ShareRow] = {}
            for v, a, n in session.execute(
                sa.select(value, answer, sa.func.count())
                .join(Item, Item.id == final.c.item_id)
                .group_by(value, answer)
                .order_by(value)
            ):
                rows.setdefault(v, ShareRow(v, {})).counts[a] = n
            if rows and set(rows) != {"—"}:
                groups.append((field_name, list(rows.values())))
        means = []
        for title, category, value_key in spec.means:
            cat = final.c.payload["edits"][category].astext
            val = final.c.payload["edits"][value_key].astext.cast(sa.Float)
            rows_m = [
                MeanRow(c, float(m), n)
                for c, m, n in session.execute(
                    sa.select(cat, sa.func.avg(val), sa.func.count()).where(cat.is_not(None)).group_by(cat).order_by(cat)
                )
            ]
            if rows_m:
                means.append((title, rows_m))
        out.append(StageFigures(stage.name, spec.answer, spec.answers, groups, means))
    return out


def charts(session: Session, project_id: int) -> list[Chart]:
    """The charts the project's dataset computes from its finished items (streamed in batches)."""
    from app.exporters import project_dataset
    from app.exporters.rows import finished_rows

    stages = stages_of(session, project_id)
    if not stages:
        return []
    dataset = project_dataset(session, project_id)
    if type(dataset).charts is Dataset.charts:
        return []  # declares none: no need to read the items
    # Read on the client: the page's request may run inside a savepoint, where a server-side cursor can't.
    return dataset.charts(row for batch in finished_rows(session, project_id, stream=False) for row in batch)


def _latest_results(stage_id: int):
    return (
        sa.select(ItemResult.item_id, ItemResult.payload)
        .where(ItemResult.stage_id == stage_id)
        .order_by(ItemResult.item_id, ItemResult.id.desc())
        .ext(distinct_on(ItemResult.item_id))
        .subquery()
    )


@dataclass
class AcceptanceRow:
    stage: str
    kind: str
    model: str
    version: str
    accepted: int = 0
    edited: int = 0
    rejected: int = 0

    @property
    def total(self) -> int:
        return self.accepted + self.edited + self.rejected

    @property
    def rate(self) -> float:
        """Share of suggestions taken as they were."""
        return self.accepted / self.total if self.total else 0.0


def suggestion_acceptance(session: Session, project_id: int) -> list[AcceptanceRow]:
    """Per stage, suggestion kind and model version: how often annotators accepted, edited or rejected."""
    rows: dict[tuple, AcceptanceRow] = {}
    q = (
        sa.select(Stage.name, SuggestionOutcome.kind, SuggestionOutcome.model, SuggestionOutcome.model_version,
                  SuggestionOutcome.outcome, sa.func.count())
        .join(Stage, Stage.id == SuggestionOutcome.stage_id)
        .where(Stage.project_id == project_id)
        .group_by(Stage.position, Stage.name, SuggestionOutcome.kind, SuggestionOutcome.model,
                  SuggestionOutcome.model_version, SuggestionOutcome.outcome)
        .order_by(Stage.position, SuggestionOutcome.kind, SuggestionOutcome.model, SuggestionOutcome.model_version)
    )
    for stage, kind, model, version, outcome, n in session.execute(q):
        row = rows.setdefault((stage, kind, model, version), AcceptanceRow(stage, kind, model, version))
        setattr(row, outcome, n)
    return list(rows.values())
