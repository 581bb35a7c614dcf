"""Work logs: the rows are the annotations' sums per annotator, day and project; dates, annotator and
project filter them; days follow the configured time zone; the page, its CSV and Parquet downloads and
the API agree; only the workspace's managers and admins see it (404 for anyone else). And the active
time that API drafts and submits send is validated and capped."""

from __future__ import annotations

import io
import re
import uuid
from datetime import date

import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation, Draft, GoldItem, Project, Stage, Workspace, WorkspaceMember
from app.services.annotation import annotation
from app.services.projects import archive
from app.services.quality import gold as gold_accuracy
from app.services.users.workspaces import default_workspace_id
from tests import factories
from tests.conftest import PASSWORD, login, make_choice_project
from tests.web.test_gate_http import answer, gold_stage

# (annotator, project key, stored at (UTC), choice, active seconds, wall seconds); choice "a" is a gold item's truth.
SCRIPT = [
    ("ana", "p1", "2026-03-01 09:00", "a", 40.0, 60.0),
    ("ana", "p1", "2026-03-01 10:00", "b", 20.0, 25.0),
    ("ana", "p2", "2026-03-01 11:00", "c", 15.5, 30.0),
    ("ana", "p1", "2026-03-02 09:00", "a", 33.0, 45.0),
    ("bo", "p1", "2026-03-01 12:00", "a", 50.0, 80.0),
    ("bo", "p2", "2026-03-03 08:00", "b", 12.0, 14.0),
    ("bo", "p2", "2026-03-01 23:30", "c", 7.0, 9.0),  # 2 March in Auckland
    ("bo", "p1", "2026-03-05 09:00", "b", 64.0, 70.0),  # outside 1..3 March
    ("ana", "pb", "2026-03-01 09:30", "a", 99.0, 120.0),  # workspace B: never in A's log
]
GOLD = {("ana", "2026-03-01 09:00"), ("ana", "2026-03-01 10:00"), ("bo", "2026-03-01 12:00")}  # answers to gold items


@pytest.fixture
def logged(app):
    """The script's answers stored through the submit, then placed at their scripted times and seconds;
    workspace A (the default) holds p1 and p2, workspace B holds pb. Returns ids and tokens."""
    sessions = app.state.sessions
    p1, s1 = make_choice_project(sessions, app.state.settings, app.state.storage, 6, overlap=2, name="P1")
    p2, s2 = make_choice_project(sessions, app.state.settings, app.state.storage, 6, name="P2")
    pb, sb = make_choice_project(sessions, app.state.settings, app.state.storage, 3, name="PB")
    stages = {"p1": s1, "p2": s2, "pb": sb}
    with transaction(sessions) as s:
        a = default_workspace_id(s)
        b = s.scalar(sa.insert(Workspace).values(name="B").returning(Workspace.id))
        s.execute(sa.update(Project).where(Project.id == pb).values(workspace_id=b))
        roles = {"ana": "annotator", "bo": "annotator", "mia": "annotator", "rex": "reviewer", "kim": "annotator", "root": "admin"}
        ids = {name: factories.user(s, name, role) for name, role in roles.items()}
        heads = {name: {"Authorization": f"Bearer {factories.token(s, uid)}"} for name, uid in ids.items()}
        # New users are members of the default workspace (A) with their global role: mia manages it.
        s.execute(sa.update(WorkspaceMember).where(WorkspaceMember.workspace_id == a, WorkspaceMember.user_id == ids["mia"])
                  .values(role="manager"))
        s.add_all([WorkspaceMember(workspace_id=b, user_id=ids["kim"], role="manager"),
                   WorkspaceMember(workspace_id=b, user_id=ids["ana"], role="annotator")])
        gold = set()
        for who, key, at, choice, active, wall in SCRIPT:
            claimed = annotation.claim(s, stages[key], ids[who])
            done = annotation.submit(s, claimed.assignment_id, ids[who], {"choice": choice}, uuid.uuid4().hex)
            s.execute(sa.update(Annotation).where(Annotation.id == done.annotation_id)
                      .values(created_at=sa.text(f"TIMESTAMPTZ '{at}+00'"), active_seconds=active, wall_seconds=wall))
            if (who, at) == ("ana", "2026-03-02 09:00"):  # an item only she answered: still open for a revision
                revised = claimed.assignment_id
            if (who, at) in GOLD and (stages[key], claimed.item_id) not in gold:
                gold.add((stages[key], claimed.item_id))
                s.add(GoldItem(stage_id=stages[key], item_id=claimed.item_id, answer={"choice": "a"}, source="import"))
        # A revision: more time on the same day, no new item.
        again = annotation.submit(s, revised, ids["ana"], {"choice": "c"}, uuid.uuid4().hex)
        s.execute(sa.update(Annotation).where(Annotation.id == again.annotation_id)
                  .values(created_at=sa.text("TIMESTAMPTZ '2026-03-02 09:20+00'"), active_seconds=5.0, wall_seconds=6.0))
    return {"a": a, "b": b, "p1": p1, "p2": p2, "heads": heads}


def _expected(start: str, end: str) -> dict[tuple, tuple]:
    """(day, annotator, project name) → (items, answers, active hours, wall hours, gold answers, gold right), from the script."""
    rows: dict[tuple, list] = {}
    script = [*SCRIPT, ("ana", "p1", "2026-03-02 09:20", "c", 5.0, 6.0)]
    for who, key, at, choice, active, wall in script:
        day = at[:10]
        if key == "pb" or not start <= day <= end:
            continue
        row = rows.setdefault((day, who, key.upper()), [0, 0, 0.0, 0.0, 0, 0])
        revision = at.endswith("09:20")
        row[0] += 0 if revision else 1
        row[1] += 1
        row[2] += active
        row[3] += wall
        if (who, at) in GOLD:
            row[4] += 1
            row[5] += choice == "a"
    return {k: (*v[:2], round(v[2] / 3600, 4), round(v[3] / 3600, 4), *v[4:]) for k, v in rows.items()}


def _got(body: dict) -> dict[tuple, tuple]:
    return {(r["day"], r["annotator"], r["project"]): (r["items"], r["answers"], r["active_hours"], r["wall_hours"], r["gold_answers"],
                                                       r["gold_correct"])
            for r in body["rows"]}


def test_the_rows_are_the_annotations_sums_and_dates_filter_them(client, app, logged):
    body = client.get(f"/api/v1/workspaces/{logged['a']}/worklog", params={"start": "2026-03-01", "end": "2026-03-03"},
                      headers=logged["heads"]["root"]).json()
    assert body["timezone"] == "UTC" and body["start"] == "2026-03-01" and body["end"] == "2026-03-03"
    assert _got(body) == _expected("2026-03-01", "2026-03-03")
    assert not [r for r in body["rows"] if r["day"] == "2026-03-05"]  # out of range
    ana = next(r for r in body["rows"] if (r["day"], r["annotator"], r["project"]) == ("2026-03-01", "ana", "P1"))
    assert ana["gold_answers"] == 2 and ana["gold_correct"] == 1 and ana["gold_accuracy"] == 0.5
    # The SQL check: every answer of the workspace in those days, summed straight from the table.
    with transaction(app.state.sessions) as s:
        sums = s.execute(sa.text(
            """SELECT count(*), sum(n.active_seconds), sum(n.wall_seconds) FROM annotations n JOIN stages st ON st.id = n.stage_id
               JOIN projects p ON p.id = st.project_id WHERE p.workspace_id = :ws
               AND n.created_at >= '2026-03-01' AND n.created_at < '2026-03-04'"""), {"ws": logged["a"]}).one()
    assert sum(r["answers"] for r in body["rows"]) == sums[0]
    assert sum(r["active_hours"] for r in body["rows"]) == pytest.approx(sums[1] / 3600, abs=1e-3)
    assert sum(r["wall_hours"] for r in body["rows"]) == pytest.approx(sums[2] / 3600, abs=1e-3)
    # One annotator, one project, one day.
    only = client.get(f"/api/v1/workspaces/{logged['a']}/worklog", headers=logged["heads"]["root"],
                      params={"start": "2026-03-01", "end": "2026-03-01", "annotator": "bo", "project": logged["p1"]}).json()
    assert _got(only) == {("2026-03-01", "bo", "P1"): (1, 1, round(50 / 3600, 4), round(80 / 3600, 4), 1, 1)}


def test_a_revised_gold_answer_counts_once_as_the_stages_gold_accuracy_counts_it(client, app, logged):
    """Ana's answer of 2 March ("a", revised to "c" at 09:20) made a gold item with truth "a": one gold
    answer that day, the revision's, wrong: what the stage's gold accuracy counts."""
    with transaction(app.state.sessions) as s:
        first = s.scalar(sa.select(Annotation).where(Annotation.created_at == sa.text("TIMESTAMPTZ '2026-03-02 09:00+00'")))
        s.add(GoldItem(stage_id=first.stage_id, item_id=first.item_id, answer={"choice": "a"}, source="import"))
        s.flush()
        scored = [a for a in gold_accuracy.scored_answers(s, s.get(Stage, first.stage_id), first.annotator_id) if a.day == "2026-03-02"]
    body = client.get(f"/api/v1/workspaces/{logged['a']}/worklog", params={"start": "2026-03-02", "end": "2026-03-02", "annotator": "ana",
                      "project": logged["p1"]}, headers=logged["heads"]["root"]).json()
    (row,) = body["rows"]
    assert (row["answers"], row["gold_answers"], row["gold_correct"], row["gold_accuracy"]) == (2, 1, 0, 0.0)
    assert (row["gold_answers"], row["gold_correct"]) == (len(scored), sum(a.score >= 1.0 for a in scored))


def test_days_are_counted_in_the_configured_time_zone(client, app, logged):
    app.state.settings = app.state.settings.model_copy(update={"worklog_timezone": "Pacific/Auckland"})
    body = client.get(f"/api/v1/workspaces/{logged['a']}/worklog", params={"start": "2026-03-02", "end": "2026-03-02", "annotator": "bo"},
                      headers=logged["heads"]["root"]).json()
    # Auckland is UTC+13 in March: bo's answers at 12:00 and 23:30 UTC on 1 March fall on 2 March there; his 3 March one stays on the 3rd.
    assert body["timezone"] == "Pacific/Auckland"
    assert {(r["day"], r["project"]) for r in body["rows"]} == {("2026-03-02", "P2"), ("2026-03-02", "P1")}


def _page_rows(html: str) -> list[list[str]]:
    return [re.findall(r"<td>(.*?)</td>", row, re.S) for row in re.findall(r'<tr class="worklog-row"[^>]*>(.*?)</tr>', html, re.S)]


def test_the_page_its_csv_and_parquet_and_the_api_show_the_same_rows(client, logged):
    login(client, "mia", PASSWORD)  # the workspace's manager
    index = client.get("/worklog").text
    assert f'href="/workspaces/{logged["a"]}/worklog"' in index and f'/workspaces/{logged["b"]}/worklog' not in index
    query = "start=2026-03-01&end=2026-03-05"
    page = client.get(f"/workspaces/{logged['a']}/worklog?{query}")
    assert page.status_code == 200 and "UTC" in page.text
    shown = _page_rows(page.text)
    assert len(shown) == 7
    assert f'href="/workspaces/{logged["a"]}/worklog.csv?{query}' in page.text.replace("&amp;", "&")
    text = client.get(f"/workspaces/{logged['a']}/worklog.csv?{query}")
    assert text.headers["content-type"].startswith("text/csv")
    lines = [line.split(",") for line in text.text.strip().split("\n")]
    assert lines[0] == ["day", "annotator", "project_id", "project", "items", "answers", "active_hours", "wall_hours", "gold_answers",
                        "gold_correct", "gold_accuracy"]
    as_page = [[c[0], c[1], c[3], *c[4:]] for c in lines[1:]]  # the page names the project, without its id
    assert as_page == shown
    table = pq.read_table(io.BytesIO(client.get(f"/workspaces/{logged['a']}/worklog.parquet?{query}").content)).to_pylist()
    assert [[str(v) if v is not None else "" for k, v in r.items() if k != "project_id"] for r in table] == shown
    assert table[0]["day"] == date(2026, 3, 1)


@pytest.mark.parametrize("who", ["ana", "rex", "kim"])
def test_anyone_but_its_managers_and_admins_gets_404(client, logged, who):
    """An annotator, a reviewer member and another workspace's manager: 404 on the page, the files and the API."""
    login(client, who, PASSWORD)
    for path in ("worklog", "worklog.csv", "worklog.parquet"):
        assert client.get(f"/workspaces/{logged['a']}/{path}").status_code == 404
        assert client.get(f"/api/v1/workspaces/{logged['a']}/{path}", headers=logged["heads"][who]).status_code == 404
    assert client.get("/worklog").status_code == 200 and f"/workspaces/{logged['a']}/worklog" not in client.get("/worklog").text
    if who == "kim":  # their own workspace's log: its one answer, nothing of A's
        body = client.get(f"/api/v1/workspaces/{logged['b']}/worklog", params={"start": "2026-03-01", "end": "2026-03-01"},
                          headers=logged["heads"]["kim"]).json()
        assert [(r["project"], r["active_hours"]) for r in body["rows"]] == [("PB", round(99 / 3600, 4))]


def test_bad_filters_are_refused(client, logged):
    heads = logged["heads"]["root"]
    for params, field in [({"start": "2026-13-01"}, "start"), ({"start": "2026-03-05", "end": "2026-03-01"}, "end")]:
        answer = client.get(f"/api/v1/workspaces/{logged['a']}/worklog", params=params, headers=heads)
        assert answer.status_code == 422 and field in answer.text
    assert client.get(f"/api/v1/workspaces/{logged['a']}/worklog.xlsx", headers=heads).status_code == 422
    assert client.get("/api/v1/workspaces/999/worklog", headers=heads).status_code == 404


def test_api_drafts_and_submits_send_active_time_validated_and_capped(client, app, api):
    _, stage = make_choice_project(app.state.sessions, app.state.settings, app.state.storage, 1, lease=120)
    claimed = client.post(f"/api/v1/stages/{stage}/claim", headers=api["ann"]).json()
    url = f"/api/v1/assignments/{claimed['assignment_id']}"
    for bad in (-1, "soon", 1e308):
        assert client.put(f"{url}/draft", json={"payload": {"choice": "a"}, "active_seconds": bad}, headers=api["ann"]).status_code == 422
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Draft)) == 0  # a refused save stores nothing
    kept = []
    for seconds in (0.5, 0.2, 500):
        assert client.put(f"{url}/draft", json={"payload": {"choice": "b"}, "active_seconds": seconds}, headers=api["ann"]).status_code == 204
        with transaction(app.state.sessions) as s:
            kept.append(s.scalar(sa.select(Draft.active_seconds)))
    # Never lowered by a smaller (late) save; never beyond the lease or the time held since the claim.
    assert 0 < kept[0] <= 0.5 and kept[1] == kept[0] and kept[0] <= kept[2] <= 120
    kept = kept[2]
    sent = {"payload": {"choice": "b"}, "idempotency_key": "k1", "active_seconds": 0.1}
    assert client.post(f"{url}/submit", json=sent, headers=api["ann"]).status_code == 200
    with transaction(app.state.sessions) as s:
        row = s.scalars(sa.select(Annotation)).one()
    assert row.active_seconds == min(kept, row.wall_seconds) > 0  # the draft's time, not the submit's smaller one


def test_a_revision_counts_the_time_its_screen_was_open(app):
    _, stage = make_choice_project(app.state.sessions, app.state.settings, app.state.storage, 2, overlap=2)
    with transaction(app.state.sessions) as s:
        uid = factories.user(s, "rev")
        claimed = annotation.claim(s, stage, uid)
        annotation.submit(s, claimed.assignment_id, uid, {"choice": "a"}, "k1", seconds_spent=3.0, active_seconds=2.0)
        annotation.submit(s, claimed.assignment_id, uid, {"choice": "b"}, "k2", seconds_spent=8.0, active_seconds=20.0)
        first, again = s.execute(sa.select(Annotation.wall_seconds, Annotation.active_seconds).order_by(Annotation.revision)).all()
    assert first.wall_seconds > 0 and first.active_seconds == min(2.0, first.wall_seconds)  # claim to submit, as the server saw it
    assert (again.wall_seconds, again.active_seconds) == (8.0, 8.0)  # no lease of its own: its screen's time, which caps the active


def test_the_work_log_leaves_out_an_archived_project(client, app, api, settings, storage):
    """An archived project is left out of every list: of the work log's rows and of its project filter."""
    project_id, stage_id, _ = gold_stage(app, settings, storage)
    answer(client, api["ann"], stage_id, "a")
    with transaction(app.state.sessions) as s:
        name = s.scalar(sa.select(Project.name).where(Project.id == project_id))
        workspace = default_workspace_id(s)
        factories.user(s, "wl-admin", "admin")
    url = f"/api/v1/workspaces/{workspace}/worklog"
    assert [r["project_id"] for r in client.get(url, headers=api["admin"]).json()["rows"]] == [project_id]
    with transaction(app.state.sessions) as s:
        archive.archive_project(s, project_id, name)
    assert client.get(url, headers=api["admin"]).json()["rows"] == []
    login(client, "wl-admin")
    page = client.get(f"/workspaces/{workspace}/worklog")
    assert page.status_code == 200 and name not in page.text


def test_the_work_log_api_answers_bad_query_input_without_a_500(client, app, api):
    """A NUL or an over-long annotator is refused as bad input (422); far-off dates are just empty days."""
    with transaction(app.state.sessions) as s:
        workspace = default_workspace_id(s)
    url = f"/api/v1/workspaces/{workspace}/worklog"
    for params in ({"annotator": "a\x00b"}, {"annotator": "a" * 65}, {"start": "\x00"}):
        r = client.get(url, headers=api["admin"], params=params)
        assert r.status_code == 422, (params, r.status_code, r.text[:200])
    far = client.get(url, headers=api["admin"], params={"start": "0001-01-01", "end": "9999-12-31"})
    assert far.status_code == 200 and far.json()["rows"] == [], far.text[:200]
