"""Deleting a project archives it: every route that names it, its stages, items, assignments, exports or
prompts answers 404 (the list generated from the app's routes, as the role matrix is), claims stop,
lists leave it out, and every row it held stays; a restore brings it all back. Through the page, the
API (and the client: tests/client/test_client_manage.py)."""

from __future__ import annotations

import html
import re

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.db import transaction
from app.errors import NotFound
from app.models import Annotation, Assignment, AuditEvent, Export, Item, Project, Stage, User
from app.services.annotation import annotation
from app.services.exports import export
from app.services.projects import archive
from app.services.quality import qualification
from tests import factories
from tests.conftest import csrf_from, login
from tests.web.test_gate_http import answer, gold_stage
from tests.web.test_role_matrix import FILL, NOTHING, app_routes

IDS = ("project_id", "stage_id", "item_id", "assignment_id", "export_id", "prompt_id")
# Bodies that pass validation, so that the annotation routes reach their look-up (an empty one is a 422
# whatever the id, archived, unknown or live).
BODIES = {"/api/v1/assignments/{assignment_id}/submit": {"payload": {"choice": "b"}, "idempotency_key": "archive-walk"},
          "/api/v1/assignments/{assignment_id}/draft": {"payload": {"choice": "b"}}}


def _counts(s) -> dict[str, int]:
    return {model.__name__: s.scalar(sa.select(sa.func.count()).select_from(model)) for model in (Item, Assignment, Annotation, Export)}


@pytest.fixture
def world(app, tmp_path, monkeypatch):
    """A project with items, a submitted annotation, a live lease, an export and a prompt; the ids, and an
    admin and an annotator, each as a browser and a token."""
    kind = factories.choice_draft_kind()
    factories.install_draft_kind(monkeypatch, kind, "generic")
    with transaction(app.state.sessions) as s:
        pid, (stage,) = factories.project(s, "generic.choice", name="to-archive")
        factories.choice_items(s, app.state.settings, app.state.storage, pid, 4, tmp_path)
        admin_headers = factories.bearer(s, "arch-admin", "admin")
        ann_headers = factories.bearer(s, "arch-ann")
        annotator = s.scalar(sa.text("SELECT id FROM users WHERE username = 'arch-ann'"))
        factories.user(s, "arch-page-admin", "admin")
        factories.user(s, "arch-page-ann")
        factories.annotation(s, stage, annotator, {"choice": "a"})
        held = annotation.claim(s, stage, annotator)
        exported = export.create_export(s, pid, "jsonl", settings=app.state.settings).id
        prompt = factories.prompt(s, stage, kind.name).id
    # annotator_id: the gate routes (lift a pause, reset a quiz) name a stage and a real user.
    ids = {"project_id": pid, "stage_id": stage, "item_id": held.item_id, "assignment_id": held.assignment_id,
           "export_id": exported, "prompt_id": prompt, "annotator_id": annotator}
    browsers = {}
    for role in ("admin", "ann"):
        browsers[role] = TestClient(app, raise_server_exceptions=False).__enter__()
        assert login(browsers[role], f"arch-page-{role}").status_code == 303
    yield ids, {"admin": admin_headers, "ann": ann_headers}, browsers
    for b in browsers.values():
        b.__exit__(None, None, None)


def _ask_every_route(app, ids, tokens, browsers) -> dict[tuple[str, str], tuple[int, str]]:
    """Every route whose path names one of IDS, asked with `ids` (an id it lacks: one that names
    nothing): the annotator for an assignment's routes (it is theirs), the admin for the rest.
    (method, path) -> (status, body)."""
    answers = {}
    csrf = {role: csrf_from(b.get("/login").text) for role, b in browsers.items()}
    for method, path in app_routes(app):
        names = re.findall(r"\{([^}:]+)", path)
        if not set(names) & set(IDS) or path.endswith("/restore"):
            continue
        role = "ann" if "assignment_id" in names else "admin"
        url = re.sub(r"\{([^}]+)\}", lambda m: str(ids.get(m.group(1), FILL.get(m.group(1), NOTHING))), path)
        kwargs = {}
        if path.startswith("/api/v1/"):
            kwargs["headers"] = tokens[role]
            if method in ("POST", "PUT", "PATCH"):
                kwargs["json"] = BODIES.get(path, {})
            if method == "DELETE":
                kwargs["params"] = {"confirm": "not its name"}
        elif method == "POST":
            kwargs["data"] = {"csrf_token": csrf[role]}
        r = browsers[role].request(method, url, follow_redirects=False, **kwargs)
        answers[(method, path)] = (r.status_code, r.text)
    return answers


def test_every_route_naming_an_archived_project_answers_404_and_a_restore_brings_them_back(app, client, world):
    ids, tokens, browsers = world
    before = _ask_every_route(app, ids, tokens, browsers)
    assert len(before) > 60, sorted(before)  # the generated list covers the app's id routes
    found = [route for route, (status, _) in before.items() if status < 400 or status in (303, 307)]
    assert len(found) > 25, before  # the ids name real rows: most routes answer them
    gates = {route: status for route, (status, _) in before.items() if "{annotator_id}" in route[1]}
    assert len(gates) == 4 and 404 not in gates.values(), gates  # the annotator's id names a real user
    with transaction(app.state.sessions) as s:
        counts = _counts(s)

    gone = client.delete(f"/api/v1/projects/{ids['project_id']}", params={"confirm": "to-archive"}, headers=tokens["admin"])
    assert gone.status_code == 204, gone.text
    after = _ask_every_route(app, ids, tokens, browsers)
    wrong = {f"{m} {p}: {status}" for (m, p), (status, _) in after.items() if status != 404}
    assert not wrong, sorted(wrong)
    unknown = _ask_every_route(app, {}, tokens, browsers)  # ids that name nothing: 404 where the body passes
    assert {route for route, (status, _) in unknown.items() if status == 404} <= set(after)
    assert all("archived" not in body for _, body in after.values())  # said as for an unknown id
    claim = client.post(f"/api/v1/stages/{ids['stage_id']}/claim", headers=tokens["ann"])
    assert claim.status_code == 404 and claim.json()["detail"] == f"No stage with id {ids['stage_id']}."
    with transaction(app.state.sessions) as s:
        assert _counts(s) == counts  # nothing erased: items, leases, annotations, exports all stay
        assert s.get(Project, ids["project_id"]).archived_at is not None

    restored = client.post(f"/api/v1/projects/{ids['project_id']}/restore", headers=tokens["admin"])
    assert restored.status_code == 200 and restored.json()["name"] == "to-archive" and restored.json()["archived_at"] is None
    again = _ask_every_route(app, ids, tokens, browsers)
    # The walks' posts moved things on (a submit, a lease), so a page may now redirect: but nothing that
    # was found before is missing now.
    missing = [route for route, (status, _) in before.items() if status != 404 and again[route][0] == 404]
    assert not missing, missing


def test_lists_claims_and_names_while_archived(app, client, world):
    ids, tokens, browsers = world
    pid, stage = ids["project_id"], ids["stage_id"]
    admin, ann = browsers["admin"], browsers["ann"]
    assert client.post(f"/api/v1/projects/{pid}/restore", headers=tokens["admin"]).status_code == 409  # not archived

    # The page asks for the name again: a wrong one changes nothing and says so.
    page = admin.get(f"/projects/{pid}")
    assert 'action="/projects/%d/delete"' % pid in page.text
    wrong = admin.post(f"/projects/{pid}/delete", data={"csrf_token": csrf_from(page.text), "confirm": "to-archiv"}, follow_redirects=True)
    assert "confirm with its name, 'to-archive'" in html.unescape(wrong.text) and 'id="delete-error"' in wrong.text
    with transaction(app.state.sessions) as s:
        assert s.get(Project, pid).archived_at is None
    assert ann.post(f"/projects/{pid}/delete", data={"csrf_token": csrf_from(page.text), "confirm": "to-archive"}).status_code == 403
    done = admin.post(f"/projects/{pid}/delete", data={"csrf_token": csrf_from(page.text), "confirm": "to-archive"}, follow_redirects=True)
    assert done.status_code == 200 and "was deleted" in done.text and f'href="/projects/{pid}"' not in done.text

    assert [p["id"] for p in client.get("/api/v1/projects", headers=tokens["admin"]).json()] == []
    assert [p["id"] for p in client.get("/api/v1/projects", params={"archived": "true"}, headers=tokens["admin"]).json()] == [pid]
    assert client.get("/api/v1/projects", params={"archived": "true"}, headers=tokens["ann"]).status_code == 403
    assert ann.get("/?archived=1").status_code == 403
    listing = admin.get("/?archived=1")
    assert f'data-archived-project="{pid}"' in listing.text and "to-archive" in listing.text
    assert "to-archive" not in ann.get("/").text
    assert ann.post(f"/stages/{stage}/annotate", data={"csrf_token": csrf_from(ann.get("/").text)}).status_code == 404

    # Names stay unique: the archived project keeps its own, and says why.
    taken = client.post("/api/v1/projects", headers=tokens["admin"], json={"name": "to-archive", "stages": [{"workflow": "generic.choice", "config": {"choices": ["a", "b"]}}]})
    assert taken.status_code == 409 and "archived" in taken.json()["detail"]

    restore = admin.post(f"/projects/{pid}/restore", data={"csrf_token": csrf_from(listing.text)}, follow_redirects=False)
    assert restore.status_code == 303 and restore.headers["location"] == f"/projects/{pid}"
    assert client.post(f"/api/v1/stages/{stage}/claim", headers=tokens["ann"]).status_code == 200  # their lease, back
    assert "to-archive" in ann.get("/").text
    with transaction(app.state.sessions) as s:
        actions = s.scalars(sa.select(AuditEvent.action).where(AuditEvent.target == f"project:{pid}").order_by(AuditEvent.id)).all()
    assert actions[-2:] == ["project.archive", "project.restore"]


def test_the_gate_page_routes_answer_404_for_an_archived_project(client, app, api, settings, storage):
    """An archived project's stage ids are answered 404 by every route, for every role: the page's reset
    and lift as the API's, and the archived stage's quiz standing stays as it was."""
    project_id, stage_id, _ = gold_stage(app, settings, storage)
    with transaction(app.state.sessions) as s:
        stage = s.get(Stage, stage_id)
        stage.config = {**stage.config, "quiz_items": 1, "quiz_pass": 1, "quiz_tries": 1}
    answer(client, api["ann"], stage_id, "b")  # fails the quiz: a gate row with one failed try
    with transaction(app.state.sessions) as s:
        ann_id = s.scalar(sa.text("SELECT id FROM users WHERE username = 'ann'"))
        factories.user(s, "arch-lead", "admin")
        archive.archive_project(s, project_id, s.scalar(sa.text("SELECT name FROM projects WHERE id = :p"), {"p": project_id}))
    login(client, "arch-lead")
    csrf = csrf_from(client.get("/").text)
    for action in ("reset-quiz", "lift-pause"):
        assert client.post(f"/api/v1/stages/{stage_id}/annotators/{ann_id}/{action}", headers=api["admin"]).status_code == 404
        page = client.post(f"/stages/{stage_id}/annotators/{ann_id}/{action}", data={"csrf_token": csrf}, follow_redirects=False)
        assert page.status_code == 404, (action, page.status_code)
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.text("SELECT tries_failed FROM annotator_gates WHERE stage_id = :s"), {"s": stage_id}) == 1
        # The service refuses it too, whichever route asks.
        with pytest.raises(NotFound):
            qualification.reset_quiz(s, stage_id, ann_id, s.get(User, s.scalar(sa.text("SELECT id FROM users WHERE username = 'arch-lead'"))))
