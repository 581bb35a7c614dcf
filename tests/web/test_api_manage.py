"""The management API's refusals change nothing: a blank project or stage name (spaces around a
name are dropped)."""

from __future__ import annotations

from app.db import transaction
from app.models import Project, Stage
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

