"""The export page's leaks section: leaked groups side by side, find leaks, keep groups together; and the API."""

from __future__ import annotations

from app.db import transaction
from app.services import leaks
from tests import factories
from tests.conftest import csrf_from, login
from tests.services.test_leaks import planted_project


def test_leaks_section_and_keep_together(client, app, settings, storage, tmp_path):
    sessions = app.state.sessions
    with transaction(sessions) as s:
        factories.user(s, "boss", "admin")
        admin_token = factories.token(s, factories.user(s, "boss2", "admin"))
        project_id, _ = planted_project(s, settings, storage, tmp_path, distinct=60)
    login(client, "boss")
    page = client.get(f"/projects/{project_id}/export").text
    assert "No leak report yet for split version 1" in page and 'id="find-leaks"' in page

    with transaction(sessions) as s:  # what the worker's job does
        leaks.store(s, project_id, leaks.compute(s, storage, project_id))
    page = client.get(f"/projects/{project_id}/export").text
    assert page.count("data-leak-group") == 30 and "test / train: 30" in page
    assert "/thumb" in page and 'id="keep-together"' in page

    r = client.post(f"/projects/{project_id}/leaks/keep-together", data={"csrf_token": csrf_from(page)}, follow_redirects=False)
    assert r.status_code == 303
    page = client.get(f"/projects/{project_id}/export").text
    assert "Saved split version 2" in page and "No leak report yet for split version 2" in page
    again = client.post(f"/projects/{project_id}/leaks/keep-together", data={"csrf_token": csrf_from(page)}, follow_redirects=False)
    assert again.status_code == 303 and "Find the leaks of the newest split version first" in client.get(f"/projects/{project_id}/export").text

    api = client.post(f"/api/v1/projects/{project_id}/leaks", headers={"Authorization": f"Bearer {admin_token}"})
    assert api.status_code == 200 and api.json()["version"] == 2 and api.json()["leaked_groups"] == 0
    page = client.get(f"/projects/{project_id}/export").text
    assert "0 leaked groups" in page and 'id="keep-together"' not in page
