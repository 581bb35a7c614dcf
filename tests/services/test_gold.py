"""Gold items: import by external id, honeypots in the queue, accuracy per annotator, flag and routing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
import uuid

import pytest
import sqlalchemy as sa

from app.errors import Invalid
from app.lifecycle import ItemStatus
from app.models import AnnotatorFlag, Assignment, AuditEvent, GoldItem, Item, Stage
from app.services.annotation import annotation as annotations
from app.services.projects import projects
from app.services.quality import accuracy, gold
from app.services.review import agreement
from tests import factories

PLANTED = {"perfect": 1.0, "good": 0.8, "careless": 0.5}
N_GOLD = 40


def right_now(k: int, p: float) -> bool:
    """Whether the annotator of planted accuracy p answers their k-th gold item (0-based) right:
    spread evenly, so exactly round(n * p) of the first n are right at n = 5, 10, ..."""
    return int((k + 1) * p + 1e-9) > int(k * p + 1e-9)


def wikido_records(n: int) -> list[dict]:
    return [
        {
            "image_id": 1000 + i,
            "orig_cap": f"A red tram {i} in Lisbon.",
            "caption": f"A red tram {i} in Lisbon, built in 1901.",
            "image": f"https://example.org/tram{i}.jpg",
            "page_id": 7,
            "page_title": "Trams",
            "topic": "transport",
        }
        for i in range(n)
    ]


CASES = {
    "generic.choice": {
        "records": lambda n: [{"id": f"it-{i}", "image": "img.png", "question": f"Q{i}"} for i in range(n)],
        "ids": lambda n: [f"it-{i}" for i in range(n)],
        "truth": {"choice": "a"},
        "wrong": {"choice": "b"},
        "ordinary": {"choice": "a"},
    },
    "wikido.verify": {
        "records": wikido_records,
        "ids": lambda n: [str(1000 + i) for i in range(n)],
        "truth": {"verdict": "correct"},
        "wrong": {"verdict": "wrong"},
        "ordinary": {"verdict": "correct"},
    },
}


def make_project(session, settings, storage, tmp_path, workflow: str, n: int, **config):
    from tests.conftest import png_bytes

    case = CASES[workflow]
    base = {"choices": ["a", "b", "c"]} if workflow == "generic.choice" else {}
    project_id, (stage_id, *_) = factories.project(session, workflow, config={**base, **config})
    files = {"img.png": png_bytes()} if workflow == "generic.choice" else {}
    factories.items(session, settings, storage, project_id, case["records"](n), files, tmp_path)
    return project_id, stage_id


def gold_file(ids, answer) -> bytes:
    return "\n".join(json.dumps({"id": i, "answer": answer}) for i in ids).encode()


@pytest.mark.parametrize("workflow", list(CASES))
def test_planted_accuracies_are_measured_flagged_and_routed(session, settings, storage, tmp_path, workflow):
    case = CASES[workflow]
    n_ordinary = 400
    _, stage_id = make_project(
        session, settings, storage, tmp_path, workflow, N_GOLD + n_ordinary,
        gold_share=0.5, gold_threshold=0.7, gold_min_items=10, gold_route_to_review=True,
    )
    admin = factories.user(session, role="admin")
    gold_ids = case["ids"](N_GOLD + n_ordinary)[n_ordinary:]
    assert gold.import_answers(session, stage_id, gold_file(gold_ids, case["truth"]), actor_id=admin) == N_GOLD
    gold_items = gold.gold_item_ids(session, stage_id)
    assert len(gold_items) == N_GOLD

    users = {name: factories.user(session, f"{name}-{uuid.uuid4().hex[:4]}") for name in PLANTED}
    served: dict[str, list[int]] = {name: [] for name in PLANTED}
    after_flag: list[int] = []  # ordinary items the careless annotator submitted once flagged
    before_flag: list[int] = []  # and before
    for name, user_id in users.items():
        previous_gold = False
        while len(served[name]) < N_GOLD:
            c = annotations.claim(session, stage_id, user_id)
            assert c is not None
            is_gold = c.item_id in gold_items
            assert not (is_gold and previous_gold), "two gold items in a row"
            previous_gold = is_gold
            if is_gold:
                assert c.item_id not in served[name], "the same gold item twice"
                answer = case["truth"] if right_now(len(served[name]), PLANTED[name]) else case["wrong"]
                served[name].append(c.item_id)
            else:
                answer = case["ordinary"]
            result = annotations.submit(session, c.assignment_id, user_id, answer, uuid.uuid4().hex)
            assert result.item_status != "gold"
            if not is_gold and name == "careless":
                flagged_now = session.get(AnnotatorFlag, (stage_id, user_id)) is not None
                (after_flag if flagged_now else before_flag).append(c.item_id)

    report = accuracy.accuracy_report(session, stage_id)
    for name, p in PLANTED.items():
        row = next(v for k, v in report["annotators"].items() if k.startswith(name))
        assert row["items"] == N_GOLD
        assert row["accuracy"]["estimate"] == pytest.approx(p)
        low, high = row["accuracy"]["low"], row["accuracy"]["high"]
        assert (low is None or low <= p) and (high is None or p <= high)
        assert row["flagged"] is (name == "careless")
        assert sum(d["items"] for d in row["trend"]) == N_GOLD

    # The careless annotator was flagged at their 10th gold answer; their later work waits for review,
    # and so does their earlier work (no run of 10 gold answers of theirs passed).
    assert after_flag and before_flag
    statuses = set(session.scalars(sa.select(Item.status).where(Item.id.in_(after_flag + before_flag))))
    assert statuses == {ItemStatus.review}
    events = dict(session.execute(sa.select(AuditEvent.action, sa.func.count()).where(AuditEvent.action.like("gold.%")).group_by(AuditEvent.action)).all())
    assert events["gold.flagged"] == 1 and events["gold.routed_to_review"] == len(after_flag) + len(before_flag)
    assert events["gold.marked"] == N_GOLD

    # Gold items stay gold: never finalized, never in agreement.
    assert set(session.scalars(sa.select(Item.status).where(Item.id.in_(gold_items)))) == {ItemStatus.gold}
    assert not set(agreement.stage_annotations(session, stage_id)) & gold_items
    progress = projects.project_progress(session, session.get(Stage, stage_id).project_id)
    assert progress.items == n_ordinary
    # The stage's bar leaves the gold items' annotations and finals out as the project's progress does.
    assert [projects.stage_progress(session, s.id) for s in progress.stages] == progress.stages


def test_a_bad_gold_file_changes_nothing_and_names_each_line(session, settings, storage, tmp_path):
    _, stage_id = make_project(session, settings, storage, tmp_path, "generic.choice", 5)
    body = b'{"id": "it-0", "answer": {"choice": "a"}}\n{"id": "it-1", "answer": {"choice": "zzz"}}\nnot json\n' \
        b'{"id": "nope", "answer": {"choice": "a"}}\n{"id": "it-0", "answer": {"choice": "b"}}\n[1]\n'
    with pytest.raises(Invalid) as err:
        gold.import_answers(session, stage_id, body, actor_id=None)
    text = " | ".join(err.value.errors)
    for expected in ("line 2:", "line 3: not JSON", "line 4: no item 'nope'", "line 5: item 'it-0' is named twice", "line 6: expected"):
        assert expected in text, text
    assert session.scalar(sa.select(sa.func.count()).select_from(GoldItem)) == 0
    assert session.scalar(sa.select(sa.func.count()).select_from(Item).where(Item.status == ItemStatus.gold)) == 0


def test_make_this_final_gold_takes_the_item_out_of_the_data(session, settings, storage, tmp_path):
    _, stage_id = make_project(session, settings, storage, tmp_path, "generic.choice", 2)
    annotator = factories.user(session)
    first = factories.annotation(session, stage_id, annotator, {"choice": "c"})
    assert first.item_status == "done"
    item_id = session.scalar(sa.select(Assignment.item_id).where(Assignment.annotator_id == annotator))
    gold.make_final_gold(session, item_id, stage_id, actor_id=None)
    assert session.get(Item, item_id).status == ItemStatus.gold
    assert session.scalar(sa.select(GoldItem.answer).where(GoldItem.item_id == item_id)) == {"choice": "c"}
    # Its own final is the truth: a screen of the gold item does not show it as an earlier result.
    from app.services.annotation.pipeline import results_by_stage

    assert results_by_stage(session, item_id) == {}
    # Nor does the API's claim answer, nor the screen of an assignment of it.
    from app import queue
    from app.services.annotation.annotation import claim_json, open_assignment

    assignment_id = session.scalar(sa.select(Assignment.id).where(Assignment.item_id == item_id))
    claimed = queue.Claim(assignment_id, item_id, datetime.now(UTC))
    assert json.loads(claim_json(session, claimed, stage_id))["results"] == {}
    assert open_assignment(session, assignment_id, annotator).results == {}
    with pytest.raises(Invalid, match="no final record"):
        other = session.scalar(sa.select(Item.id).where(Item.id != item_id, Item.status == ItemStatus.active))
        gold.make_final_gold(session, other, stage_id, actor_id=None)


def test_without_a_share_no_gold_item_is_served(session, settings, storage, tmp_path):
    _, stage_id = make_project(session, settings, storage, tmp_path, "generic.choice", 4)
    gold.import_answers(session, stage_id, gold_file(["it-0", "it-1"], {"choice": "a"}), actor_id=None)
    user_id = factories.user(session)
    got = []
    while (c := annotations.claim(session, stage_id, user_id)) is not None:
        got.append(c.item_id)
        annotations.submit(session, c.assignment_id, user_id, {"choice": "a"}, uuid.uuid4().hex)
    assert not set(got) & gold.gold_item_ids(session, stage_id) and len(got) == 2


def annotate(session, stage_id, user_id, gold_ids, right: list[bool]) -> list[tuple[int, bool, str]]:
    """Claim and submit until the annotator has answered len(right) gold items, the k-th one right or
    wrong as right[k] (ordinary items are answered "a"). Returns (item id, gold?, answered status) per submit."""
    done, answered = [], 0
    while answered < len(right):
        c = annotations.claim(session, stage_id, user_id)
        is_gold = c.item_id in gold_ids
        answer = {"choice": "a" if not is_gold or right[answered] else "b"}
        answered += is_gold
        done.append((c.item_id, is_gold, annotations.submit(session, c.assignment_id, user_id, answer, uuid.uuid4().hex).item_status))
    return done


def gold_project(session, settings, storage, tmp_path, n_gold=20, n=80, **config):
    project_id, stage_id = make_project(
        session, settings, storage, tmp_path, "generic.choice", n,
        gold_share=0.5, gold_min_items=4, gold_threshold=0.7, gold_route_to_review=True, **config,
    )
    gold.import_answers(session, stage_id, gold_file([f"it-{i}" for i in range(n - n_gold, n)], {"choice": "a"}), actor_id=None)
    return project_id, stage_id, gold.gold_item_ids(session, stage_id)


@pytest.mark.parametrize("earlier", ["since_passing", "all", "none"])
def test_a_flag_sends_earlier_finished_work_back_to_review(session, settings, storage, tmp_path, earlier):
    from app.exporters.rows import ALL, split_rows
    from app.models import ItemResult
    from app.services.exports import splits

    project_id, stage_id, gold_ids = gold_project(session, settings, storage, tmp_path, gold_route_earlier=earlier)
    user_id = factories.user(session)
    # Four right (a passing run of four), one wrong: 4/5 still passes. Then ordinary work, and a second
    # wrong answer flags them (4/6 < 0.7); their newest passing run ends at the first wrong answer.
    before_window = [i for i, g, _ in annotate(session, stage_id, user_id, gold_ids, [True] * 4 + [False]) if not g]
    definition = splits.save_definition(session, project_id, {"ratios": {"train": 0.5, "test": 0.5}, "seed": 1})
    flagging = annotate(session, stage_id, user_id, gold_ids, [False])
    after_window = [i for i, g, _ in flagging if not g]
    assert before_window and after_window and session.get(AnnotatorFlag, (stage_id, user_id)) is not None
    assert flagging[-1][1] and flagging[-1][2] == "review"  # as their next ordinary item answers
    later = [i for i, g, _ in annotate(session, stage_id, user_id, gold_ids, [False]) if not g]
    routed = {"since_passing": after_window + later, "all": before_window + after_window + later, "none": later}[earlier]
    kept = sorted(set(before_window + after_window + later) - set(routed))
    status = dict(session.execute(sa.select(Item.id, Item.status).where(Item.id.in_(before_window + after_window + later))).all())
    assert {i for i, s in status.items() if s == ItemStatus.review} == set(routed)
    assert {i for i, s in status.items() if s == ItemStatus.done} == set(kept)
    # Nothing is rewritten: the automatic finals are still there; each item says why it went back.
    finals = session.scalar(sa.select(sa.func.count()).select_from(ItemResult).where(ItemResult.item_id.in_(routed)))
    assert finals == len(set(routed) - set(later))
    events = session.scalars(sa.select(AuditEvent.target).where(AuditEvent.action == "gold.routed_to_review")).all()
    assert sorted(events) == sorted(f"item:{i}" for i in routed)
    # Not exported as final: neither among the finished items nor from the split saved before the flag.
    exported = {r.item_id for batch in split_rows(session, project_id, None, ALL) for r in batch}
    in_split = {r.item_id for name in ("train", "test") for batch in split_rows(session, project_id, definition, name) for r in batch}
    session.connection().execution_options(stream_results=False)  # the readers stream on the session's connection
    assert not exported & set(routed) and not in_split & set(routed)
    assert set(kept) <= exported and set(kept) & set(before_window) <= in_split


def test_the_review_queue_says_why_and_puts_the_least_accurate_first(session, settings, storage, tmp_path):
    from app.services.review import review

    _, stage_id, gold_ids = gold_project(session, settings, storage, tmp_path, gold_route_earlier="all")
    half = factories.user(session, "half")  # 0.5 accuracy: works first, so their items have the lower ids
    none = factories.user(session, "none")  # 0.0
    half_items = [i for i, g, _ in annotate(session, stage_id, half, gold_ids, [True, False] * 2) if not g]
    none_items = [i for i, g, _ in annotate(session, stage_id, none, gold_ids, [False] * 4) if not g]
    rows = review.review_queue(session, stage_id)
    assert [r.item_id for r in rows] == sorted(none_items) + sorted(half_items)
    assert {r.reason for r in rows} == {gold.ROUTED} == {"routed: annotator below gold accuracy"}
    assert [r.accuracy for r in rows] == [0.0] * len(none_items) + [0.5] * len(half_items)
