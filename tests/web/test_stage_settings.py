"""A stage's settings once the project runs (admins): the API's PATCH and the stage's settings page change
its configuration (arms, probes, gold items, the workflow's keys), checked as at creation; a refusal is a
422 naming the key and changes nothing; every change is in the audit log with the value before; the
claims follow the new settings at once; and the seed of the arms stays hidden from annotators."""

from __future__ import annotations

import html

import pytest
import sqlalchemy as sa

from app.bias import arms
from app.db import transaction
from app.models import AuditEvent, Project, Stage
from tests import factories
from tests.conftest import csrf_from, login
from tests.bias.world import stage as bias_stage
from tests.web.test_gate_http import gold_stage


def events(s) -> list[AuditEvent]:
    return list(s.scalars(sa.select(AuditEvent).where(AuditEvent.action == "project.update").order_by(AuditEvent.id)))


def test_the_api_changes_a_stages_configuration_and_the_claims_follow(client, app, api, settings, storage, tmp_path):
    with transaction(app.state.sessions) as s:
        stage_id, _, _ = bias_stage(s, settings, storage, tmp_path, n=60, n_gold=0, overlap=1, gold_share=0.2)
        pid = s.get_one(Stage, stage_id).project_id
        annotator = factories.bearer(s, "settings-ann")
    url = f"/api/v1/projects/{pid}"
    change = {"draft_control_share": 0.5, "draft_control_seed": 7, "probe_share": 0.25, "probe_action": "review", "gold_share": None}
    r = client.patch(url, headers=api["admin"], json={"stages": [{"id": stage_id, "config": change}]})
    assert r.status_code == 200, r.text
    (shown,) = r.json()["stages"]
    assert shown["config"] == {"draft_control_share": 0.5, "draft_control_seed": 7, "probe_share": 0.25, "probe_action": "review"}
    with transaction(app.state.sessions) as s:
        (event,) = events(s)
        assert event.detail["before"] == {f"stage {stage_id} config.{k}": v for k, v in
                                          {"draft_control_share": None, "draft_control_seed": None, "gold_share": 0.2,
                                           "probe_action": None, "probe_share": None}.items()}
        assert event.detail["after"][f"stage {stage_id} config.draft_control_seed"] == 7
        assert event.detail["after"][f"stage {stage_id} config.gold_share"] is None
    # The same change again changes nothing and records nothing.
    assert client.patch(url, headers=api["admin"], json={"stages": [{"id": stage_id, "config": change}]}).status_code == 200
    with transaction(app.state.sessions) as s:
        assert len(events(s)) == 1
    # The next claims are drawn by the new settings: the control arm's screens show no draft.
    hidden = []
    for _ in range(20):
        body = client.post(f"/api/v1/stages/{stage_id}/claim", headers=annotator).json()
        assert (body["suggestions"] == []) == (arms.arm({"draft_control_share": 0.5, "draft_control_seed": 7}, body["assignment_id"]) == arms.CONTROL)
        hidden.append(body["suggestions"] == [])
        client.post(f"/api/v1/assignments/{body['assignment_id']}/release", headers=annotator)
    assert 0 < sum(hidden) < 20
    # An annotator reads the stage's settings without what draws arms, probes and gold items.
    mine = client.get(f"/api/v1/projects/{pid}/settings", headers=annotator).json()["stages"][0]["config"]
    assert mine == {} and "draft_control_seed" not in client.get(f"/api/v1/projects/{pid}/settings", headers=annotator).text


def test_a_refused_configuration_names_the_key_and_changes_nothing(client, app, api):
    with transaction(app.state.sessions) as s:
        pid, (stage_id,) = factories.project(s, "voldoger.verify", name="refusals", config={"probe_share": 0.5})
    url = f"/api/v1/projects/{pid}"
    for config, key, why in (({"probe_share": 2}, "probe_share", "less than or equal to 1"),
                             ({"draft_control_share": 0.95}, "draft_control_share", "less than or equal to 0.9"),
                             ({"probe_action": "fire"}, "probe_action", "'none', 'review' or 'pause'"),
                             ({"draft_control_seed": -1}, "draft_control_seed", "greater than or equal to 0"),
                             ({"probe_treshold": 0.2}, "probe_treshold", "is not a setting of voldoger.verify")):
        r = client.patch(url, headers=api["admin"], json={"name": "renamed", "stages": [{"id": stage_id, "config": {"gold_share": 0.1, **config}}]})
        assert r.status_code == 422, r.text
        assert r.json()["detail"].startswith(f"stages[0].config.{key}: '{key}'"), r.json()
        assert why in r.json()["detail"]
    assert client.patch(url, headers=api["ann"],
                        json={"stages": [{"id": stage_id, "config": {"probe_share": 0.1}}]}).status_code == 403
    with transaction(app.state.sessions) as s:
        assert s.get_one(Stage, stage_id).config == {"probe_share": 0.5} and s.get_one(Project, pid).name == "refusals"
        assert events(s) == []


def test_the_settings_page_replaces_the_configuration(client, app):
    with transaction(app.state.sessions) as s:
        pid, (stage_id,) = factories.project(s, "voldoger.verify", name="page", config={"probe_share": 0.5, "gold_share": 0.2})
        factories.user(s, "settings-admin", "admin")
    login(client, "settings-admin")
    page = client.get(f"/stages/{stage_id}/settings")
    assert page.status_code == 200 and '"probe_share": 0.5' in html.unescape(page.text)
    assert "draft_control_seed" in page.text  # the keys the workflow reads, described
    assert f'href="/stages/{stage_id}/settings"' in client.get(f"/projects/{pid}").text
    token = csrf_from(page.text)
    refused = client.post(f"/stages/{stage_id}/settings", data={"csrf_token": token, "config": '{"probe_share": 1.5}'})
    assert refused.status_code == 422 and "stages[0].config.probe_share" in refused.text and '{"probe_share": 1.5}' in html.unescape(refused.text)
    bad_json = client.post(f"/stages/{stage_id}/settings", data={"csrf_token": token, "config": '{"probe_share": }'})
    assert bad_json.status_code == 422 and "Not valid JSON" in bad_json.text
    assert client.post(f"/stages/{stage_id}/settings", data={"config": "{}"}).status_code == 403  # no CSRF token
    saved = client.post(f"/stages/{stage_id}/settings", data={"csrf_token": token, "config": '{"probe_share": 0.25, "draft_control_share": 0.3}'},
                        follow_redirects=False)
    assert saved.status_code == 303
    assert "Saved" in client.get(saved.headers["location"]).text
    with transaction(app.state.sessions) as s:
        assert s.get_one(Stage, stage_id).config == {"probe_share": 0.25, "draft_control_share": 0.3}  # gold_share left out: its default
        (event,) = events(s)
        assert event.actor_id is not None and event.detail["before"][f"stage {stage_id} config.gold_share"] == 0.2


@pytest.mark.parametrize("config", ['{"choices": ["a", "b", "c"], "x": ' + "[" * 20000 + "]" * 20000 + "}",
                                    '{"choices": ["a\\u0000", "b", "c"]}'])
def test_the_stage_settings_page_refuses_deep_or_nul_json_with_a_422(client, app, settings, storage, config):
    """JSON nested too deep or holding a NUL is refused as the API refuses it: a 422 naming why, the text
    kept in the form, the stage's configuration unchanged."""
    _, stage_id, _ = gold_stage(app, settings, storage)
    with transaction(app.state.sessions) as s:
        factories.user(s, "cfg-admin", role="admin")
        before = s.get(Stage, stage_id).config
    login(client, "cfg-admin")
    page = client.get(f"/stages/{stage_id}/settings")
    r = client.post(f"/stages/{stage_id}/settings", data={"csrf_token": csrf_from(page.text), "config": config}, follow_redirects=False)
    assert r.status_code == 422, r.status_code
    why, kept = ("nested deeper", "[" * 50) if "[[[" in config else ("NUL", "a\\u0000")
    assert why in r.text and kept in r.text  # the reason, and what was typed, still in the form
    with transaction(app.state.sessions) as s:
        assert s.get(Stage, stage_id).config == before
