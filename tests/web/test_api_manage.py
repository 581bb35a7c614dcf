"""The management API's refusals change nothing: a blank project or stage name (spaces around a
name are dropped), and a records delete naming an id the project lacks."""

from __future__ import annotations

import json

from app.db import transaction
from app.models import Item, Project, Stage
from tests import factories


def test_blank_names_are_refused_and_names_are_stripped(client, app, api):
    with transaction(app.state.sessions) as s:
        pid, (stage_id,) = factories.project(s, "wikido.verify", name="names")
    url = f"/api/v1/projects/{pid}"
    for body, field in (({"name": "   "}, "name"), ({"stages": [{"id": stage_id, "name": "  "}]}, "stages.0.name")):
        refused = client.patch(url, headers=api["admin"], json={**body, "description": "changed"})
        assert refused.status_code == 422, refused.text
        assert any(e.startswith(f"body.{field}:") for e in refused.json()["errors"]), refused.json()
    renamed = client.patch(url, headers=api["admin"], json={"name": "  names two ", "stages": [{"id": stage_id, "name": " Check "}]})
    assert renamed.status_code == 200, renamed.text
    with transaction(app.state.sessions) as s:
        project, stage = s.get_one(Project, pid), s.get_one(Stage, stage_id)
        assert (project.name, project.description or "", stage.name) == ("names two", "", "Check")


def test_a_records_delete_with_an_unknown_id_hides_nothing(client, app, api):
    with transaction(app.state.sessions) as s:
        pid, _ = factories.project(s, "wikido.verify", name="hide")
    body = "\n".join(json.dumps({"image_id": f"h{i}", "caption": "A dog.", "image": f"https://example.org/{i}.jpg"}) for i in range(2))
    assert client.post(f"/api/v1/projects/{pid}/records", headers=api["admin"], files={"file": ("r.jsonl", body.encode())}).status_code == 200
    url = f"/api/v1/projects/{pid}/records/delete"
    refused = client.post(url, headers=api["admin"], json={"ids": ["h0", "nope", "gone"], "reason": "dup"})
    assert refused.status_code == 422
    assert "'nope', 'gone'" in refused.json()["detail"] and "'h0'" not in refused.json()["detail"]
    with transaction(app.state.sessions) as s:
        assert {i.status for i in s.query(Item).filter(Item.project_id == pid)} == {"active"}
    assert client.post(url, headers=api["admin"], json={"ids": ["h0"]}).json() == {"hidden": 1, "already": 0}
