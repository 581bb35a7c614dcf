"""The arms: balanced to the setting, the same for the same seed, the database's draw equal to Python's;
a control-arm claim through the API carries no suggestion, a shown one does, and both are stored."""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from hypothesis import given, settings as hsettings, strategies as st

from app.bias import arms
from app.db import transaction
from app.bias.stats import chi_square, difference, mean, permutation_p
from app.models import Annotation, SuggestionOutcome
from tests import factories
from tests.bias.world import stage, truth_answer


def test_arms_are_balanced_to_the_setting_over_1000_assignments():
    for share in (0.1, 0.25, 0.5, 0.9):
        for seed in (0, 1, 12345):
            control = sum(arms.arm({"draft_control_share": share, "draft_control_seed": seed}, a) == arms.CONTROL
                          for a in range(1, 1001))
            assert abs(control / 1000 - share) <= 0.05, (share, seed, control)


def test_the_same_seed_gives_the_same_arms_and_another_seed_others():
    config = {"draft_control_share": 0.5, "draft_control_seed": 7}
    first = [arms.arm(config, a) for a in range(1000)]
    assert first == [arms.arm(dict(config), a) for a in range(1000)]
    other = [arms.arm({**config, "draft_control_seed": 8}, a) for a in range(1000)]
    assert sum(x != y for x, y in zip(first, other, strict=True)) > 400  # independent draws differ about half the time


def test_probes_only_on_gold_items_and_outside_the_control_arm():
    config = {"draft_control_share": 0.2, "probe_share": 0.5, "draft_control_seed": 3}
    ordinary = [arms.arm(config, a) for a in range(2000)]
    on_gold = [arms.arm(config, a, gold=True) for a in range(2000)]
    assert arms.PROBE not in ordinary
    assert [x == arms.CONTROL for x in ordinary] == [x == arms.CONTROL for x in on_gold]
    assert abs(on_gold.count(arms.PROBE) / 2000 - 0.8 * 0.5) <= 0.05
    assert arms.arm({}, 5, gold=True) == arms.SHOWN


def test_the_database_draws_the_same_arm_as_python(session):
    ids = list(range(1, 1001)) + [2**40 + 17, 9_000_000_000]
    for share, seed in ((0.5, 0), (0.3, 2**31 - 1), (0.0, 4)):
        config = {"draft_control_share": share, "draft_control_seed": seed}
        sql = sa.text(f"SELECT a, {arms.hidden_sql('CAST(:config AS jsonb)', 'a')} FROM unnest(CAST(:ids AS bigint[])) a")
        hidden = dict(session.execute(sql, {"config": __import__("json").dumps(config), "ids": ids}).all())
        assert hidden == {a: arms.arm(config, a) == arms.CONTROL for a in ids}


def test_active_seconds_are_capped_and_never_above_the_time_open():
    assert arms.active_seconds("12.5", 20.0) == 12.5
    assert arms.active_seconds(40, 20.0) == 20.0
    assert arms.active_seconds(1e9) == arms.MAX_ACTIVE_SECONDS
    assert arms.active_seconds(100, 200.0, lease=60) == 60  # time past the lease is not credited
    for bad in ("", "nan", "-1", "inf", None, "x"):
        assert arms.active_seconds(bad) is None


@hsettings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=40))
def test_a_proportion_lies_inside_its_interval(values):
    figure = mean(values, samples=200, seed=1)
    assert figure.low <= figure.estimate <= figure.high and figure.n == len(values)


def test_statistics_against_plain_cases():
    assert chi_square({"shown": {"a": 10}, "control": {"a": 12}})["p"] == 1.0  # one label: nothing to test
    assert chi_square({"shown": {"a": 90, "b": 10}, "control": {"a": 50, "b": 50}})["p"] < 1e-6
    same = [1.0, 0.0] * 50
    assert permutation_p(same, same, seed=1) > 0.9
    assert permutation_p([1.0] * 30, [0.0] * 30, seed=1) < 0.001
    d = difference([1.0] * 30, [0.0] * 30, samples=100)
    assert (d.estimate, d.low, d.high) == (1.0, 1.0, 1.0)
    assert difference([1.0], [0.0], samples=0).as_dict() == {"estimate": 1.0, "low": None, "high": None, "n": 2}
    assert mean([1.0, 0.0], samples=0).as_dict() == {"estimate": 0.5, "low": None, "high": None, "n": 2}


def test_a_control_claim_through_the_api_has_no_suggestion_and_its_answer_records_the_arm(app, client, settings, storage, tmp_path):
    with transaction(app.state.sessions) as s:
        stage_id, truths, drafts = stage(s, settings, storage, tmp_path, n=40, n_gold=0, overlap=1,
                                         draft_control_share=0.5, draft_control_seed=2)
        headers = factories.bearer(s, "api-annotator")
    seen = {arms.CONTROL: 0, arms.SHOWN: 0}
    config = {"draft_control_share": 0.5, "draft_control_seed": 2}
    for _ in range(40):
        claimed = client.post(f"/api/v1/stages/{stage_id}/claim", headers=headers)
        assert claimed.status_code == 200
        body = claimed.json()
        arm = arms.arm(config, body["assignment_id"])
        seen[arm] += 1
        assert (body["suggestions"] == []) == (arm == arms.CONTROL)
        # Asked again, the live lease comes back through the other statement: the same arm.
        again = client.post(f"/api/v1/stages/{stage_id}/claim", headers=headers).json()
        assert again["assignment_id"] == body["assignment_id"] and again["suggestions"] == body["suggestions"]
        sent = {"payload": truth_answer(truths[body["item_id"]]), "idempotency_key": uuid.uuid4().hex,
                "seconds_spent": 9.0, "active_seconds": 30.0}
        assert client.post(f"/api/v1/assignments/{body['assignment_id']}/submit", json=sent, headers=headers).status_code == 200
        with transaction(app.state.sessions) as s:
            row = s.scalars(sa.select(Annotation).where(Annotation.assignment_id == body["assignment_id"])).one()
            # Capped at the time since the claim, as the server measured it (a client's word is not taken beyond it).
            assert row.arm == arm and row.wall_seconds > 0 and row.active_seconds == min(30.0, row.wall_seconds)
            outcome = s.scalars(sa.select(SuggestionOutcome).where(SuggestionOutcome.annotation_id == row.id)).one()
        assert outcome.shown == (arm == arms.SHOWN)  # a hidden draft is still compared with the answer
        assert outcome.edit_distance == (0.0 if drafts[body["item_id"]]["label"] == truths[body["item_id"]] else 1 / 3)
    assert seen[arms.CONTROL] >= 10 and seen[arms.SHOWN] >= 10
