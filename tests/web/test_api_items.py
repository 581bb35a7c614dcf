"""The API routes that cover the pages: items and their filters, finals of a split as JSON lines, pushed
suggestions replaced by a new payload, a page of images in one zip, and the refusals that change nothing."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest

from app.db import transaction
from tests import factories
from tests.client.test_client_live import png


def wikido_project(app) -> tuple[int, int]:
    with transaction(app.state.sessions) as s:
        pid, (stage_id,) = factories.project(s, "wikido.verify")
    return pid, stage_id


def push(client, headers, pid: int, n: int = 6):
    body = "\n".join(json.dumps({"image_id": f"w{i}", "caption": f"A dog {i} runs.", "image": f"https://example.org/{i}.jpg",
                                 "topic": "pets" if i % 2 else "parks"}) for i in range(n))
    return client.post(f"/api/v1/projects/{pid}/records", headers=headers, files={"file": ("r.jsonl", body.encode())})


@pytest.mark.committed  # the finals stream reads from a server-side cursor in its own transaction
def test_records_items_finals_and_suggestions(client, app, api):
    pid, stage_id = wikido_project(app)
    assert push(client, api["admin"], pid).json() == {"created": 6, "images": 0, "new_images": 0, "skipped": 0, "updated": 0}
    assert push(client, api["admin"], pid, 8).json()["skipped"] == 6
    page = client.get(f"/api/v1/projects/{pid}/items?limit=3", headers=api["admin"]).json()
    assert [r["external_id"] for r in page["items"]] == ["w0", "w1", "w2"]
    rest = client.get(f"/api/v1/projects/{pid}/items?limit=10&after={page['next']}", headers=api["admin"]).json()
    assert len(rest["items"]) == 5 and rest["next"] is None
    refused = client.get(f"/api/v1/projects/{pid}/items?status=finished", headers=api["admin"])
    assert refused.status_code == 422 and "Unknown status" in refused.json()["detail"]
    assert client.get(f"/api/v1/projects/{pid}/items", headers=api["ann"]).status_code == 403

    row = {"external_id": "w1", "kind": "wikido.itm", "model": "clip", "model_version": "1", "payload": {"score": 0.2}}
    url = f"/api/v1/stages/{stage_id}/suggestions"
    assert client.post(url, headers=api["admin"], json={"suggestions": [row]}).json() == {"stored": 1, "unchanged": 0}
    assert client.post(url, headers=api["admin"], json={"suggestions": [row]}).json() == {"stored": 0, "unchanged": 1}
    changed = {**row, "payload": {"score": 0.9}}
    assert client.post(url, headers=api["admin"], json={"suggestions": [changed]}).json() == {"stored": 1, "unchanged": 0}
    twice = client.post(url, headers=api["admin"], json={"suggestions": [row, row]})
    assert twice.status_code == 422 and "repeats suggestions[0]" in twice.json()["errors"][0]
    item = client.get(f"/api/v1/items/{page['items'][1]['id']}", headers=api["admin"]).json()
    assert [e["payload"] for e in item["history"] if e["kind"] == "wikido.itm"] == [{"score": 0.9}]

    # Annotate everything, split, and read one split's finals.
    with transaction(app.state.sessions) as s:
        annotator = factories.user(s, "api-items-ann")
        for _ in range(8):
            factories.annotation(s, stage_id, annotator, {"verdict": "correct"})
    saved = client.post(f"/api/v1/projects/{pid}/splits", headers=api["admin"], json={"held_out": {"field": "topic", "values": ["pets"], "split": "pets"}, "ratios": {"rest": 1.0}})
    assert saved.status_code == 201, saved.text
    lines = client.get(f"/api/v1/projects/{pid}/finals?split=pets", headers=api["admin"])
    assert lines.headers["content-type"].startswith("application/x-ndjson")
    finals = [json.loads(line) for line in lines.text.splitlines()]
    assert [f["external_id"] for f in finals] == ["w1", "w3", "w5", "w7"]
    assert finals[0]["record"] == {"image_id": "w1", "caption": "A dog 1 runs.", "image": "https://example.org/1.jpg", "topic": "pets"}
    everything = client.get(f"/api/v1/projects/{pid}/finals", headers=api["admin"]).text.splitlines()
    assert len(everything) == 8
    unknown = client.get(f"/api/v1/projects/{pid}/finals?split=nope", headers=api["admin"])
    assert unknown.status_code == 422 and "has no split 'nope'" in unknown.json()["detail"]
    settings = client.get(f"/api/v1/projects/{pid}/settings", headers=api["ann"]).json()
    assert settings["dataset"] == "wikido" and settings["image_fields"] == ["/image"]
    assert settings["stages"][0]["suggestion_kinds"] == ["wikido.itm", "wikido.unsupported", "wikido.caption"]


def test_a_page_of_images_in_one_zip(client, app, api):
    pid, _ = wikido_project(app)
    images = {f"i{i}.png": png(i) for i in range(3)}
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as zf:
        for name, data in images.items():
            zf.writestr(name, data)
    body = "\n".join(json.dumps({"image_id": f"w{i}", "caption": "A dog.", "image": f"i{i}.png"}) for i in range(3))
    pushed = client.post(f"/api/v1/projects/{pid}/records", headers=api["admin"],
                         files={"file": ("r.jsonl", body.encode()), "images": ("i.zip", zipped.getvalue())})
    assert pushed.status_code == 200, pushed.text
    shas = [hashlib.sha256(data).hexdigest() for data in images.values()]
    page = client.post("/api/v1/images/batch", headers=api["ann"], json={"sha256": [shas[2], shas[0], shas[2]]})
    assert page.status_code == 200 and page.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(page.content)) as zf:
        assert zf.namelist() == [shas[2], shas[0]]  # each once, in the order asked
        assert [zf.read(n) for n in zf.namelist()] == [images["i2.png"], images["i0.png"]]
    missing = client.post("/api/v1/images/batch", headers=api["ann"], json={"sha256": [shas[0], "0" * 64, "x"]})
    assert missing.status_code == 404 and missing.json()["detail"] == f"No such image: {'0' * 64}, x"
    assert client.post("/api/v1/images/batch", headers=api["ann"], json={"sha256": [shas[0]] * 1001}).status_code == 422
    assert client.post("/api/v1/images/batch", headers=api["ann"], json={"sha256": []}).status_code == 422


def test_settings_show_the_arm_probe_and_gold_keys_to_reviewers_only(client, app):
    config = {"draft_control_share": 0.3, "draft_control_seed": 77, "probe_share": 0.5, "probe_action": "review",
              "gold_share": 0.2, "gold_route_to_review": True, "forbid_self_review": False}
    with transaction(app.state.sessions) as s:
        pid, _ = factories.project(s, "wikido.verify", config=config)
        headers = {role: factories.bearer(s, f"settings-{role}", role) for role in ("annotator", "reviewer", "admin")}
    seen = {role: client.get(f"/api/v1/projects/{pid}/settings", headers=h).json()["stages"][0]["config"]
            for role, h in headers.items()}
    assert seen["admin"] == seen["reviewer"] == config
    assert seen["annotator"] == {"forbid_self_review": False}
