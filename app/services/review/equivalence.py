"""Equivalence judgements: do two annotators' free-text answers say the same thing?

A workflow whose answers are free text (VisArgs' conclusion) declares `equivalence`: the field, and
the workflow that judges pairs. For every item two or more annotators answered, each pair of answers
worded differently becomes an item of a companion project with one stage of that judging workflow, where reviewers judge Y/N; pairs worded the same (after case and space
normalisation) count as equivalent without a judgement. The stage's agreement report then
gives the equivalence rate: equivalent pairs / judged-or-identical pairs, per item averaged
and bootstrapped like the other figures, with how many pairs still wait for a judgement.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.agreement.sets import normalize
from app.datasets import get_workflow
from app.datasets.workflow import Equivalence
from app.errors import Invalid
from app.lifecycle import ITEM_START
from app.models import Item, ItemResult, Project, Stage
from app.services.annotation.pipeline import submitted_annotations
from app.services.projects import projects
from app.services.quality import gold
from app.services.users.audit import record


@dataclass
class Pair:
    item_id: int
    external_id: str
    annotators: tuple[str, str]
    texts: tuple[str, str]

    @property
    def key(self) -> str:
        """The judgement item's external id: one per item and annotator pair."""
        return f"{self.external_id}:{self.annotators[0]}:{self.annotators[1]}"

    @property
    def same_wording(self) -> bool:
        return normalize(self.texts[0]) == normalize(self.texts[1])


def declared(stage: Stage) -> Equivalence:
    """The workflow's declared equivalence judgement."""
    equivalence = get_workflow(stage.workflow).equivalence
    if equivalence is None:
        raise Invalid(f"The workflow {stage.workflow} has no free-text answer to judge for equivalence.")
    return equivalence


def answer_pairs(session: Session, stage: Stage) -> list[Pair]:
    """Each pair of annotators' answers on each item (discarded answers and empty ones left out)."""
    field, workflow = declared(stage).field, get_workflow(stage.workflow)
    by_item: dict[int, list] = defaultdict(list)
    gold_items = gold.gold_item_ids(session, stage.id)  # answers to gold items are scored, never agreement
    for a in submitted_annotations(session, None, stage.id):
        if a.item_id in gold_items:
            continue
        text = str(a.payload.get(field) or "").strip()
        if text and not workflow.is_discard(a.payload):
            by_item[a.item_id].append((a.annotator, text))
    if not by_item:
        return []
    ids = dict(session.execute(sa.select(Item.id, Item.external_id).where(Item.id.in_(list(by_item)))).all())
    pairs = []
    for item_id in sorted(by_item):
        given = sorted(by_item[item_id])
        for (a, ta), (b, tb) in itertools.combinations(given, 2):
            pairs.append(Pair(item_id, ids[item_id], (a, b), (ta, tb)))
    return pairs


def judging_stage(session: Session, stage: Stage) -> Stage | None:
    """The companion project's judgement stage, if it was created."""
    return session.scalar(
        sa.select(Stage)
        .join(Project, Project.id == Stage.project_id)
        .where(Stage.workflow == declared(stage).judge, Stage.config["judges_stage"].as_integer() == stage.id,
               Project.archived_at.is_(None))
        .limit(1)
    )


def create_judgements(session: Session, stage_id: int, *, overlap: int = 1, actor_id: int | None = None) -> dict[str, Any]:
    """Queue every differently worded pair of answers for judgement (again: only the new ones)."""
    stage = projects.get_stage(session, stage_id)
    pairs = answer_pairs(session, stage)
    judging = judging_stage(session, stage)
    if judging is None and all(p.same_wording for p in pairs):
        # No companion project for nothing: say so instead.
        raise Invalid(
            f"Nothing to judge yet: stage '{stage.name}' has {len(pairs)} answer pairs and none is worded differently. "
            "Judgements are needed once two annotators answer one item in different words."
        )
    if judging is None:
        judging = _new_judging_stage(session, stage, overlap, actor_id)
    to_judge = [p for p in pairs if not p.same_wording]
    rows = _judgement_items(session, stage, judging, to_judge)
    created = 0
    if rows:
        created = len(
            session.execute(
                pg_insert(Item).values(rows).on_conflict_do_nothing(index_elements=["project_id", "external_id"]).returning(Item.id)
            ).all()
        )
    record(session, "equivalence.create", actor_id=actor_id, target=f"stage:{stage.id}", created=created, pairs=len(pairs))
    return {
        "project_id": judging.project_id,
        "stage_id": judging.id,
        "pairs": len(pairs),
        "same_wording": len(pairs) - len(to_judge),
        "created": created,
    }


def _new_judging_stage(session: Session, stage: Stage, overlap: int, actor_id: int | None) -> Stage:
    """The companion project whose one stage judges the stage's answer pairs; its stage."""
    owner = projects.get_project(session, stage.project_id)
    project = projects.create_project(
        session,
        f"{owner.name} · {stage.name} equivalence",
        [projects.StageSpec(workflow=declared(stage).judge, overlap=overlap, config={"judges_stage": stage.id})],
        description=f"Are two annotators' answers in stage '{stage.name}' of {owner.name} equivalent? "
        "Created for the agreement report.",
        actor_id=actor_id,
    )
    return projects.stages_of(session, project.id)[0]


def _judgement_items(session: Session, stage: Stage, judging: Stage, to_judge: list) -> list[dict[str, Any]]:
    """The judging stage's item rows, one per pair: the two answers, where they came from, and the item's image."""
    items = {i.id: i for i in session.scalars(sa.select(Item).where(Item.id.in_({p.item_id for p in to_judge})))}
    rows = []
    for p in to_judge:
        source = items[p.item_id]
        data = {
            "id": p.key,
            "conclusion_a": p.texts[0],
            "conclusion_b": p.texts[1],
            "source": {"stage": stage.id, "item": p.external_id, "annotators": list(p.annotators)},
        }
        assets = {}
        if source.data.get("image") and source.assets.get("/image"):
            data["image"] = source.data["image"]
            assets["/image"] = source.assets["/image"]
        rows.append(
            {"project_id": judging.project_id, "external_id": p.key, "data": data, "assets": assets,
             "stage_id": judging.id, "status": ITEM_START, "slots_left": judging.overlap}
        )
    return rows


def judged(session: Session, stage: Stage) -> dict[str, bool]:
    """Pair key -> the final judgement (equivalent or not) of every judged pair."""
    judging = judging_stage(session, stage)
    if judging is None:
        return {}
    latest = (
        sa.select(ItemResult.item_id, sa.func.max(ItemResult.id).label("id"))
        .where(ItemResult.stage_id == judging.id)
        .group_by(ItemResult.item_id)
        .subquery()
    )
    rows = session.execute(
        sa.select(Item.external_id, ItemResult.payload)
        .join(latest, latest.c.item_id == Item.id)
        .join(ItemResult, ItemResult.id == latest.c.id)
    )
    return {key: bool(payload.get("equivalent")) for key, payload in rows}
