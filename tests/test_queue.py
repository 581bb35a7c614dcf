"""The annotation queue under concurrency, on real separate connections."""

from __future__ import annotations

import threading
import uuid
from collections import Counter

import sqlalchemy as sa

from app import queue
from app.db import transaction
from app.models import Annotation, Assignment, Item, ItemResult, Stage
from app.services.annotation import annotation
from tests.conftest import make_choice_project, make_user, run_concurrently


def test_32_threads_as_8_annotators_drain_500_items_with_overlap_3(committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 500, overlap=3)
    annotators = [make_user(committed, f"ann{i}") for i in range(8)]
    claims: list[tuple[int, int]] = []  # (annotator, item)
    lock = threading.Lock()

    def worker(annotator_id: int) -> None:
        while True:
            with transaction(committed) as s:
                c = annotation.claim(s, stage_id, annotator_id)
            if c is None:
                return
            with lock:
                claims.append((annotator_id, c.item_id))
            with transaction(committed) as s:
                annotation.submit(s, c.assignment_id, annotator_id, {"choice": "a"}, uuid.uuid4().hex)

    run_concurrently(worker, [(annotators[i % 8],) for i in range(32)])

    with transaction(committed) as s:
        per_item = Counter(
            dict(s.execute(sa.select(Annotation.item_id, sa.func.count()).group_by(Annotation.item_id)).all())
        )
        pairs = s.execute(sa.select(Assignment.item_id, Assignment.annotator_id)).all()
        items = s.scalars(sa.select(Item)).all()
    assert len(per_item) == 500 and set(per_item.values()) == {3}
    assert len(pairs) == len(set(pairs)) == 1500
    assert len(claims) == len(set(claims)) == 1500
    # Three answers in agreement finalize every item (the stage is the last one).
    assert {i.status for i in items} == {"done"} and {i.slots_left for i in items} == {0}


def test_overlap_is_never_exceeded_while_leases_are_live(committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 3, overlap=2)
    users = [make_user(committed, f"u{i}") for i in range(7)]
    got = []
    for u in users:
        with transaction(committed) as s:
            while (c := annotation.claim(s, stage_id, u)) is not None:
                got.append((u, c.item_id))
    per_item = Counter(item for _, item in got)
    assert set(per_item.values()) == {2}  # 3 items x 2 slots, the rest get nothing
    assert len(got) == 6


def test_an_annotator_never_gets_an_item_twice(committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 2, overlap=3)
    u = make_user(committed, "solo")
    with transaction(committed) as s:
        first = annotation.claim(s, stage_id, u)
        second = annotation.claim(s, stage_id, u)
        third = annotation.claim(s, stage_id, u)
    assert first.item_id != second.item_id and third is None


def test_expired_leases_return_items_to_the_pool(committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 1, overlap=1, lease=10)
    a, b = make_user(committed, "ua"), make_user(committed, "ub")
    with transaction(committed) as s:
        held = annotation.claim(s, stage_id, a)
    with transaction(committed) as s:
        assert annotation.claim(s, stage_id, b) is None
        s.execute(sa.update(Assignment).values(lease_until=sa.func.now() - sa.text("interval '1 second'")))
    with transaction(committed) as s:
        taken = annotation.claim(s, stage_id, b)
    assert taken is not None and taken.item_id == held.item_id
    with transaction(committed) as s:
        assert s.get(Assignment, held.assignment_id).status == "expired"
        # The late annotator's work is refused: the only slot is taken.
    import pytest

    from app.errors import Conflict

    with pytest.raises(Conflict, match="ran out"):
        with transaction(committed) as s:
            annotation.submit(s, held.assignment_id, a, {"choice": "a"}, "late")


def test_late_submit_is_kept_when_the_slot_is_still_free(committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 1, overlap=1, lease=10)
    a = make_user(committed, "ua")
    with transaction(committed) as s:
        held = annotation.claim(s, stage_id, a)
        s.execute(sa.update(Assignment).values(lease_until=sa.func.now() - sa.text("interval '1 second'")))
    with transaction(committed) as s:
        queue.expire_leases(s, stage_id)
    with transaction(committed) as s:
        result = annotation.submit(s, held.assignment_id, a, {"choice": "b"}, "late-but-free")
    assert result.item_status == "done"


def test_skip_returns_the_item_later_and_frees_the_slot(committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 2, overlap=1)
    a, b = make_user(committed, "ua"), make_user(committed, "ub")
    with transaction(committed) as s:
        first = annotation.claim(s, stage_id, a)
        annotation.give_back(s, first.assignment_id, a, skip=True)
    with transaction(committed) as s:
        other = annotation.claim(s, stage_id, a)
    assert other.item_id != first.item_id  # fresh items come before skipped ones
    with transaction(committed) as s:
        annotation.submit(s, other.assignment_id, a, {"choice": "a"}, "k1")
        again = annotation.claim(s, stage_id, a)
    assert again.item_id == first.item_id and again.assignment_id == first.assignment_id
    with transaction(committed) as s:
        annotation.give_back(s, again.assignment_id, a, skip=True)
        by_b = annotation.claim(s, stage_id, b)
    assert by_b.item_id == first.item_id


def test_idempotent_submit_sequential_and_concurrent(committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 2, overlap=2)
    a = make_user(committed, "ua")
    with transaction(committed) as s:
        c1 = annotation.claim(s, stage_id, a)
        c2 = annotation.claim(s, stage_id, a)
    with transaction(committed) as s:
        r1 = annotation.submit(s, c1.assignment_id, a, {"choice": "a"}, "same-key")
    with transaction(committed) as s:
        r2 = annotation.submit(s, c1.assignment_id, a, {"choice": "a"}, "same-key")
    assert r2.replayed and r2.annotation_id == r1.annotation_id

    results, errors = [], []
    barrier = threading.Barrier(8)

    def post():
        try:
            barrier.wait()
            with transaction(committed) as s:
                results.append(annotation.submit(s, c2.assignment_id, a, {"choice": "b"}, "concurrent-key"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=post) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len({r.annotation_id for r in results}) == 1
    assert sum(not r.replayed for r in results) == 1
    with transaction(committed) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Annotation)) == 2


def test_overlap_one_finalizes_and_the_last_stage_marks_done(committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 1, overlap=1)
    a = make_user(committed, "ua")
    with transaction(committed) as s:
        c = annotation.claim(s, stage_id, a)
        annotation.submit(s, c.assignment_id, a, {"choice": "c"}, "k")
    with transaction(committed) as s:
        item = s.get(Item, c.item_id)
        result = s.scalar(sa.select(ItemResult).where(ItemResult.item_id == item.id))
    assert item.status == "done" and result.payload == {"choice": "c"} and result.source == "auto"


def test_overlap_above_one_waits_for_review_on_disagreement(committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 1, overlap=2)
    a, b = make_user(committed, "ua"), make_user(committed, "ub")
    for user, choice in ((a, "a"), (b, "b")):
        with transaction(committed) as s:
            c = annotation.claim(s, stage_id, user)
            annotation.submit(s, c.assignment_id, user, {"choice": choice}, f"k{user}")
    with transaction(committed) as s:
        item = s.get(Item, c.item_id)
        assert item.status == "review"
        assert s.scalar(sa.select(sa.func.count()).select_from(ItemResult)) == 0


def test_items_advance_through_a_pipeline(committed, settings, storage):
    from app.services.projects import projects

    project_id, stage_id = make_choice_project(committed, settings, storage, 1, overlap=1)
    with transaction(committed) as s:
        s.add(Stage(project_id=project_id, position=1, name="second", workflow="generic.choice", overlap=2, config={"choices": ["a", "b", "c"]}))
    a = make_user(committed, "ua")
    with transaction(committed) as s:
        c = annotation.claim(s, stage_id, a)
        annotation.submit(s, c.assignment_id, a, {"choice": "a"}, "k")
    with transaction(committed) as s:
        item = s.get(Item, c.item_id)
        second = projects.stages_of(s, project_id)[1]
        assert (item.stage_id, item.status, item.slots_left) == (second.id, "active", 2)
        again = annotation.claim(s, second.id, a)
    assert again is not None and again.item_id == c.item_id


def test_invalid_payload_changes_nothing(committed, settings, storage):
    import pytest

    from app.errors import Invalid

    _, stage_id = make_choice_project(committed, settings, storage, 1)
    a = make_user(committed, "ua")
    with transaction(committed) as s:
        c = annotation.claim(s, stage_id, a)
    with pytest.raises(Invalid) as err:
        with transaction(committed) as s:
            annotation.submit(s, c.assignment_id, a, {"choice": "zebra"}, "k")
    assert "not one of the choices" in err.value.errors[0]
    with transaction(committed) as s:
        assert s.get(Assignment, c.assignment_id).status == "active"
        assert s.scalar(sa.select(sa.func.count()).select_from(Annotation)) == 0


def test_a_claim_waits_out_a_submit_holding_the_last_item_instead_of_answering_nothing_left(committed, settings, storage):
    # The stage's last free slot sits on an item another annotator's submit holds locked: a claim
    # that skipped it (SKIP LOCKED) and said "nothing left" would leave the slot unfilled for good.
    _, stage_id = make_choice_project(committed, settings, storage, 1, overlap=2)
    holder, latecomer = make_user(committed, "holder"), make_user(committed, "latecomer")
    with transaction(committed) as s:
        held = annotation.claim(s, stage_id, holder)
    got = []
    with transaction(committed) as s:
        # The item's row locked, as a submit of the holder's assignment holds it until it commits.
        assert s.execute(sa.select(Item.id).where(Item.id == held.item_id).with_for_update()).scalar() == held.item_id

        def claim() -> None:
            with transaction(committed) as other:
                got.append(annotation.claim(other, stage_id, latecomer))

        waiting = threading.Thread(target=claim)
        waiting.start()
        waiting.join(0.05)
        assert waiting.is_alive()  # still looking: the one claimable row is merely locked
    waiting.join(10)
    assert got and got[0] is not None and got[0].item_id == held.item_id
    with transaction(committed) as s:  # and once the slot is taken, nothing is left, at once
        assert annotation.claim(s, stage_id, make_user(committed, "third")) is None
