"""ExpArt through the app: release-shaped JSONL (a bad line refused by line and field), the rule on
the sections screen, plain-form posts, kept sections routed to the explanation stage, export."""

from __future__ import annotations

import json
import re

import pytest
import sqlalchemy as sa

from app.db import transaction
from app.models import Item
from app.services.exports import export
from tests.conftest import csrf_from, led_to, login, png_bytes, start_annotating, zip_bytes

RECORDS = [
    {"id": "0001_01", "title": "Mona Lisa", "image": "0001.png", "section": "Description",
     "text": "A portrait by Leonardo da Vinci in the Louvre.", "entities": ["Leonardo da Vinci", "Louvre"],
     "model": "llava", "explanation": "A portrait by Leonardo da Vinci, kept in Rome."},
    {"id": "0001_02", "title": "Mona Lisa", "image": "0001.png", "section": "References",
     "text": "Vasari, Lives of the Artists.", "entities": ["Vasari"]},
]


def setup(client, api):
    r = client.post("/api/v1/projects", headers=api["admin"], json={"name": "ExpArt", "stages": [{"workflow": "artwork.sections"}, {"workflow": "artwork.explanation"}]})
    project_id, stages = r.json()["id"], r.json()["stages"]
    assert [s["workflow"] for s in stages] == ["artwork.sections", "artwork.explanation"]
    images = ("i.zip", zip_bytes({"0001.png": png_bytes()}))
    bad = "\n".join([json.dumps(RECORDS[0]), json.dumps({**RECORDS[1], "entities": "Vasari"})]).encode()
    r = client.post(f"/api/v1/projects/{project_id}/items", headers=api["admin"], files={"file": ("dev.jsonl", bad), "images": images})
    assert r.status_code == 422
    problem = json.dumps(r.json())
    assert "line 2" in problem and "entities" in problem
    body = "\n".join(json.dumps(x) for x in RECORDS).encode()
    r = client.post(f"/api/v1/projects/{project_id}/items", headers=api["admin"], files={"file": ("dev.jsonl", body), "images": images})
    assert r.status_code == 201 and r.json()["created"] == 2
    return project_id, stages[0]["id"], stages[1]["id"]


@pytest.mark.committed  # the export runs in its own transactions
def test_sections_then_explanations_with_plain_forms(client, app, api):
    project_id, sections_id, explain_id = setup(client, api)
    login(client, "ann")
    seen = {}
    for _ in range(2):
        url = start_annotating(client, sections_id, follow_redirects=False).headers["location"]
        page = client.get(url).text
        ident = re.search(r'item <code>([^<]+)</code>', page).group(1)
        seen[ident] = page
        form = {"csrf_token": csrf_from(page), "idempotency_key": re.search(r'name="idempotency_key" value="([^"]+)"', page).group(1)}
        if ident == "0001_02":
            assert "data-rule" in page and 'value="drop" data-key="d" checked' in page and 'value="not_about_artwork" data-key="1" checked' in page
            answer = {"decision": "drop", "reason": "not_about_artwork"}
        else:
            assert "data-rule" not in page and '<mark class="ent"' in page and "Description" in page
            assert client.post(f"{url}/submit", data={**form, "decision": "drop"}).status_code == 422  # no reason
            answer = {"decision": "keep"}
        led_to(client.post(f"{url}/submit", data={**form, **answer}, follow_redirects=False))

    url = start_annotating(client, explain_id, follow_redirects=False).headers["location"]
    page = client.get(url).text
    assert 'class="ent missing"' in page and 'data-metric="entity_coverage"' in page and "Rome" in page
    form = {"csrf_token": csrf_from(page), "idempotency_key": re.search(r'name="idempotency_key" value="([^"]+)"', page).group(1)}
    # Tokens: A portrait by Leonardo da Vinci , kept in Rome .  -> strike "in Rome" (8, 9)
    led_to(client.post(f"{url}/submit", data={**form, "score": "3", "struck": ["8", "9"]}, follow_redirects=False))

    sessions = app.state.sessions
    with transaction(sessions) as s:
        statuses = dict(s.execute(sa.select(Item.external_id, Item.status)).all())
        assert statuses == {"0001_01": "done", "0001_02": "discarded"}
        run = export.create_export(s, project_id, "published", settings=app.state.settings, use_splits=False).id
    export.run_export(sessions, app.state.storage, app.state.settings, run)
    with transaction(sessions) as s:
        records = [json.loads(x) for x in export.find_file(s, run, "all.jsonl").read_text().splitlines()]
        log = [json.loads(x) for x in export.find_file(s, run, "judgements.jsonl").read_text().splitlines()]
    assert [r["id"] for r in records] == ["0001_01"]
    assert records[0]["instruction"] == "Explain the Description of this artwork, Mona Lisa."
    judged = {x["id"]: x for x in log}
    assert judged["0001_02"]["reason"] == "not_about_artwork"
    assert judged["0001_01"]["score"] == 3 and judged["0001_01"]["struck_words"] == ["in", "Rome"]
    # The project page draws the expert-vs-metrics charts (SVG and the rank-correlation table).
    from tests.conftest import make_user

    client.cookies.clear()
    make_user(sessions, "root", "admin")
    login(client, "root")
    page = client.get(f"/projects/{project_id}").text
    assert page.count('data-chart="') >= 2 and "<svg" in page
