"""Workspaces: the cross-workspace matrix, generated from the app's routes (an annotator, a reviewer and a
manager of workspace A get 404 for every route that names anything of workspace B, through pages and
the API, and B's names appear in none of their lists); a manager manages their workspace's projects and
members and nobody else's; the annotation hot path refuses a stage and an assignment outside one's
workspaces; workspaces and memberships are managed through pages, API and client, each change audited."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.db import transaction
from app.models import AuditEvent, Export, Prompt, SplitDefinition
from app.services.annotation import annotation
from app.services.users import users, workspace_admin
from tests import factories
from tests.conftest import PASSWORD, csrf_from, login
from tests.web.test_role_matrix import FILL, app_routes

ROLES = ("annotator", "reviewer", "manager")
B_NAME = "bravo-hidden-project"
A_NAME = "alpha-visible-project"


def _object_ids(s, project_id: int, stage_id: int) -> dict:
    """One of each object a route can name, in the project (an item, an assignment, an export, a prompt)."""
    item = factories.item_ids(s, project_id)[0]
    assignment = s.scalar(sa.text("SELECT id FROM assignments WHERE stage_id = :s ORDER BY id LIMIT 1"), {"s": stage_id})
    export = Export(project_id=project_id, format="jsonl", target="x", status="done", manifest={"files": []})
    prompt = Prompt(stage_id=stage_id, draft_kind="generic.test-choice", version=1, drafter="d", template="t")
    s.add_all([export, prompt, SplitDefinition(project_id=project_id, version=1, config={"ratios": {"train": 1}})])
    s.flush()
    return {"project_id": project_id, "stage_id": stage_id, "item_id": item, "assignment_id": assignment,
            "export_id": export.id, "prompt_id": prompt.id}


@pytest.fixture
def world(app, settings, storage, tmp_path):
    """Workspaces A and B, a project with items, an annotation and an open lease in each; in A an
    annotator, a reviewer and a manager (each with a browser and a token); in B an annotator."""
    with transaction(app.state.sessions) as s:
        a = workspace_admin.create_workspace(s, "Alpha").id
        b = workspace_admin.create_workspace(s, "Bravo").id
        out = {"a": a, "b": b, "tokens": {}}
        for ws, name, folder in ((a, A_NAME, "a"), (b, B_NAME, "b")):
            pid, stages = factories.project(s, name=name)
            workspace_admin.move_project(s, pid, ws)
            factories.choice_items(s, settings, storage, pid, 4, tmp_path / folder)
            worker = users.create_user(s, f"{folder}-worker", "annotator", PASSWORD, workspace_id=ws).id
            factories.annotation(s, stages[0], worker, {"choice": "a"})
            annotation.claim(s, stages[0], worker)  # an open lease beside the submitted one
            out[folder] = _object_ids(s, pid, stages[0])
            out[f"{folder}_worker"] = worker
        out["b"]["workspace_id"] = b
        out["b"]["member_id"] = s.scalar(sa.text("SELECT id FROM workspace_members WHERE workspace_id = :w LIMIT 1"), {"w": b})
        out["a"]["workspace_id"] = a
        for role in ROLES:
            global_role = "annotator" if role == "annotator" else "reviewer"
            uid = users.create_user(s, f"alpha-{role}", global_role, PASSWORD, workspace_id=a, member_role=role).id
            out["tokens"][role] = {"Authorization": f"Bearer {factories.token(s, uid)}"}
            out[f"{role}_id"] = uid
    browsers = {}
    for role in ROLES:
        browser = TestClient(app, raise_server_exceptions=False).__enter__()
        assert login(browser, f"alpha-{role}").status_code == 303
        browsers[role] = browser
    out["browsers"] = browsers
    yield out
    for browser in browsers.values():
        browser.__exit__(None, None, None)


def _fill(path: str, ids: dict) -> str | None:
    """The path with B's objects in it, or None when it names none of them."""
    names = re.findall(r"\{([^}]+)\}", path)
    if not any(n in ids for n in names):
        return None
    return re.sub(r"\{([^}]+)\}", lambda m: str(ids.get(m.group(1), FILL.get(m.group(1), "1"))), path)


# The hot path's routes check membership in their statements, after the body is read: a valid body reaches them.
BODIES = {"submit": {"payload": {"choice": "a"}, "idempotency_key": "matrix"}, "draft": {"payload": {"choice": "a"}}}


def _ask(world, role: str, method: str, path: str):
    browser = world["browsers"][role]
    if path.startswith("/api/v1/"):
        body = {"json": BODIES.get(path.rsplit("/", 1)[-1], {})} if method in ("POST", "PUT", "PATCH") else {}
        return browser.request(method, path, headers=world["tokens"][role], follow_redirects=False, **body)
    data = {"data": {"csrf_token": csrf_from(browser.get("/").text)}} if method == "POST" else {}
    return browser.request(method, path, follow_redirects=False, **data)


def test_every_route_naming_anything_of_another_workspace_answers_404(app, world):
    routes = [(m, p, _fill(p, world["b"])) for m, p in app_routes(app)]
    named = [(m, p, filled) for m, p, filled in routes if filled]
    assert len(named) > 80, "the matrix should cover every route that names a project, stage, item, assignment, export, prompt or workspace"
    failures = []
    for method, path, filled in named:
        for role in ROLES:
            r = _ask(world, role, method, filled)
            if r.status_code != 404 or B_NAME in r.text or "Bravo" in r.text:
                failures.append(f"{method} {path} as A's {role}: {r.status_code} {r.text[:120]!r}")
    assert not failures, "\n".join(failures)


def test_the_same_routes_are_open_in_ones_own_workspace(app, world):
    """The control: the same requests on A's objects are not refused as "not found" by the scope (a
    route may still answer 404 for what the body lacks; the scope's words are the check)."""
    scoped = re.compile(r"No (project|stage|item|export|workspace) with id|No prompt \d+|No such assignment for you")
    leaks = []
    for method, path in app_routes(app):
        filled = _fill(path, world["a"])
        if not filled or "assignment_id" in path:  # an assignment is its annotator's alone
            continue
        r = _ask(world, "manager", method, filled)
        if r.status_code == 404 and scoped.search(r.text):
            leaks.append(f"{method} {path}: {r.text[:120]!r}")
    assert not leaks, "\n".join(leaks)


def test_lists_and_dashboard_show_only_ones_own_workspace(world):
    for role in ROLES:
        page = world["browsers"][role].get("/")
        assert page.status_code == 200 and A_NAME in page.text and B_NAME not in page.text
        listed = world["browsers"][role].get("/api/v1/projects", headers=world["tokens"][role]).json()
        assert [p["name"] for p in listed] == [A_NAME]
    mine = world["browsers"]["manager"].get("/api/v1/workspaces", headers=world["tokens"]["manager"]).json()
    assert [w["name"] for w in mine] == ["Alpha"]


def test_claim_and_submit_outside_ones_workspaces_answer_404(app, world):
    """The hot path checks membership inside its own statements: a claim on B's stage, and a lease held
    by someone whose membership ended, both answer 404."""
    browser, token = world["browsers"]["annotator"], world["tokens"]["annotator"]
    r = browser.post(f"/api/v1/stages/{world['b']['stage_id']}/claim", headers=token)
    assert r.status_code == 404 and r.json()["detail"] == f"No stage with id {world['b']['stage_id']}."
    claimed = browser.post(f"/api/v1/stages/{world['a']['stage_id']}/claim", headers=token)
    assert claimed.status_code == 200
    assignment = claimed.json()["assignment_id"]
    with transaction(app.state.sessions) as s:
        s.execute(sa.text("DELETE FROM workspace_members WHERE user_id = :u"), {"u": world["annotator_id"]})
    for method, path, body in (("POST", f"/api/v1/assignments/{assignment}/submit", {"payload": {"choice": "a"}, "idempotency_key": "k1"}),
                               ("PUT", f"/api/v1/assignments/{assignment}/draft", {"payload": {"choice": "a"}}),
                               ("POST", f"/api/v1/assignments/{assignment}/skip", None),
                               ("POST", f"/api/v1/stages/{world['a']['stage_id']}/claim", None)):
        r = browser.request(method, path, headers=token, json=body)
        assert r.status_code == 404, (path, r.status_code, r.text)
    page = browser.get(f"/assignments/{assignment}")
    assert page.status_code == 404 and A_NAME not in page.text
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.text("SELECT count(*) FROM annotations WHERE assignment_id = :a"), {"a": assignment}) == 0


def test_a_manager_manages_their_workspaces_projects_and_no_others(world):
    browser, token = world["browsers"]["manager"], world["tokens"]["manager"]
    a, b = world["a"], world["b"]
    renamed = browser.patch(f"/api/v1/projects/{a['project_id']}", headers=token, json={"description": "managed by A"})
    assert renamed.status_code == 200
    assert browser.get(f"/api/v1/projects/{a['project_id']}/splits", headers=token).status_code == 200
    assert browser.get(f"/projects/{a['project_id']}/export").status_code == 200
    page = browser.get(f"/projects/{a['project_id']}")
    assert 'id="export-link"' in page.text  # the page offers what the manager may do
    home = browser.get("/").text  # their way to the workspace and its work log; an annotator has none
    managed = re.search(r'<p id="managed-workspaces">(.*?)</p>', home, re.S).group(1)
    assert f'href="/admin/workspaces/{a["workspace_id"]}">Alpha</a>' in managed and "Bravo" not in managed
    assert browser.get("/admin/workspaces").status_code == 200 and "Alpha" in browser.get("/worklog").text
    assert 'id="managed-workspaces"' not in world["browsers"]["annotator"].get("/").text
    assert browser.get(f"/stages/{a['stage_id']}/agreement").status_code == 200  # where pauses are lifted
    assert browser.patch(f"/api/v1/projects/{b['project_id']}", headers=token, json={"description": "x"}).status_code == 404
    # Members of their own workspace: yes; workspaces themselves, users and tokens: no (global admin's).
    added = browser.post(f"/api/v1/workspaces/{a['workspace_id']}/members", headers=token, json={"username": "b-worker", "role": "annotator"})
    assert added.status_code == 200 and added.json()["role"] == "annotator"
    assert browser.patch(f"/api/v1/workspaces/{a['workspace_id']}", headers=token, json={"name": "Mine"}).status_code == 403
    assert browser.post("/api/v1/workspaces", headers=token, json={"name": "New"}).status_code == 403
    assert browser.get("/api/v1/users", headers=token).status_code == 403
    assert browser.post(f"/api/v1/workspaces/{b['workspace_id']}/members", headers=token, json={"username": "alpha-manager", "role": "manager"}).status_code == 404
    # A project moves only to a workspace they manage.
    moved = browser.put(f"/api/v1/projects/{a['project_id']}/workspace", headers=token, json={"workspace_id": b["workspace_id"]})
    assert moved.status_code == 404


def test_an_annotator_and_a_reviewer_member_keep_their_ranks(world):
    """A reviewer member reviews and annotates in their workspace; an annotator member does not review;
    neither manages."""
    a = world["a"]
    for role, review in (("annotator", 403), ("reviewer", 200)):
        browser, token = world["browsers"][role], world["tokens"][role]
        assert browser.get(f"/api/v1/stages/{a['stage_id']}/review", headers=token).status_code == review
        assert browser.post(f"/api/v1/stages/{a['stage_id']}/claim", headers=token).status_code in (200, 204)
        assert browser.get(f"/api/v1/projects/{a['project_id']}/splits", headers=token).status_code == 403


def test_workspaces_are_managed_by_admin_pages_api_and_client_each_change_audited(app, client):
    with transaction(app.state.sessions) as s:
        headers = factories.bearer(s, "ws-admin", "admin")
        factories.user(s, "ws-admin-page", "admin")
        ann = factories.user(s, "ws-ann")
        pid, _ = factories.project(s, name="ws-project")
    made = client.post("/api/v1/workspaces", headers=headers, json={"name": "Lab <b>"}).json()
    assert made["name"] == "Lab <b>" and made["projects"] == 0
    assert client.post("/api/v1/workspaces", headers=headers, json={"name": "Lab <b>"}).status_code == 409
    assert client.post("/api/v1/workspaces", headers=headers, json={"name": "  "}).status_code == 422
    wid = made["id"]
    assert client.patch(f"/api/v1/workspaces/{wid}", headers=headers, json={"name": "Lab"}).json()["name"] == "Lab"
    bad = client.post(f"/api/v1/workspaces/{wid}/members", headers=headers, json={"user_id": ann, "role": "boss"})
    assert bad.status_code == 422
    wrong_project = client.post(f"/api/v1/workspaces/{wid}/members", headers=headers, json={"user_id": ann, "role": "reviewer", "project_id": pid})
    assert wrong_project.status_code == 404  # the project is in the default workspace, not this one
    assert client.put(f"/api/v1/projects/{pid}/workspace", headers=headers, json={"workspace_id": wid}).status_code == 204
    member = client.post(f"/api/v1/workspaces/{wid}/members", headers=headers, json={"user_id": ann, "role": "reviewer", "project_id": pid}).json()
    assert member["project_id"] == pid
    assert client.delete(f"/api/v1/workspaces/{wid}", headers=headers).status_code == 409  # it holds a project
    # Pages: the list escapes names, a member is removed by a form.
    assert login(client, "ws-admin-page").status_code == 303
    page = client.get("/admin/workspaces")
    assert "Lab" in page.text and "<b>" not in page.text.split("<h1>Workspaces</h1>")[1].split("</table>")[0]
    detail = client.get(f"/admin/workspaces/{wid}")
    assert "ws-ann" in detail.text and "only ws-project" in detail.text
    gone = client.post(f"/admin/workspaces/{wid}/members/{member['id']}/delete", data={"csrf_token": csrf_from(detail.text)},
                       follow_redirects=False)
    assert gone.status_code == 303
    again = client.post(f"/admin/workspaces/{wid}/members/{member['id']}/delete", data={"csrf_token": csrf_from(detail.text)})
    assert again.status_code == 404 and "No membership" in again.text
    with transaction(app.state.sessions) as s:
        events = s.execute(sa.select(AuditEvent.action, AuditEvent.detail).where(AuditEvent.target.in_([f"workspace:{wid}", f"project:{pid}"]))
                           .order_by(AuditEvent.id)).all()
    assert [a for a, _ in events if a != "project.create"] == [
        "workspace.create", "workspace.rename", "project.workspace", "workspace.member", "workspace.member"]
    assert [d["after"] for a, d in events if a == "workspace.member"] == [{"role": "reviewer"}, {"role": None}]


def test_a_new_user_joins_the_default_workspace_or_the_one_named(app, client):
    with transaction(app.state.sessions) as s:
        headers = factories.bearer(s, "nu-admin", "admin")
        wid = workspace_admin.create_workspace(s, "Elsewhere").id
        pid, _ = factories.project(s, name="default-project")
    plain = client.post("/api/v1/users", headers=headers, json={"username": "nu-plain", "role": "reviewer", "password": PASSWORD})
    placed = client.post("/api/v1/users", headers=headers, json={"username": "nu-placed", "role": "annotator", "password": PASSWORD,
                                                                   "workspace_id": wid, "member_role": "manager"})
    nowhere = client.post("/api/v1/users", headers=headers, json={"username": "nu-bad", "password": PASSWORD, "workspace_id": 999999})
    assert plain.status_code == placed.status_code == 201 and nowhere.status_code == 404
    with transaction(app.state.sessions) as s:
        rows = s.execute(sa.text("SELECT u.username, w.is_default, m.role FROM workspace_members m JOIN users u ON u.id = m.user_id"
                                 " JOIN workspaces w ON w.id = m.workspace_id WHERE u.username LIKE 'nu-%' ORDER BY 1")).all()
        assert s.scalar(sa.text("SELECT count(*) FROM users WHERE username = 'nu-bad'")) == 0
    assert [tuple(r) for r in rows] == [("nu-placed", False, "manager"), ("nu-plain", True, "reviewer")]


def test_a_changed_global_role_carries_the_default_membership_along(app, client):
    """On a one-team server a promotion works as before: the annotator made reviewer reviews; an admin
    made annotator joins the default workspace (else they would see nothing)."""
    with transaction(app.state.sessions) as s:
        boss = factories.user(s, "cr-admin", "admin")
        promoted = users.get_user(s, factories.user(s, "cr-ann"))
        demoted = users.get_user(s, factories.user(s, "cr-old-admin", "admin"))
        _, stages = factories.project(s, name="cr-project")
        headers = {"Authorization": f"Bearer {factories.token(s, promoted.id)}"}
        demoted_headers = {"Authorization": f"Bearer {factories.token(s, demoted.id)}"}
    assert client.get(f"/api/v1/stages/{stages[0]}/review", headers=headers).status_code == 403
    with transaction(app.state.sessions) as s:
        users.update_user(s, users.get_user(s, promoted.id), role="reviewer", actor_id=boss)
        users.update_user(s, users.get_user(s, demoted.id), role="annotator", actor_id=boss)
    assert client.get(f"/api/v1/stages/{stages[0]}/review", headers=headers).status_code == 200
    assert [p["name"] for p in client.get("/api/v1/projects", headers=demoted_headers).json()] == ["cr-project"]


def test_the_new_project_form_puts_the_project_in_the_chosen_workspace(app, client):
    with transaction(app.state.sessions) as s:
        factories.user(s, "np-admin", "admin")
    assert login(client, "np-admin").status_code == 303
    assert 'name="workspace_id"' not in client.get("/projects/new").text  # one workspace: nothing to choose
    with transaction(app.state.sessions) as s:
        wid = workspace_admin.create_workspace(s, "Chosen").id
    form = client.get("/projects/new").text
    assert 'name="workspace_id"' in form and f'value="{wid}"' in form
    base = {"csrf_token": csrf_from(form), "workflow": "generic.choice", "choices": "yes, no"}
    made = client.post("/projects", data={**base, "name": "in-chosen", "workspace_id": str(wid)}, follow_redirects=False)
    missing = client.post("/projects", data={**base, "name": "in-none", "workspace_id": "999999"}, follow_redirects=False)
    assert made.status_code == 303 and missing.status_code == 404 and "No workspace with id 999999" in missing.text
    with transaction(app.state.sessions) as s:
        placed = dict(s.execute(sa.text("SELECT name, workspace_id FROM projects")).all())
    assert placed == {"in-chosen": wid}
