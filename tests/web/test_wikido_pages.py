"""WikiDO through the app: published JSONL with stored and external images, verdicts, edits, figures."""

from __future__ import annotations

import json
import re
import uuid

import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation, Asset, Item
from app.services.annotation import suggestions
from app.services.quality.figures import figures
from tests.conftest import login, png_bytes, start_annotating, zip_bytes

URL = "https://upload.wikimedia.org/wikipedia/commons/a/ab/Nave.jpg"


def wikido_records() -> tuple[list[dict], dict[str, bytes]]:
    records = [
        {"image_id": i, "orig_cap": f"A red square number {i}.", "caption": f"A red square number {i}, painted in 1913.",
         "image": f"img/{i}.png", "page_id": 100 + i, "page_title": f"Square {i}", "topic": topic, "split": split}
        for i, (topic, split) in enumerate([("art", "val"), ("art", "val"), ("food", "test_ood"), ("food", "test_ood")])
    ]
    records.append({"image_id": 9, "orig_cap": "A nave.", "caption": "A Gothic nave.", "image": URL, "topic": "art", "split": "val"})
    return records, {f"img/{i}.png": png_bytes((200, 10 * i, 10), size=(30 + i, 20)) for i in range(4)}


def setup_project(client, api) -> tuple[int, int]:
    r = client.post("/api/v1/projects", headers=api["admin"], json={"name": "WikiDO", "stages": [{"workflow": "wikido.verify"}]})
    project_id, stage_id = r.json()["id"], r.json()["stages"][0]["id"]
    records, files = wikido_records()
    body = "\n".join(json.dumps(r) for r in records).encode()
    r = client.post(f"/api/v1/projects/{project_id}/items", headers=api["admin"], files={"file": ("val.jsonl", body), "images": ("i.zip", zip_bytes(files))})
    assert r.status_code == 201 and r.json() == {"created": 5, "images": 4, "new_images": 4}
    return project_id, stage_id


def submit(client, headers, assignment_id, payload):
    return client.post(f"/api/v1/assignments/{assignment_id}/submit", headers=headers, json={"payload": payload, "idempotency_key": uuid.uuid4().hex})


def test_verdicts_edits_and_figures(client, app, api):
    project_id, stage_id = setup_project(client, api)
    plan = {
        "0": {"verdict": "correct"},
        "1": {"verdict": "hallucinated", "caption": "A red square number 1."},
        "2": {"verdict": "hallucinated", "caption": "A red square number 2, made in 1913."},
        "3": {"verdict": "wrong"},
        "9": {"verdict": "correct"},
    }
    for _ in plan:
        claim = client.post(f"/api/v1/stages/{stage_id}/claim", headers=api["ann"]).json()
        ident = claim["data"]["image_id"]
        if ident == "1":
            forged = submit(client, api["ann"], claim["assignment_id"], {**plan[ident], "edits": {"kind": "none"}})
            assert forged.status_code == 422 and "computed by the server" in forged.text
        assert submit(client, api["ann"], claim["assignment_id"], plan[ident]).status_code == 200
    with transaction(app.state.sessions) as s:
        stored = {i: p for i, p in s.execute(sa.select(Item.external_id, Annotation.payload).join(Annotation, Annotation.item_id == Item.id))}
        statuses = dict(s.execute(sa.select(Item.external_id, Item.status)).all())
        assert s.scalar(sa.select(sa.func.count()).select_from(Asset)) == 4  # the URL image is not fetched
        figs = figures(s, project_id)
    assert stored["1"]["edits"]["kind"] == "deletion" and stored["1"]["edits"]["deleted"] == 4
    assert stored["2"]["edits"]["kind"] == "substitution" and stored["2"]["edits"]["substituted"] == 1
    assert statuses == {"0": "done", "1": "done", "2": "done", "3": "discarded", "9": "done"}

    (fig,) = figs
    groups = dict(fig.groups)
    assert {r.value: r.counts for r in groups["topic"]} == {
        "art": {"correct": 2, "hallucinated": 1},
        "food": {"hallucinated": 1, "wrong": 1},
    }
    assert {r.value: r.total for r in groups["split"]} == {"test_ood": 2, "val": 3}
    (title, means), = fig.means
    assert {(m.category, m.mean, m.n) for m in means} == {("deletion", 4.0, 1), ("substitution", 1.0, 1)}

    login(client, "boss")
    page = client.get(f"/projects/{project_id}").text
    assert re.search(r'<rect [^>]*fill="#2a9d4b" data-answer="correct" data-count="2"', page)
    assert 'data-category="deletion" data-mean="4.00"' in page


def test_screen_shows_external_images_tokens_and_unsupported_spans(client, app, api):
    project_id, stage_id = setup_project(client, api)
    with transaction(app.state.sessions) as s:
        external = s.scalar(sa.select(Item).where(Item.external_id == "9"))
        assert external.assets == {}
        for item_id in s.scalars(sa.select(Item.id)):
            # "Gothic" is the second token of "A Gothic nave."
            suggestions.store(s, item_id, stage_id, "wikido.unsupported", "minilm", {"spans": [[1, 2]]}, model_version="0.1")
    login(client, "ann")
    seen = set()
    for _ in range(5):
        html = start_annotating(client, stage_id).text
        ident = re.search(r"item <code>([^<]+)</code>", html).group(1)
        seen.add(ident)
        assert '<span class="tok unsupported" data-i="1"' in html
        assert "<strong>Suggestion</strong> from <code>minilm 0.1</code>" in html
        if ident == "9":
            assert f'<img src="{URL}"' in html and 'referrerpolicy="no-referrer"' in html
        else:
            assert re.search(r'<img src="/assets/[0-9a-f]{64}/thumb"', html)
        assignment = re.search(r"/assignments/(\d+)/submit", html).group(1)
        client.post(f"/assignments/{assignment}/skip", data={"csrf_token": re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)})
    assert seen == {"0", "1", "2", "3", "9"}


def test_a_caption_with_nothing_supported_suggests_wrong_instead_of_underlining(client, app, api):
    _, stage_id = setup_project(client, api)
    with transaction(app.state.sessions) as s:
        for item_id in s.scalars(sa.select(Item.id)):
            suggestions.store(s, item_id, stage_id, "wikido.unsupported", "minilm", {"spans": [], "unrelated": True}, model_version="0.1")
    login(client, "ann")
    html = start_annotating(client, stage_id).text
    assert "tok unsupported" not in html and "data-accept" not in html
    assert "nothing in this caption is supported by the reference text" in html
    # Words are numbered for the digit keys; punctuation is not.
    assert re.search(r'<span class="tok" data-i="0" data-space="1" data-n="1">A</span>', html)
    assert re.search(r'<span class="tok" data-i="\d+" data-space="0">\.</span>', html)
    # The screen starts on the verdicts.
    assert re.search(r'name="verdict" value="correct" data-key="c"\s+autofocus', html)
