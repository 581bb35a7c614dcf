"""Agreement sampling: the stage's overlap on a seeded random sample of n items, one annotator on the rest."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from app.db import transaction
from app.errors import Invalid
from app.models import Annotation, Item, StageSample
from app.services.annotation import annotation
from app.services.imports import imports
from app.services.projects import projects
from app.services.review import agreement
from tests.conftest import make_choice_project, make_user, png_bytes


def _sampled(sessions, stage_id) -> set[str]:
    with transaction(sessions) as s:
        return set(
            s.scalars(sa.select(Item.external_id).join(StageSample, StageSample.item_id == Item.id).where(StageSample.stage_id == stage_id))
        )


def _annotate_all(sessions, stage_id, users, choice="a") -> None:
    for user in users:
        while True:
            with transaction(sessions) as s:
                claimed = annotation.claim(s, stage_id, user)
                if claimed is None:
                    break
                annotation.submit(s, claimed.assignment_id, user, {"choice": choice}, f"{user}-{claimed.item_id}")


def test_only_the_sample_gets_the_full_overlap(committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 12, overlap=3, sample=5, seed=7, name="S")
    sampled = _sampled(committed, stage_id)
    assert len(sampled) == 5
    with transaction(committed) as s:
        slots = dict(s.execute(sa.select(Item.external_id, Item.slots_left)).all())
    assert {k for k, v in slots.items() if v == 3} == sampled and all(v == 1 for k, v in slots.items() if k not in sampled)

    users = [make_user(committed, f"u{k}") for k in range(4)]
    _annotate_all(committed, stage_id, users)
    with transaction(committed) as s:
        counts = dict(
            s.execute(sa.select(Item.external_id, sa.func.count(Annotation.id)).join(Annotation, Annotation.item_id == Item.id).group_by(Item.external_id)).all()
        )
        assert {s.scalar(sa.select(Item.status).where(Item.external_id == k)) for k in slots} == {"done"}
        report = agreement.stage_report(s, stage_id, samples=50)
    assert counts == {k: 3 if k in sampled else 1 for k in slots}
    assert report["items"] == 5  # agreement is measured on the sample


def test_the_same_seed_draws_the_same_sample(committed, settings, storage):
    _, first = make_choice_project(committed, settings, storage, 30, overlap=2, sample=8, seed=1, name="A")
    _, again = make_choice_project(committed, settings, storage, 30, overlap=2, sample=8, seed=1, name="B")
    _, other = make_choice_project(committed, settings, storage, 30, overlap=2, sample=8, seed=2, name="C")
    assert _sampled(committed, first) == _sampled(committed, again)
    assert _sampled(committed, first) != _sampled(committed, other) and len(_sampled(committed, other)) == 8


def test_later_imports_top_the_sample_up(committed, settings, storage, tmp_path):
    (tmp_path / "img.png").write_bytes(png_bytes())
    spec = projects.StageSpec(workflow="generic.choice", overlap=2, sample_size=5, config={"choices": ["a", "b"]})
    with transaction(committed) as s:
        project_id = projects.create_project(s, "Top", [spec]).id
        stage_id = projects.stages_of(s, project_id)[0].id

    def load(ids):
        records = "\n".join(json.dumps({"id": f"x{i}", "image": "img.png"}) for i in ids).encode()
        with transaction(committed) as s:
            source = imports.ImageSource(settings, storage, base=tmp_path)
            imports.import_items(s, project_id, records, "r.jsonl", settings=settings, storage=storage, images=source)

    load(range(3))
    assert _sampled(committed, stage_id) == {"x0", "x1", "x2"}
    user = make_user(committed, "early")
    _annotate_all(committed, stage_id, [user])  # one annotation each; the sampled items still wait for a second
    load(range(3, 10))
    after = _sampled(committed, stage_id)
    assert len(after) == 5 and {"x0", "x1", "x2"} <= after
    with transaction(committed) as s:
        slots = dict(s.execute(sa.select(Item.external_id, Item.slots_left)).all())
    assert sum(slots[k] for k in after - {"x0", "x1", "x2"}) == 4 and sum(slots[k] for k in ("x0", "x1", "x2")) == 3


def test_a_later_stage_samples_the_items_that_reach_it(committed, settings, storage, tmp_path):
    (tmp_path / "img.png").write_bytes(png_bytes())
    specs = [
        projects.StageSpec(workflow="generic.choice", name="first", config={"choices": ["a", "b"]}),
        projects.StageSpec(workflow="generic.choice", name="second", overlap=2, sample_size=3, sample_seed=5, config={"choices": ["a", "b"]}),
    ]
    records = "\n".join(json.dumps({"id": f"y{i}", "image": "img.png"}) for i in range(8)).encode()
    with transaction(committed) as s:
        project_id = projects.create_project(s, "Two", specs).id
        first, second = (st.id for st in projects.stages_of(s, project_id))
        imports.import_items(s, project_id, records, "r.jsonl", settings=settings, storage=storage, images=imports.ImageSource(settings, storage, base=tmp_path))
    sampled = _sampled(committed, second)
    assert len(sampled) == 3 and _sampled(committed, first) == set()
    _annotate_all(committed, first, [make_user(committed, "one")])
    with transaction(committed) as s:
        slots = dict(s.execute(sa.select(Item.external_id, Item.slots_left).where(Item.stage_id == second)).all())
    assert len(slots) == 8 and {k for k, v in slots.items() if v == 2} == sampled


def test_a_sample_needs_an_overlap_above_one(session):
    spec = projects.StageSpec(workflow="generic.choice", overlap=1, sample_size=10, config={"choices": ["a", "b"]})
    with pytest.raises(Invalid, match="two or more annotators"):
        projects.create_project(session, "Bad sample", [spec])
