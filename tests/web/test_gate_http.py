"""The qualification quiz and auto-pause through HTTP: the stage's settings changed by the API (checked,
audited), the quiz's refusal on the API and the annotation page, quiz items that cannot be skipped,
the pause's webhook event, lift and reset by the API and the dashboard's buttons, refused to an annotator."""

from __future__ import annotations

import json
import uuid

import sqlalchemy as sa

from app.db import transaction
from app.models import AnnotatorFlag, AuditEvent, Stage, User, WebhookDelivery
from app.services.quality import gold
from app.services.users.workspaces import default_workspace_id
from app.services.webhooks import hooks
from tests import factories
from tests.conftest import csrf_from, login, make_choice_project, start_annotating

N_ORDINARY, N_GOLD = 10, 8


def gold_stage(app, settings, storage) -> tuple[int, int, set[int]]:
    project_id, stage_id = make_choice_project(app.state.sessions, settings, storage, N_ORDINARY + N_GOLD)
    body = "\n".join(json.dumps({"id": f"it-{i}", "answer": {"choice": "a"}}) for i in range(N_ORDINARY, N_ORDINARY + N_GOLD))
    with transaction(app.state.sessions) as s:
        gold.import_answers(s, stage_id, body.encode(), actor_id=None)
        return project_id, stage_id, gold.gold_item_ids(s, stage_id)


def answer(client, headers, stage_id, choice):
    claimed = client.post(f"/api/v1/stages/{stage_id}/claim", headers=headers)
    assert claimed.status_code == 200, claimed.text
    sent = client.post(f"/api/v1/assignments/{claimed.json()['assignment_id']}/submit", headers=headers,
                       json={"payload": {"choice": choice}, "idempotency_key": uuid.uuid4().hex})
    assert sent.status_code == 200, sent.text
    return claimed.json()["item_id"]


def test_settings_by_api_then_a_failed_quiz_refuses_api_and_page_until_a_reset(client, app, api, settings, storage):
    project_id, stage_id, gold_ids = gold_stage(app, settings, storage)
    bad = client.patch(f"/api/v1/projects/{project_id}", headers=api["admin"],
                       json={"stages": [{"id": stage_id, "config": {"quiz_items": 2, "quiz_pass": 3}}]})
    assert bad.status_code == 422 and bad.json()["detail"].startswith("stages[0].config.quiz_pass: 'quiz_pass'"), bad.json()
    assert "a quiz of 2 items scores at most 2" in bad.json()["detail"]
    ok = client.patch(f"/api/v1/projects/{project_id}", headers=api["admin"],
                      json={"stages": [{"id": stage_id, "config": {"quiz_items": 2, "quiz_pass": 2, "quiz_tries": 1}}]})
    assert ok.status_code == 200, ok.text
    assert {k: ok.json()["stages"][0]["config"][k] for k in ("quiz_items", "quiz_pass", "choices")} == {
        "quiz_items": 2, "quiz_pass": 2, "choices": ["a", "b", "c"]}
    with transaction(app.state.sessions) as s:
        event = s.scalars(sa.select(AuditEvent).where(AuditEvent.action == "project.update")).one()
        assert event.detail["before"][f"stage {stage_id} config.quiz_items"] is None
        assert event.detail["after"][f"stage {stage_id} config.quiz_items"] == 2
        factories.user(s, "pagefail")

    assert {answer(client, api["ann"], stage_id, c) for c in ("a", "b")} <= gold_ids  # one right of two
    refused = client.post(f"/api/v1/stages/{stage_id}/claim", headers=api["ann"])
    assert refused.status_code == 409
    assert "scored 1 of 2, at least 2 needed, and you used 1 of 1 try" in refused.json()["detail"]
    assert refused.json()["errors"] == ["score: 1 of 2", "needed: 2", "tries used: 1 of 1"]

    # An annotator cannot reset; an admin can, and the quiz comes again.
    with transaction(app.state.sessions) as s:
        ann_id = s.scalar(sa.text("SELECT id FROM users WHERE username = 'ann'"))
    assert client.post(f"/api/v1/stages/{stage_id}/annotators/{ann_id}/reset-quiz", headers=api["ann"]).status_code == 403
    assert client.post(f"/api/v1/stages/{stage_id}/annotators/{ann_id}/reset-quiz", headers=api["admin"]).status_code == 204
    standings = client.get(f"/api/v1/stages/{stage_id}/qualification", headers=api["admin"]).json()
    assert [(s["annotator"], s["quiz"], s["tries_used"]) for s in standings] == [("ann", "taking", 0)]
    # Two right of two passes: the next claim is a real item.
    assert {answer(client, api["ann"], stage_id, "a") for _ in range(2)} <= gold_ids
    assert client.post(f"/api/v1/stages/{stage_id}/claim", headers=api["ann"]).json()["item_id"] not in gold_ids
    assert client.get(f"/api/v1/stages/{stage_id}/qualification", headers=api["admin"]).json()[0]["quiz"] == "passed"


def test_the_stage_settings_page_sets_the_quiz_and_pause(client, app, settings, storage):
    _, stage_id, _ = gold_stage(app, settings, storage)
    with transaction(app.state.sessions) as s:
        factories.user(s, "chief", role="admin")
    login(client, "chief")
    page = client.get(f"/stages/{stage_id}/settings")
    assert all(key in page.text for key in ("quiz_items", "quiz_pass", "quiz_tries", "pause_window", "pause_threshold"))
    form = {"csrf_token": csrf_from(page.text)}
    refused = client.post(f"/stages/{stage_id}/settings", data={**form, "config": '{"choices": ["a", "b", "c"], "quiz_items": 2, "quiz_pass": 3}'})
    assert refused.status_code == 422 and "stages[0].config.quiz_pass" in refused.text
    refused = client.post(f"/stages/{stage_id}/settings", data={**form, "config": '{"choices": ["a", "b", "c"], "pause_threshold": 2}'})
    assert refused.status_code == 422 and "stages[0].config.pause_threshold" in refused.text
    with transaction(app.state.sessions) as s:
        assert "quiz_items" not in s.get(Stage, stage_id).config
    saved = client.post(f"/stages/{stage_id}/settings", follow_redirects=False,
                        data={**form, "config": '{"choices": ["a", "b", "c"], "quiz_items": 2, "quiz_pass": 1.5, "pause_window": 4}'})
    assert saved.status_code == 303
    with transaction(app.state.sessions) as s:
        config = s.get(Stage, stage_id).config
        assert (config["quiz_items"], config["quiz_pass"], config["pause_window"]) == (2, 1.5, 4)
    dashboard = client.get(f"/stages/{stage_id}/agreement").text
    assert "a quiz of 2 gold items" in dashboard and "scoring at least 1.5, in at most 1 try" in dashboard


def test_the_page_says_why_the_quiz_refuses(client, app, settings, storage):
    _, stage_id, gold_ids = gold_stage(app, settings, storage)
    with transaction(app.state.sessions) as s:
        stage = s.get(Stage, stage_id)
        stage.config = {**stage.config, "quiz_items": 1, "quiz_pass": 1, "quiz_tries": 1}
        factories.user(s, "pager")
    login(client, "pager")
    screen = start_annotating(client, stage_id)
    assert screen.status_code == 200 and "/assignments/" in screen.text
    sent = client.post(_submit_url(screen), data={"choice": "b", "csrf_token": csrf_from(screen.text), "idempotency_key": uuid.uuid4().hex})
    assert sent.status_code == 409
    assert "You did not pass this stage&#39;s qualification quiz" in sent.text and "tries used: 1 of 1" in sent.text
    again = start_annotating(client, stage_id)
    assert again.status_code == 409 and "scored 0 of 1, at least 1 needed" in again.text


def _submit_url(screen) -> str:
    import re

    return re.search(r'<form[^>]+action="(/assignments/\d+/submit)"', screen.text)[1]


def test_lift_by_the_dashboard_button_and_the_api(client, app, api, settings, storage):
    _, stage_id, gold_ids = gold_stage(app, settings, storage)
    with transaction(app.state.sessions) as s:
        stage = s.get(Stage, stage_id)
        stage.config = {**stage.config, "gold_share": 0.5, "pause_window": 1, "pause_threshold": 0.5}
        ann_id = s.scalar(sa.text("SELECT id FROM users WHERE username = 'ann'"))
        factories.user(s, "lead", role="admin")

    def pause_ann():
        while answer(client, api["ann"], stage_id, "b") not in gold_ids:
            pass
        refused = client.post(f"/api/v1/stages/{stage_id}/claim", headers=api["ann"])
        assert refused.status_code == 409 and "paused" in refused.json()["detail"]

    pause_ann()
    assert client.post(f"/api/v1/stages/{stage_id}/annotators/{ann_id}/lift-pause", headers=api["ann"]).status_code == 403
    assert client.post(f"/api/v1/stages/{stage_id}/annotators/{ann_id}/lift-pause", headers=api["admin"]).status_code == 204
    assert client.post(f"/api/v1/stages/{stage_id}/claim", headers=api["ann"]).status_code == 200
    # Release what the claim took, then pause again and lift with the page's button.
    with transaction(app.state.sessions) as s:
        s.execute(sa.text("UPDATE assignments SET status = 'released' WHERE annotator_id = :u AND status = 'active'"), {"u": ann_id})
    pause_ann()
    login(client, "lead")
    page = client.get(f"/stages/{stage_id}/agreement")
    assert f'action="/stages/{stage_id}/annotators/{ann_id}/lift-pause"' in page.text
    lifted = client.post(f"/stages/{stage_id}/annotators/{ann_id}/lift-pause", data={"csrf_token": csrf_from(page.text)},
                         follow_redirects=True)
    assert "Pause lifted: ann gets items in this stage again." in lifted.text
    with transaction(app.state.sessions) as s:
        assert s.get(AnnotatorFlag, (stage_id, ann_id)) is None
    assert client.post(f"/api/v1/stages/{stage_id}/claim", headers=api["ann"]).status_code == 200


def _set_config(app, stage_id, **keys):
    with transaction(app.state.sessions) as s:
        stage = s.get(Stage, stage_id)
        stage.config = {**stage.config, **keys}


def test_a_quiz_item_cannot_be_skipped_to_draw_an_easier_one(client, app, api, settings, storage):
    """The banner tells the annotator the item is a quiz item; neither a skip, a release nor a lease left
    to run out may hand them another gold item (else they answer only the easy ones, using up the
    stage's gold items): the skip and release answer 409 saying why, and the same item comes back."""
    _, stage_id, gold_ids = gold_stage(app, settings, storage)
    _set_config(app, stage_id, quiz_items=2, quiz_pass=2, quiz_tries=1)
    claimed = client.post(f"/api/v1/stages/{stage_id}/claim", headers=api["ann"]).json()
    assert claimed["item_id"] in gold_ids
    for verb in ("skip", "release"):
        refused = client.post(f"/api/v1/assignments/{claimed['assignment_id']}/{verb}", headers=api["ann"])
        assert refused.status_code == 409 and "quiz items cannot be skipped or given back" in refused.json()["detail"], refused.text
    again = client.post(f"/api/v1/stages/{stage_id}/claim", headers=api["ann"]).json()
    assert (again["assignment_id"], again["item_id"]) == (claimed["assignment_id"], claimed["item_id"])
    with transaction(app.state.sessions) as s:  # the lease runs out: the next claim serves the same item
        s.execute(sa.text("UPDATE assignments SET lease_until = now() - interval '1 minute' WHERE id = :a"), {"a": claimed["assignment_id"]})
    expired = client.post(f"/api/v1/stages/{stage_id}/claim", headers=api["ann"]).json()
    assert expired["item_id"] == claimed["item_id"], expired
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.text("SELECT count(*) FROM assignments WHERE stage_id = :s"), {"s": stage_id}) == 1
        factories.user(s, "quizpage")
    # The screen shows no Skip button on a quiz item and says why; a posted skip is refused all the same.
    login(client, "quizpage")
    screen = start_annotating(client, stage_id)
    assert screen.status_code == 200 and 'id="quiz-note"' in screen.text
    assert "Quiz items cannot be skipped" in screen.text and 'id="skip-button"' not in screen.text
    assignment = _submit_url(screen).split("/")[2]
    skipped = client.post(f"/assignments/{assignment}/skip", data={"csrf_token": csrf_from(screen.text)})
    assert skipped.status_code == 409 and "quiz items cannot be skipped" in skipped.text
    # Once the quiz is passed, a gold item (now an unmarked check item) skips as any other.
    sent = client.post(_submit_url(screen), data={"choice": "a", "csrf_token": csrf_from(screen.text), "idempotency_key": uuid.uuid4().hex})
    assert sent.status_code == 200 and 'id="skip-button"' not in sent.text  # the second quiz item
    sent = client.post(_submit_url(sent), data={"choice": "a", "csrf_token": csrf_from(sent.text), "idempotency_key": uuid.uuid4().hex})
    assert sent.status_code == 200 and 'id="skip-button"' in sent.text and 'id="quiz-note"' not in sent.text


def test_a_pause_sends_the_annotator_paused_webhook_event(client, app, api, settings, storage):
    """README's webhook table lists `annotator.paused`: a subscribed webhook gets a delivery when the
    auto-pause fires, in the pause's transaction, with the pause's figures."""
    _, stage_id, gold_ids = gold_stage(app, settings, storage)
    _set_config(app, stage_id, gold_share=0.5, pause_window=1, pause_threshold=0.5)
    with transaction(app.state.sessions) as s:
        admin = s.get(User, factories.user(s, "hookadmin", "admin"))
        hooks.create(s, admin, default_workspace_id(s), "https://example.org/hook", ["annotator.paused"])
        ann_id = s.scalar(sa.text("SELECT id FROM users WHERE username = 'ann'"))
    while answer(client, api["ann"], stage_id, "b") not in gold_ids:
        pass
    refused = client.post(f"/api/v1/stages/{stage_id}/claim", headers=api["ann"])
    assert refused.status_code == 409 and "paused" in refused.json()["detail"]  # the pause fired
    with transaction(app.state.sessions) as s:
        sent = s.execute(sa.select(WebhookDelivery.event_type, WebhookDelivery.body)).all()
    assert [t for t, _ in sent] == ["annotator.paused"], sent
    assert {k: json.loads(sent[0][1])["data"][k] for k in ("stage_id", "annotator_id", "username", "accuracy", "window", "threshold")} == {
        "stage_id": stage_id, "annotator_id": ann_id, "username": "ann", "accuracy": 0.0, "window": 1, "threshold": 0.5}
