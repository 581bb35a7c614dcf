"""Split definitions: which finished items go to train, validation, test (and held-out) splits.

A definition is a saved, versioned configuration; saving it assigns every finished item of the
project to a split in one SQL statement (memory stays flat whatever the project's size) and
stores the assignment, so exports of that version always contain the same items. Finished items
that arrive later are not in it: save a new version.

The assignment works on units: the items sharing a `group_id` form one unit, every other item
is a unit of its own, so a group never lands in two splits. In order:

1. held out: units with an item whose `field` has one of `values` go to `split` (WikiDO's
   out-of-domain topics);
2. the rest are ordered by md5(seed, unit) within each stratum (the value of `stratify`, or
   one stratum) and cut by cumulative item count: `ratios` cut each stratum proportionally,
   `counts` cut at absolute sizes (700 / 300; a fixed-size sample is one count), and units past
   the counts go to `rest` when it is named, and are left out otherwise. With counts, groups are
   placed first and single items fill each split up to its count, so that the counts stay exact
   even when groups cross a cut (see `_exact_counts`).
"""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, field_validator, model_validator
from sqlalchemy.orm import Session

from app.errors import Invalid, NotFound, ascii_digits
from app.lifecycle import ItemStatus
from app.models import ItemSplit, SplitDefinition
from app.services.projects.projects import get_project
from app.services.users.audit import changes, record

SPLIT_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")  # split names become file names
FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def _split_name(name: str) -> str:
    if not SPLIT_NAME.match(name):
        raise ValueError(f"split name {name!r}: use lower-case letters, digits, - and _ (they become file names)")
    return name


def _field_name(name: str | None) -> str | None:
    if name is not None and not FIELD_NAME.match(name):
        raise ValueError(f"field {name!r}: a top-level field name of the items")
    return name


class HeldOut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str
    values: list[str] = Field(min_length=1)
    split: str = "test_ood"

    _check_field = field_validator("field")(_field_name)
    _check_split = field_validator("split")(_split_name)


class SplitConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ratios: dict[str, FiniteFloat] | None = None  # NaN would pass every check below (it compares false)
    counts: dict[str, int] | None = None
    rest: str | None = None
    seed: int = Field(default=0, ge=0, le=2**31 - 1)
    held_out: HeldOut | None = None
    stratify: str | None = None

    _check_stratify = field_validator("stratify")(_field_name)

    @field_validator("ratios", "counts")
    @classmethod
    def _names(cls, value):
        if value is not None:
            for name, size in value.items():
                _split_name(name)
                if size <= 0:
                    raise ValueError(f"split {name!r}: give a size above zero")
        return value

    @model_validator(mode="after")
    def _one_way(self) -> "SplitConfig":
        if (self.ratios is None) == (self.counts is None) and not (self.ratios is None and self.held_out):
            raise ValueError("give either ratios (e.g. train 0.8, test 0.2) or counts (e.g. train 700, test 300)")
        if self.ratios is not None and abs(sum(self.ratios.values()) - 1) > 1e-6:
            raise ValueError(f"the ratios add up to {sum(self.ratios.values()):g}; they must add up to 1")
        if self.stratify and self.counts is not None:
            raise ValueError("stratify works with ratios (each stratum is cut in the same proportions)")
        if self.rest is not None:
            _split_name(self.rest)
            if self.counts is None:
                raise ValueError("rest names the split for items past the counts; it needs counts")
        names = list(self.ratios or self.counts or {}) + ([self.rest] if self.rest else []) + ([self.held_out.split] if self.held_out else [])
        if len(set(names)) != len(names):
            raise ValueError("each split name may appear once")
        return self

    def split_names(self) -> list[str]:
        """Splits in the order exports write them."""
        names = list(self.ratios or self.counts or {})
        if self.rest:
            names.append(self.rest)
        if self.held_out:
            names.append(self.held_out.split)
        return names


def parse_sizes(text: str | None, kind: type) -> dict[str, Any] | None:
    """"train=0.8, test=0.2" -> {"train": 0.8, "test": 0.2} (forms and the command line)."""
    if not text or not text.strip():
        return None
    out = {}
    for part in text.split(","):
        name, _, size = part.partition("=")
        try:
            out[name.strip()] = kind(size)
        except ValueError:
            raise Invalid(f"{part.strip()!r}: write NAME=SIZE separated by commas, e.g. train=0.8,test=0.2 or train=700,test=300.") from None
    return out


def config_from_text(
    *,
    seed: str | int = 0,
    ratios: str | None = None,
    counts: str | None = None,
    rest: str | None = None,
    stratify: str | None = None,
    held_out: str | None = None,
    held_out_split: str = "test_ood",
) -> dict[str, Any]:
    """A split configuration from what a person typed, in the project's export form or as command-line
    options: sizes as "train=0.8,test=0.2", held-out items as "FIELD=V1,V2". `save_definition` checks the rest."""
    if not ascii_digits(str(seed).strip()):
        raise Invalid("The seed is a whole number, 0 or more.")
    config: dict[str, Any] = {"seed": int(seed)}
    sizes = (("ratios", parse_sizes(ratios, float)), ("counts", parse_sizes(counts, int)),
             ("rest", (rest or "").strip() or None), ("stratify", (stratify or "").strip() or None))
    config.update({k: v for k, v in sizes if v is not None})
    field_name, _, values = (held_out or "").partition("=")
    if field_name.strip():
        config["held_out"] = {"field": field_name.strip(), "values": [v.strip() for v in values.split(",") if v.strip()],
                              "split": held_out_split.strip() or "test_ood"}
    return config


def parse_config(raw: dict[str, Any]) -> SplitConfig:
    from pydantic import ValidationError

    order = raw.get("order") if isinstance(raw.get("order"), list) else []
    raw = {k: v for k, v in raw.items() if k != "order"}
    for key in ("ratios", "counts"):  # a stored config read back from JSONB: restore its order
        if isinstance(raw.get(key), dict) and order:
            raw[key] = dict(sorted(raw[key].items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))
    try:
        return SplitConfig.model_validate(raw)
    except ValidationError as exc:
        raise Invalid("The split definition is not valid.", _problems(exc)) from None


# What each setting is called where people type it (the export page's labels).
_LABELS = {"ratios": "Splits", "counts": "Splits", "rest": "Items past the counts go to", "seed": "Seed",
           "stratify": "Stratify by field", "held_out": "Hold out by field", "held_out.field": "Hold out by field",
           "held_out.values": "Hold-out values", "held_out.split": "Hold-out split"}


def _problems(exc) -> list[str]:
    """Validation errors in the words of the form: "Splits: split 'Train': use lower-case letters ...",
    not pydantic's "field 'record': Value error, ..."."""
    out = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        why = err["msg"].removeprefix("Value error, ")
        if err["type"] == "too_short" and loc[-1:] == ["values"]:
            why = "name one or more values, separated by commas"
        label = _LABELS.get(".".join(loc[:2])) or _LABELS.get(loc[0]) if loc else None
        text = f"{label}: {why}" if label else why
        out.append(text + ("" if text.endswith(".") else "."))
    return out


def _assignment_sql(config: SplitConfig) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {"seed": str(config.seed)}
    cuts, position = [], 0.0
    sizes = config.ratios or config.counts or {}
    scale = "r.total" if config.ratios is not None else "1"
    for n, (name, size) in enumerate(sizes.items()):
        position += size
        params[f"name{n}"], params[f"cut{n}"], params[f"size{n}"] = name, position, size
        cuts.append(f"WHEN r.start < :cut{n} * {scale} THEN :name{n}")
    if config.ratios is not None and cuts:
        cuts[-1] = f"ELSE :name{len(cuts) - 1}"  # rounding never leaves an item out
    elif config.rest:
        params["rest"] = config.rest
        cuts.append("ELSE :rest")
    held = "false"
    if config.held_out:
        params["held_field"], params["held_values"], params["held_split"] = config.held_out.field, config.held_out.values, config.held_out.split
        held = "bool_or(e.data ->> :held_field = ANY(:held_values))"
        cuts.insert(0, "WHEN r.held THEN :held_split")
    stratum = "NULL::text"
    if config.stratify:
        params["stratum_field"] = config.stratify
        stratum = "min(e.data ->> :stratum_field)"
    case = _case(cuts)
    assigned = f"assigned AS (SELECT r.unit, {case} AS split FROM ranked r)"
    if config.counts is not None and sizes:
        assigned = _exact_counts(len(sizes), case, cuts)
    sql = f"""
        WITH eligible AS (
            SELECT i.id, i.data, coalesce('g:' || i.group_id, 'i:' || i.external_id) AS unit
            FROM items i WHERE i.project_id = :project AND i.status = '{ItemStatus.done.value}'
        ), units AS (
            SELECT e.unit, count(*) AS n, {held} AS held, {stratum} AS stratum
            FROM eligible e GROUP BY e.unit
        ), ranked AS (
            SELECT u.unit, u.held, u.n,
                   sum(u.n) OVER (PARTITION BY u.held, u.stratum ORDER BY md5(:seed || ':' || u.unit), u.unit
                                  ROWS UNBOUNDED PRECEDING) - u.n AS start,
                   sum(u.n) OVER (PARTITION BY u.held, u.stratum) AS total,
                   count(*) FILTER (WHERE u.n = 1) OVER (PARTITION BY u.held, u.stratum ORDER BY md5(:seed || ':' || u.unit), u.unit
                                  ROWS UNBOUNDED PRECEDING) - 1 AS single
            FROM units u
        ), {assigned}
        INSERT INTO item_splits (definition_id, item_id, split)
        SELECT :definition, e.id, a.split FROM eligible e JOIN assigned a ON a.unit = e.unit
        WHERE a.split IS NOT NULL
    """
    return sql, params


def _case(cuts: list[str]) -> str:
    """The CASE over the cuts; a lone ELSE (one split takes everything) is its value alone, as
    PostgreSQL refuses a CASE without a WHEN."""
    if not cuts:
        return "NULL"
    if len(cuts) == 1 and cuts[0].startswith("ELSE "):
        return cuts[0].removeprefix("ELSE ")
    return f"CASE {' '.join(cuts)} END"


def _exact_counts(k: int, case: str, cuts: list[str]) -> str:
    """Counts with groups, exact wherever the groups allow it. Cut by cumulative size as ratios
    are, a group that crosses a cut would overshoot its split by up to its size - 1. So groups are
    placed first, each by where it starts in the random order (as without groups); then each split
    takes as many single items, in the same order, as its count leaves after its groups. A split
    whose groups alone pass its count (only when groups are most of it) is the one left inexact."""
    left = ", ".join(
        f"greatest(0, :size{n} - coalesce(sum(g.n) FILTER (WHERE g.split = :name{n}), 0)) AS left{n}" for n in range(k)
    )
    fill = [f"WHEN r.single < {' + '.join(f'c.left{m}' for m in range(n + 1))} THEN :name{n}" for n in range(k)]
    held = [c for c in cuts if "r.held" in c]
    rest = [c for c in cuts if c.startswith("ELSE")]
    return f"""groups_placed AS (
            SELECT r.unit, {case} AS split, r.n FROM ranked r WHERE r.n > 1
        ), capacity AS (
            SELECT {left} FROM groups_placed g
        ), assigned AS (
            SELECT g.unit, g.split FROM groups_placed g
            UNION ALL
            SELECT r.unit, {_case(held + fill + rest)} FROM ranked r CROSS JOIN capacity c WHERE r.n = 1
        )"""


def save_definition(session: Session, project_id: int, raw: dict[str, Any], *, actor_id: int | None = None) -> SplitDefinition:
    """Validate, store as the project's next version, and assign the finished items."""
    get_project(session, project_id)
    config = parse_config(raw)
    # The project row lock numbers versions one at a time.
    session.execute(sa.text("SELECT 1 FROM projects WHERE id = :p FOR UPDATE"), {"p": project_id})
    version = (session.scalar(sa.select(sa.func.max(SplitDefinition.version)).where(SplitDefinition.project_id == project_id)) or 0) + 1
    stored = {**config.model_dump(mode="json", exclude_none=True), "order": config.split_names()}
    definition = SplitDefinition(project_id=project_id, version=version, config=stored, created_by=actor_id)
    session.add(definition)
    session.flush()
    sql, params = _assignment_sql(config)
    session.execute(sa.text(sql), {**params, "project": project_id, "definition": definition.id})
    found = dict(
        session.execute(
            sa.select(ItemSplit.split, sa.func.count()).where(ItemSplit.definition_id == definition.id).group_by(ItemSplit.split)
        ).all()
    )
    definition.counts = {name: found.get(name, 0) for name in config.split_names()}
    earlier = session.scalar(sa.select(SplitDefinition.config).where(SplitDefinition.project_id == project_id, SplitDefinition.version == version - 1))
    record(session, "splits.save", actor_id=actor_id, target=f"project:{project_id}", version=version, counts=definition.counts,
           **changes({"config": earlier}, {"config": stored}))
    return definition


def get_definition(session: Session, project_id: int, version: int | None = None) -> SplitDefinition:
    """A version of the project's split definition (the newest when `version` is None)."""
    if version is not None and not 1 <= version <= 2**31 - 1:
        raise NotFound(f"This project has no split version {version}.")  # past the column's range: no query
    query = sa.select(SplitDefinition).where(SplitDefinition.project_id == project_id)
    query = query.where(SplitDefinition.version == version) if version is not None else query.order_by(SplitDefinition.version.desc())
    definition = session.scalar(query.limit(1))
    if definition is None:
        raise NotFound("This project has no split definition yet." if version is None else f"This project has no split version {version}.")
    return definition


def definitions(session: Session, project_id: int) -> list[SplitDefinition]:
    return list(session.scalars(sa.select(SplitDefinition).where(SplitDefinition.project_id == project_id).order_by(SplitDefinition.version.desc())))


def unassigned(session: Session, definition: SplitDefinition) -> int:
    """Finished items of the project that this version does not place (finished after it, or past its counts)."""
    return session.scalar(
        sa.text(
            f"SELECT count(*) FROM items i WHERE i.project_id = :p AND i.status = '{ItemStatus.done.value}'"
            " AND NOT EXISTS (SELECT 1 FROM item_splits s WHERE s.definition_id = :d AND s.item_id = i.id)"
        ),
        {"p": definition.project_id, "d": definition.id},
    )
