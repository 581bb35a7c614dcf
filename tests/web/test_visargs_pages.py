"""VisArgs through the app: the published annotation.json in, three stages by API and forms, the same record out."""

from __future__ import annotations

import json
import re
import uuid

import sqlalchemy as sa

from app.db import transaction
from app.models import Item
from app.services.pipeline import results_by_stage
from app.workflows import get_workflow
from tests.conftest import csrf_from, login, make_token, make_user, png_bytes, zip_bytes

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
            record = get_workflow("visargs.grounding").export_record(item.data, results_by_stage(s, item.id))
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
    html = client.get(f"/stages/{project['stages'][0]['id']}/annotate").text
    assert 'value="A &lt;b&gt;tap&lt;/b&gt;"' in html and html.count('class="premise-row"') == 4  # two candidates, two spares
    action = re.search(r'action="(/assignments/\d+/submit)"', html).group(1)
    form = {"csrf_token": csrf_from(html), "idempotency_key": uuid.uuid4().hex,
            "text_0": "A tap", "keep_0": "on", "pos_0": "0", "text_1": "A child", "pos_1": "1",
            "text_2": "Water drops", "keep_2": "on", "pos_2": "2", "text_3": "", "keep_3": "on", "pos_3": "3"}
    assert client.post(action, data=form, follow_redirects=False).status_code == 303
    structure = client.get(f"/stages/{project['stages'][1]['id']}/annotate").text
    assert "VP2</span> Water drops" in structure and 'value="VP2"' in structure
    assert "Not valid yet" in structure and "There are no reasoning steps" in structure


def test_grounding_shows_suggested_boxes_and_drafted_ones(client, app):
    from app.services import suggestions

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
    html = client.get(f"/stages/{grounding}/annotate").text
    assert "dashed boxes come from <code>rapidocr</code>" in html
    assert "&#34;startX&#34;: 5" in html and "&#34;h&#34;: 8" in html
    # The published box of the unchanged premise starts in place.
    assert re.search(r'name="x_0" value="1"', html) and re.search(r'name="h_0" value="4"', html)
