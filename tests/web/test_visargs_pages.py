"""VisArgs through the app: the published annotation.json in, three stages by API and forms, the same record out."""

from __future__ import annotations

import json
import re
import uuid

import numpy as np
import pytest
import sqlalchemy as sa

from app.datasets import dataset_of, get_workflow
from app.datasets.workflow import ItemContext
from app.db import transaction
from app.models import Item
from app.services.annotation.pipeline import results_by_stage
from tests.conftest import csrf_from, login, make_token, make_user, png_bytes, start_annotating, zip_bytes

PUBLISHED = {
    "ad_7": {
        "url": "images/ad_7.png",
        "visual_premises": ["A melting ice cream cone", "The sun in the corner"],
        "commonsense_premises": ["Heat melts ice cream"],
        "conclusion": "Buy our freezer.",
        "reasoning_steps": ["(VP1, VP2, CP1 -> IC1): The heat melts the ice cream", "(IC1 -> C): Buy our freezer."],
        "b_box": [{"startX": 10, "startY": 12, "w": 100, "h": 80}, {"startX": 30, "startY": 0, "w": 20, "h": 20}],
    },
    "ad_8": {
        "url": "images/ad_8.png",
        "visual_premises": ["A wilted plant"],
        "commonsense_premises": [],
        "conclusion": "Water your plants.",
        "reasoning_steps": ["(VP1 -> C): Water your plants."],
        "b_box": [{"startX": 1, "startY": 2, "w": 3, "h": 4}],
    },
}


def test_published_records_through_three_stages_come_out_the_same(client, app):
    admin = make_token(app.state.sessions, make_user(app.state.sessions, "boss", "admin"))
    ann = {"Authorization": f"Bearer {make_token(app.state.sessions, make_user(app.state.sessions, 'ann'))}"}
    headers = {"Authorization": f"Bearer {admin}"}
    stages = [{"workflow": w} for w in ("visargs.premises", "visargs.structure", "visargs.grounding")]
    project = client.post("/api/v1/projects", headers=headers, json={"name": "VisArgs", "stages": stages}).json()
    files = {f"images/ad_{i}.png": png_bytes((i * 20, 90, 90), size=(160, 120)) for i in (7, 8)}
    r = client.post(
        f"/api/v1/projects/{project['id']}/items",
        headers=headers,
        files={"file": ("annotation.json", json.dumps(PUBLISHED).encode()), "images": ("i.zip", zip_bytes(files))},
    )
    assert r.status_code == 201 and r.json()["created"] == 2

    for stage, fields in zip(project["stages"], (("visual_premises",), ("commonsense_premises", "conclusion", "reasoning_steps"), ("b_box",)), strict=True):
        for _ in PUBLISHED:
            claim = client.post(f"/api/v1/stages/{stage['id']}/claim", headers=ann).json()
            original = PUBLISHED[claim["data"]["id"]]
            payload = {f: original[f] for f in fields}
            r = client.post(f"/api/v1/assignments/{claim['assignment_id']}/submit", headers=ann, json={"payload": payload, "idempotency_key": uuid.uuid4().hex})
            assert r.status_code == 200, r.text

    with transaction(app.state.sessions) as s:
        for item in s.scalars(sa.select(Item)):
            assert item.status == "done"
            record = dataset_of("visargs.grounding").export_record(item.data, results_by_stage(s, item.id))
            assert record == PUBLISHED[item.external_id]


def test_premises_screen_works_as_a_plain_form(client, app):
    admin = make_token(app.state.sessions, make_user(app.state.sessions, "boss", "admin"))
    make_user(app.state.sessions, "ann")
    headers = {"Authorization": f"Bearer {admin}"}
    stages = [{"workflow": w} for w in ("visargs.premises", "visargs.structure", "visargs.grounding")]
    project = client.post("/api/v1/projects", headers=headers, json={"name": "V", "stages": stages}).json()
    record = {"id": "p1", "image": "p.png", "candidate_premises": ["A <b>tap</b>", "A child"], "candidate_conclusion": "Fix taps."}
    client.post(f"/api/v1/projects/{project['id']}/items", headers=headers,
                files={"file": ("a.jsonl", json.dumps(record).encode()), "images": ("i.zip", zip_bytes({"p.png": png_bytes()}))})
    login(client, "ann")
    html = start_annotating(client, project['stages'][0]['id']).text
    assert 'value="A &lt;b&gt;tap&lt;/b&gt;"' in html and html.count('class="premise-row"') == 4  # two candidates, two spares
    assert html.count("checked tabindex=\"-1\" data-keep") == 2 and html.count(" autofocus") == 1  # drafts kept, spares not
    action = re.search(r'action="(/assignments/\d+/submit)"', html).group(1)
    form = {"csrf_token": csrf_from(html), "idempotency_key": uuid.uuid4().hex,
            "text_0": "A tap", "keep_0": "on", "pos_0": "0", "text_1": "A child", "pos_1": "1",
            "text_2": "Water drops", "keep_2": "on", "pos_2": "2", "text_3": "", "keep_3": "on", "pos_3": "3"}
    assert "Nothing left for you here" in client.post(action, data=form, follow_redirects=False).text
    structure = start_annotating(client, project['stages'][1]['id']).text
    assert "VP2</span> <span class=\"vp-text\" dir=\"auto\">Water drops" in structure and 'value="VP2"' in structure
    assert "Not valid yet" in structure and "There are no reasoning steps" in structure


def test_grounding_shows_suggested_boxes_and_drafted_ones(client, app):
    from app.services.annotation import suggestions

    admin = make_token(app.state.sessions, make_user(app.state.sessions, "boss", "admin"))
    ann = {"Authorization": f"Bearer {make_token(app.state.sessions, make_user(app.state.sessions, 'ann'))}"}
    headers = {"Authorization": f"Bearer {admin}"}
    stages = [{"workflow": w} for w in ("visargs.premises", "visargs.grounding")]
    project = client.post("/api/v1/projects", headers=headers, json={"name": "G", "stages": stages}).json()
    record = dict(PUBLISHED["ad_8"], url="images/ad_8.png")
    client.post(f"/api/v1/projects/{project['id']}/items", headers=headers,
                files={"file": ("a.json", json.dumps([record]).encode()), "images": ("i.zip", zip_bytes({"images/ad_8.png": png_bytes()}))})
    claim = client.post(f"/api/v1/stages/{project['stages'][0]['id']}/claim", headers=ann).json()
    client.post(f"/api/v1/assignments/{claim['assignment_id']}/submit", headers=ann,
                json={"payload": {"visual_premises": ["A wilted plant"]}, "idempotency_key": "k1"})
    grounding = project["stages"][1]["id"]
    with transaction(app.state.sessions) as s:
        suggestions.store(s, claim["item_id"], grounding, "visargs.boxes", "rapidocr", {"boxes": [{"vp": 0, "startX": 5, "startY": 6, "w": 7, "h": 8}]})
    login(client, "ann")
    html = start_annotating(client, grounding).text
    assert "dashed boxes come from <code>rapidocr</code>" in html
    assert "&#34;startX&#34;: 5" in html and "&#34;h&#34;: 8" in html
    # The published box of the unchanged premise starts in place, and the premise says it has one.
    assert re.search(r'name="x_0" value="1"', html) and re.search(r'name="h_0" value="4"', html)
    assert 'class="has-box current"' in html and html.count("no box yet") == 1


def test_a_reviewer_settles_a_structure_in_the_structure_editor(client, app):
    """Two annotators disagree on the conclusion; the reviewer edits one of them with the same screen annotators use."""
    admin = {"Authorization": f"Bearer {make_token(app.state.sessions, make_user(app.state.sessions, 'boss', 'admin'))}"}
    anns = [{"Authorization": f"Bearer {make_token(app.state.sessions, make_user(app.state.sessions, n))}"} for n in ("a1", "a2")]
    stages = [{"workflow": "visargs.premises"}, {"workflow": "visargs.structure", "overlap": 2}]
    project = client.post("/api/v1/projects", headers=admin, json={"name": "VisArgs review", "stages": stages}).json()
    one = {"ad_7": PUBLISHED["ad_7"]}
    files = {"images/ad_7.png": png_bytes((40, 90, 90), size=(160, 120))}
    client.post(f"/api/v1/projects/{project['id']}/items", headers=admin,
                files={"file": ("annotation.json", json.dumps(one).encode()), "images": ("i.zip", zip_bytes(files))})
    premises, structure = (s["id"] for s in project["stages"])
    claim = client.post(f"/api/v1/stages/{premises}/claim", headers=anns[0]).json()
    client.post(f"/api/v1/assignments/{claim['assignment_id']}/submit", headers=anns[0],
                json={"payload": {"visual_premises": one["ad_7"]["visual_premises"]}, "idempotency_key": "p"})
    for headers, conclusion in zip(anns, ("Buy our freezer.", "Keep ice cream cold."), strict=True):
        claim = client.post(f"/api/v1/stages/{structure}/claim", headers=headers).json()
        payload = {"commonsense_premises": ["Heat melts ice cream"], "conclusion": conclusion,
                   "reasoning_steps": ["(VP1, VP2, CP1 -> IC1): The heat melts the ice cream", f"(IC1 -> C): {conclusion}"]}
        r = client.post(f"/api/v1/assignments/{claim['assignment_id']}/submit", headers=headers, json={"payload": payload, "idempotency_key": conclusion})
        assert r.status_code == 200, r.text
    with transaction(app.state.sessions) as s:
        item = s.scalar(sa.select(Item))
        assert item.status == "review"

    make_user(app.state.sessions, "rita", "reviewer")
    login(client, "rita")
    screen = client.get(f"/stages/{structure}/review/{item.id}").text
    start = re.search(r'data-annotator="a2".*?edit\?start=(\d+)', screen, re.S).group(1)
    editor = client.get(f"/stages/{structure}/review/{item.id}/edit?start={start}").text
    check_url = f"/stages/{structure}/review/{item.id}/check"
    assert f'hx-post="{check_url}"' in editor and 'value="Keep ice cream cold."' in editor
    assert 'value="The heat melts the ice cream"' in editor and 'value="Heat melts ice cream"' in editor
    token = csrf_from(editor)
    values = get_workflow("visargs.structure").payload_values(ItemContext(item.data), {"commonsense_premises": ["Heat melts ice cream"], "conclusion": "Keep ice cream frozen.",
         "reasoning_steps": ["(VP1, VP2, CP1 -> IC1): The heat melts the ice cream", "(IC1 -> C): Keep ice cream frozen."]})
    form = {**values, "csrf_token": token}
    live = client.post(check_url, data=form, headers={"X-CSRF-Token": token})
    assert live.status_code == 200 and "Keep ice cream frozen." in live.text
    broken = {k: v for k, v in form.items() if k != "step_out_1"}  # no step concludes C
    bad = client.post(f"/stages/{structure}/review/{item.id}/edit", data=broken)
    assert bad.status_code == 422 and 'value="Keep ice cream frozen."' in bad.text
    ok = client.post(f"/stages/{structure}/review/{item.id}/edit", data=form, follow_redirects=False)
    assert ok.status_code == 303, ok.text
    with transaction(app.state.sessions) as s:
        final = results_by_stage(s, item.id)["visargs.structure"]
        assert s.get(Item, item.id).stage_id is None or s.get(Item, item.id).status == "done"
    assert final["conclusion"] == "Keep ice cream frozen." and final["reasoning_steps"][1] == "(IC1 -> C): Keep ice cream frozen."


def test_conclusion_equivalence_rate_from_reviewers_judgements(client, app):
    """Three annotators write conclusions; differently worded pairs go to reviewers, and the report gives the rate."""
    sessions = app.state.sessions
    admin = {"Authorization": f"Bearer {make_token(sessions, make_user(sessions, 'boss', 'admin'))}"}
    anns = [{"Authorization": f"Bearer {make_token(sessions, make_user(sessions, n))}"} for n in ("a1", "a2", "a3")]
    stages = [{"workflow": "visargs.premises"}, {"workflow": "visargs.structure", "overlap": 3}]
    project = client.post("/api/v1/projects", headers=admin, json={"name": "Conclusions", "stages": stages}).json()
    records = {f"ad_{i}": {**PUBLISHED["ad_8"], "url": f"images/ad_{i}.png"} for i in range(4)}
    files = {f"images/ad_{i}.png": png_bytes((i * 40, 90, 90), size=(64, 48)) for i in range(4)}
    client.post(f"/api/v1/projects/{project['id']}/items", headers=admin,
                files={"file": ("annotation.json", json.dumps(records).encode()), "images": ("i.zip", zip_bytes(files))})
    premises, structure = (s["id"] for s in project["stages"])
    while (claim := client.post(f"/api/v1/stages/{premises}/claim", headers=anns[0])).status_code == 200:
        client.post(f"/api/v1/assignments/{claim.json()['assignment_id']}/submit", headers=anns[0],
                    json={"payload": {"visual_premises": ["A wilted plant"]}, "idempotency_key": uuid.uuid4().hex})
    conclusions = {  # item -> each annotator's conclusion (None: discards the image)
        "ad_0": ["Water your plants.", "water your  plants.", "Water your plants."],
        "ad_1": ["Water your plants.", "Water your plants.", "Plants need water."],
        "ad_2": ["Water your plants.", "Plants need water.", "Buy a new plant."],
        "ad_3": ["Water your plants.", None, "Give plants water."],
    }
    for k, headers in enumerate(anns):
        while (claim := client.post(f"/api/v1/stages/{structure}/claim", headers=headers)).status_code == 200:
            c = claim.json()
            text = conclusions[c["data"]["id"]][k]
            payload = {"discard": True} if text is None else {"conclusion": text, "reasoning_steps": [f"(VP1 -> C): {text}"]}
            r = client.post(f"/api/v1/assignments/{c['assignment_id']}/submit", headers=headers, json={"payload": payload, "idempotency_key": uuid.uuid4().hex})
            assert r.status_code == 200, r.text

    reviewer = make_user(sessions, "rita", "reviewer")
    login(client, "rita")
    page = client.get(f"/stages/{structure}/agreement").text
    made = client.post(f"/stages/{structure}/equivalence", data={"csrf_token": csrf_from(page)})
    assert made.status_code == 200 and "6 new pairs to judge (10 pairs in all, 4 worded the same)" in made.text
    again = client.post(f"/stages/{structure}/equivalence", data={"csrf_token": csrf_from(page)})
    assert "0 new pairs to judge" in again.text
    judge_stage = int(re.search(r'action="/stages/(\d+)/annotate"[^<]*<input[^>]*><button[^>]*>judge now', again.text).group(1))

    def equivalent(a: str, b: str) -> bool:  # the reviewer's reading: only "Buy a new plant." says something else
        return "Buy a new plant." not in (a, b)

    rita = {"Authorization": f"Bearer {make_token(sessions, reviewer)}"}
    judged = 0
    while (claim := client.post(f"/api/v1/stages/{judge_stage}/claim", headers=rita)).status_code == 200:
        c = claim.json()
        assert c["data"]["source"]["stage"] == structure and c["data"]["image"].startswith("images/ad_")
        answer = {"equivalent": equivalent(c["data"]["conclusion_a"], c["data"]["conclusion_b"])}
        client.post(f"/api/v1/assignments/{c['assignment_id']}/submit", headers=rita, json={"payload": answer, "idempotency_key": uuid.uuid4().hex})
        judged += 1
    assert judged == 6

    report = client.get(f"/api/v1/stages/{structure}/agreement?samples=100", headers=rita).json()
    figures = report["facets"]["conclusion equivalence"]
    # Per item: ad_0 3/3 same wording; ad_1 1 same + 2 judged yes; ad_2 1 yes, 2 no; ad_3 one pair, yes.
    expected = np.mean([1.0, 1.0, 1 / 3, 1.0])
    assert figures["pairs"] == 10 and figures["same wording"] == 4 and figures["judged"] == 6 and figures["pending"] == 0
    assert figures["metrics"]["equivalence rate"]["estimate"] == pytest.approx(expected)
    low, high = figures["metrics"]["equivalence rate"]["low"], figures["metrics"]["equivalence rate"]["high"]
    assert low <= expected <= high
    assert figures["pairwise"]["a1 / a3"] == {"items": 4, "equivalence rate": pytest.approx(3 / 4)}


def test_equivalence_with_nothing_to_judge_says_so(client, app):
    from app.models import Project
    from app.services.projects import projects

    sessions = app.state.sessions
    with transaction(sessions) as s:
        made = projects.create_project(s, "Args", projects.stage_specs_for("visargs.premises"))
        structure = projects.stages_of(s, made.id)[1].id
    make_user(sessions, "rita", "reviewer")
    login(client, "rita")
    page = client.get(f"/stages/{structure}/agreement").text
    r = client.post(f"/stages/{structure}/equivalence", data={"csrf_token": csrf_from(page)})
    assert r.status_code == 422 and 'role="alert">Nothing to judge yet' in r.text
    with transaction(sessions) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Project)) == 1


def test_structure_refused_twice_keeps_its_rows_and_chips(client, app, tmp_path):
    """A refused structure form (a second step concluding C, as the demo's draft plus A on the next
    step gave) comes back with the rows it had: IC1–IC3 stay IC1–IC3, CP rows do not grow; the
    drafted step concluding C has the focus."""
    from app.datasets.visargs.demo import visargs_records

    admin = make_token(app.state.sessions, make_user(app.state.sessions, "boss", "admin"))
    ann = {"Authorization": f"Bearer {make_token(app.state.sessions, make_user(app.state.sessions, 'ann'))}"}
    headers = {"Authorization": f"Bearer {admin}"}
    stages = [{"workflow": w} for w in ("visargs.premises", "visargs.structure")]
    project = client.post("/api/v1/projects", headers=headers, json={"name": "V", "stages": stages}).json()
    record = visargs_records(tmp_path, copies=1)[0]
    client.post(f"/api/v1/projects/{project['id']}/items", headers=headers,
                files={"file": ("a.jsonl", json.dumps(record).encode()),
                       "images": ("i.zip", zip_bytes({record["image"]: (tmp_path / record["image"]).read_bytes()}))})
    claim = client.post(f"/api/v1/stages/{project['stages'][0]['id']}/claim", headers=ann).json()
    client.post(f"/api/v1/assignments/{claim['assignment_id']}/submit", headers=ann,
                json={"payload": {"visual_premises": record["candidate_premises"]}, "idempotency_key": uuid.uuid4().hex})
    login(client, "ann")
    html = start_annotating(client, project["stages"][1]["id"]).text

    def shape(page: str) -> tuple[int, int, int]:
        return page.count("data-step-row="), page.count('value="IC'), page.count("data-cp-row")

    assert shape(html) == (3, 3 * 3 + 3 * 3, 3)  # each of 3 rows: IC1–IC3 chips and options; CP1 and two spares
    assert re.search(r'data-step-row="0" data-start', html)
    conclusion = record["candidate_conclusion"]
    for _ in range(2):
        form = {"csrf_token": csrf_from(html), "idempotency_key": uuid.uuid4().hex, "cp_0": record["candidate_commonsense"][0],
                "cp_1": "", "conclusion": conclusion, "step_in_0": ["VP1", "CP1"], "step_out_0": "C", "step_text_0": conclusion,
                "step_in_1": ["VP2"], "step_out_1": "C", "step_text_1": conclusion, "step_out_2": "", "step_text_2": ""}
        action = re.search(r'action="(/assignments/\d+/submit)"', html).group(1)
        r = client.post(action, data=form, follow_redirects=False)
        assert r.status_code == 422 and "Steps 1 and 2 all conclude C" in r.text
        html = r.text
        assert shape(html) == (4, 4 * 4 + 4 * 4, 3)  # the two steps written and two spares, every time
