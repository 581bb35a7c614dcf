"""The qualification quiz and auto-pause on the real queue: a failed quiz gives no lease, a pass gives real
items, quiz answers never count as gold accuracy; the pause fires on exactly the answer that takes the
rolling accuracy below the threshold, releases live leases, sends unreviewed work to review, and lifting
it gives leases again."""

from __future__ import annotations

import json
import random
import uuid

import pytest
import sqlalchemy as sa

from app.datasets.workflow import StageConfig
from app.errors import Forbidden, Invalid
from app.gate import Paused, QuizFailed
from app.lifecycle import ItemStatus
from app.datasets.voldoger.verify import CHECK_KIND
from app.models import Annotation, AnnotatorFlag, AnnotatorGate, Assignment, AuditEvent, Item, QuizAnswer, Stage, User
from app.services.annotation import annotation as annotations
from app.services.quality import accuracy, bias, gold, qualification, worklog
from app.services.review import review
from app.services.users.workspaces import default_workspace_id
from tests import factories
from tests.bias import test_simulation as simulation
from tests.bias import world as bias_world
from tests.services.test_gold import gold_file, make_project

RIGHT, WRONG, ORDINARY = {"choice": "a"}, {"choice": "b"}, {"choice": "c"}
N_ORDINARY, N_GOLD = 30, 16


def gold_stage(session, settings, storage, tmp_path, **config):
    """A generic.choice stage of N_ORDINARY ordinary items and N_GOLD gold items (truth "a")."""
    _, stage_id = make_project(session, settings, storage, tmp_path, "generic.choice", N_ORDINARY + N_GOLD, **config)
    ids = [f"it-{i}" for i in range(N_ORDINARY, N_ORDINARY + N_GOLD)]
    gold.import_answers(session, stage_id, gold_file(ids, RIGHT), actor_id=None)
    return stage_id, gold.gold_item_ids(session, stage_id)


def answer(session, stage_id, user_id, payload):
    claimed = annotations.claim(session, stage_id, user_id)
    annotations.submit(session, claimed.assignment_id, user_id, payload, uuid.uuid4().hex)
    return claimed


def admin(session) -> User:
    return session.get(User, factories.user(session, f"boss-{uuid.uuid4().hex[:4]}", role="admin"))


def test_a_failed_quiz_gives_no_lease_and_a_pass_gives_real_items(session, settings, storage, tmp_path):
    stage_id, gold_ids = gold_stage(session, settings, storage, tmp_path, quiz_items=3, quiz_pass=2.0, quiz_tries=2)
    failing, passing = factories.user(session, "failing"), factories.user(session, "passing")
    for _ in range(2):  # two tries of three wrong answers, each on a gold item it never saw
        for _ in range(2):
            assert answer(session, stage_id, failing, WRONG).item_id in gold_ids
        spare = annotations.claim(session, stage_id, failing)  # a second tab's lease, answered after the try ended
        assert answer(session, stage_id, failing, WRONG).item_id in gold_ids
    annotations.submit(session, spare.assignment_id, failing, RIGHT, uuid.uuid4().hex)  # counted in no try
    standing = session.get(AnnotatorGate, (stage_id, failing))
    assert (standing.tries_failed, standing.try_answers, standing.last_score) == (2, 0, 0.0)
    with pytest.raises(QuizFailed) as refused:
        annotations.claim(session, stage_id, failing)
    assert "scored 0 of 3, at least 2 needed, and you used 2 of 2 tries" in refused.value.message
    assert refused.value.errors == ["score: 0 of 3", "needed: 2", "tries used: 2 of 2"]
    assert [e.detail["try"] for e in session.scalars(sa.select(AuditEvent).where(AuditEvent.action == "quiz.failed"))] == [1, 2]

    # Two of three right passes; only then real items come.
    served = [answer(session, stage_id, passing, p).item_id for p in (RIGHT, WRONG, RIGHT)]
    assert set(served) <= gold_ids
    real = annotations.claim(session, stage_id, passing)
    assert real is not None and real.item_id not in gold_ids
    # Quiz answers count for the quiz only: no gold accuracy, nothing finalized, gold items stay gold.
    assert session.scalar(sa.select(sa.func.count()).select_from(QuizAnswer)) == 10
    assert accuracy.accuracy_report(session, stage_id, samples=0)["annotators"] == {}
    logged = list(worklog.rows(session, default_workspace_id(session), worklog.WorkLogFilter()))
    assert {r.annotator: (r.answers, r.gold_answers) for r in logged} == {"failing": (7, 0), "passing": (3, 0)}
    assert set(session.scalars(sa.select(Item.status).where(Item.id.in_(gold_ids)))) == {ItemStatus.gold}

    # A manager's reset gives the failed annotator their tries back; a plain annotator cannot reset.
    with pytest.raises(Forbidden):
        qualification.reset_quiz(session, stage_id, failing, session.get(User, passing))
    qualification.reset_quiz(session, stage_id, failing, admin(session))
    for _ in range(3):
        assert answer(session, stage_id, failing, RIGHT).item_id in gold_ids
    assert annotations.claim(session, stage_id, failing).item_id not in gold_ids
    standings = {s.annotator: s for s in qualification.standings(session, stage_id)}
    assert standings["failing"].quiz == standings["passing"].quiz == "passed"


def test_no_gold_left_for_the_quiz_is_a_clear_refusal(session, settings, storage, tmp_path):
    stage_id, _ = gold_stage(session, settings, storage, tmp_path, quiz_items=5, quiz_pass=5.0, quiz_tries=5)
    user = factories.user(session, "slow")
    for _ in range(N_GOLD):
        answer(session, stage_id, user, WRONG)
    with pytest.raises(Exception, match="no gold item left"):
        annotations.claim(session, stage_id, user)


@pytest.mark.parametrize("config, field", [
    ({"quiz_items": 3, "quiz_pass": 4.0}, "quiz_pass"),
    ({"pause_threshold": 1.5}, "pause_threshold"),
    ({"quiz_tries": 0}, "quiz_tries"),
    ({"pause_window": "5"}, "pause_window"),
])
def test_bad_settings_are_refused_naming_the_key(config, field):
    with pytest.raises(Invalid) as refused:
        StageConfig.check_stage(config, "generic.choice")
    assert any(p.startswith(f"'{field}'") for p in refused.value.errors), refused.value.errors


def test_the_pause_fires_on_the_answer_that_takes_the_window_below_and_lifting_restores_leases(session, settings, storage, tmp_path):
    random.seed(7)
    stage_id, gold_ids = gold_stage(session, settings, storage, tmp_path, gold_share=0.5, pause_window=4, pause_threshold=0.75)
    user, other = factories.user(session, "drifting"), factories.user(session, "steady")
    script = [RIGHT, RIGHT, RIGHT, WRONG, WRONG]  # windows of four: 0.75 (not below) after the 4th, 0.5 after the 5th
    done_ordinary, gold_answers, held = [], [], None
    while len(gold_answers) < len(script):
        claimed = annotations.claim(session, stage_id, user)
        if claimed.item_id not in gold_ids:
            annotations.submit(session, claimed.assignment_id, user, ORDINARY, uuid.uuid4().hex)
            done_ordinary.append(claimed.item_id)
            continue
        if len(gold_answers) == len(script) - 1:
            held = annotations.claim(session, stage_id, user)  # after a gold claim the next is ordinary: a live lease
            assert held.item_id not in gold_ids
        result = annotations.submit(session, claimed.assignment_id, user, script[len(gold_answers)], uuid.uuid4().hex)
        gold_answers.append(result.annotation_id)
        paused = session.get(AnnotatorFlag, (stage_id, user))
        assert (paused is not None and paused.paused_at is not None) == (len(gold_answers) == len(script)), len(gold_answers)
    event = session.scalars(sa.select(AuditEvent).where(AuditEvent.action == "annotator.paused")).one()
    assert event.detail["answers"] == gold_answers[-4:] and event.detail["accuracy"] == 0.5 and event.detail["released"] == 1
    # Their live lease was released; their finished, unreviewed work is in the review queue.
    assert session.get(Assignment, held.assignment_id).status == "released"
    assert done_ordinary and {r.item_id for r in review.review_queue(session, stage_id)} == set(done_ordinary)
    assert all(r.reason == gold.ROUTED for r in review.review_queue(session, stage_id))
    with pytest.raises(Paused) as refused:
        annotations.claim(session, stage_id, user)
    assert "your accuracy on your last 4 check items was 50%, below the stage's 75%" in refused.value.message
    # Someone else keeps working; the paused annotator's released item is theirs to take.
    assert answer(session, stage_id, other, ORDINARY) is not None

    with pytest.raises(Forbidden):
        qualification.lift_pause(session, stage_id, user, session.get(User, other))
    qualification.lift_pause(session, stage_id, user, admin(session))
    assert session.get(AnnotatorFlag, (stage_id, user)) is None
    assert annotations.claim(session, stage_id, user) is not None
    assert session.scalars(sa.select(AuditEvent.action).where(AuditEvent.action.like("annotator.%"))).all() == [
        "annotator.paused", "annotator.unpaused"]


def test_quiz_answers_stay_out_of_the_pause_window(session, settings, storage, tmp_path):
    random.seed(3)
    stage_id, gold_ids = gold_stage(session, settings, storage, tmp_path, gold_share=0.5, quiz_items=3, quiz_pass=1.0,
                                    pause_window=2, pause_threshold=0.9)
    user = factories.user(session, "learner")
    for p in (WRONG, WRONG, RIGHT):  # a pass with one right of three
        answer(session, stage_id, user, p)
    gold_seen = 0
    while gold_seen < 2:  # two right gold answers after the quiz: the window is 1.0, not paused
        claimed = annotations.claim(session, stage_id, user)
        gold_seen += claimed.item_id in gold_ids
        annotations.submit(session, claimed.assignment_id, user, RIGHT if claimed.item_id in gold_ids else ORDINARY, uuid.uuid4().hex)
    assert session.get(AnnotatorFlag, (stage_id, user)) is None


def test_quiz_items_carry_no_probe_and_quiz_answers_stay_out_of_the_bias_figures(session, settings, storage, tmp_path):
    """Every gold item of this stage would be a probe (probe_share 1), yet a quiz item shows the real draft
    on the claim's answer and the screen and is stored in the drafts-shown arm; quiz answers count in no
    figure of the draft-bias report nor in the probe catch rate, while the gold items after the quiz are probes."""
    random.seed(3)
    stage_id, truths, drafts = bias_world.stage(session, settings, storage, tmp_path, n=12, n_gold=8, overlap=1, gold_share=0.5,
                                                probe_share=1.0, quiz_items=3, quiz_pass=0.0, probe_action="review",
                                                probe_min_items=1, probe_threshold=1.0)
    user, rng = factories.user(session, "quizzer"), random.Random(4)
    quiz_items = []
    for _ in range(3):
        claimed = annotations.claim(session, stage_id, user)
        quiz_items.append(claimed.item_id)
        sent = json.loads(annotations.claim_json(session, claimed, stage_id))
        assert [s["payload"] for s in sent["suggestions"]] == [drafts[claimed.item_id]]  # the real draft, no plant
        screen = annotations.open_assignment(session, claimed.assignment_id, user)
        assert screen.suggestions[CHECK_KIND].payload == drafts[claimed.item_id]
        annotations.submit(session, claimed.assignment_id, user, simulation.answer("anchored", rng, screen, truths[claimed.item_id]),
                           uuid.uuid4().hex)
    quiz_rows = session.execute(sa.select(Annotation.id, Annotation.arm).join(QuizAnswer, QuizAnswer.annotation_id == Annotation.id)).all()
    assert len(quiz_rows) == 3 and {arm for _, arm in quiz_rows} == {"shown"}
    stage = session.get(Stage, stage_id)
    assert sum(a["answers"] for a in bias.stage_report(session, stage_id, samples=10)["overall"]["arms"].values()) == 0
    probe = None
    while probe is None:  # after the quiz a gold item is a probe
        claimed = annotations.claim(session, stage_id, user)
        screen = annotations.open_assignment(session, claimed.assignment_id, user)
        annotations.submit(session, claimed.assignment_id, user, simulation.answer("independent", rng, screen, truths[claimed.item_id]),
                           uuid.uuid4().hex)
        if claimed.item_id in quiz_items or claimed.item_id in drafts and screen.suggestions[CHECK_KIND].payload != drafts[claimed.item_id]:
            probe = session.scalar(sa.select(Annotation).where(Annotation.assignment_id == claimed.assignment_id))
    assert probe.arm == "probe" and probe.item_id not in quiz_items
    arms = bias.stage_report(session, stage_id, samples=10)["overall"]["arms"]
    answered = session.scalar(sa.select(sa.func.count()).select_from(Annotation).where(Annotation.annotator_id == user))
    assert sum(a["answers"] for a in arms.values()) == answered - 3 and arms["probe"]["answers"] == 1
    # Quiz answers marked as missed probes (as rows from before this rule could be) still do not count.
    session.execute(sa.update(Annotation).where(Annotation.id.in_([i for i, _ in quiz_rows])).values(probe_caught=False))
    session.execute(sa.update(Annotation).where(Annotation.id == probe.id).values(probe_caught=True))
    assert bias.probe_catch(session, stage, user) is None  # one probe, caught: 1 of 1, not 1 of 4
