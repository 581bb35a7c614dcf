"""VOLDOGER through the app: release-shaped rows joined, imported, accepted unchanged through the
HTTP API and exported `published` byte for byte, with the authors' check log; the screen as a plain
form (no JavaScript); route `flipped` on a later stage."""

from __future__ import annotations

import json
import re

import pytest
import sqlalchemy as sa

from app.datasets.voldoger.release import join
from app.db import transaction
from app.models import Annotation, Item
from tests.conftest import login, png_bytes, start_annotating, zip_bytes
from tests.datasets.voldoger.release_rows import (
    CAP_ORIGINAL,
    CAP_STYLISED,
    VE_ORIGINAL,
    VE_STYLISED,
    VQA_ORIGINAL,
    VQA_STYLISED,
)
from tests.web.test_round_trip import jpeg_bytes, run


def import_body(records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def images_of(records) -> dict[str, bytes]:
    out = {}
    for k, r in enumerate(records):
        out[r["original_image"]] = jpeg_bytes((k * 40, 120, 80))
        out[r["stylised_image"]] = png_bytes((20, k * 40, 200), size=(40 + k, 30))
    return out


def read_log(path) -> list[dict]:
    """The check log: JSON Lines, one entry a line."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def accept_llm(workflow, item):
    """What the LLM did, accepted: its label, its paraphrase."""
    assert workflow == "voldoger.verify"
    data = item["data"]
    field = {"vqa": "answer", "ve": "label"}.get(data["task"])
    return {"image": "keep", "paraphrase": "keep", **({"label": str(data["stylised"][field])} if field else {})}


@pytest.mark.committed
@pytest.mark.parametrize("task, style, original, stylised", [
    ("vqa", "oil", VQA_ORIGINAL, VQA_STYLISED),
    ("ve", "cartoon", VE_ORIGINAL, VE_STYLISED),
    ("cap", "pencil", CAP_ORIGINAL, CAP_STYLISED),
])
def test_release_round_trip(client, app, api, tmp_path, task, style, original, stylised):
    records = join(original, stylised, task, style)
    out = run(client, app, api, tmp_path, ["voldoger.verify"], f"{style}_{task}.jsonl", import_body(records), images_of(records), accept_llm)
    assert (out / "all.json").read_bytes() == json.dumps(stylised, indent=4).encode()
    log = read_log(out / "check_log.jsonl")
    if task == "vqa":
        # The two answers the LLM flipped, accepted; in the authors' fields and types.
        assert log == [
            {"image_id": "100034.jpg", "question": "Is the ball coloured red? ", "ori_answer": "yes", "style_answer": "no", "flag": True, "comment": ""},
            {"image_id": "200012.jpg", "question": "Can you see any people?", "ori_answer": "no", "style_answer": "yes", "flag": True, "comment": ""},
        ]
        assert all([type(v) for v in line.values()] == [str, str, str, str, bool, str] for line in log)
    elif task == "ve":
        assert [(line["ori_answer"], line["style_answer"], line["flag"]) for line in log] == [(1, 2, True)]
    else:
        assert log == []


def _form(html: str) -> tuple[str, dict[str, str]]:
    assignment = re.search(r"/assignments/(\d+)/submit", html).group(1)
    hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html))
    return assignment, hidden


def test_the_screen_works_as_a_plain_form(client, app, api):
    records = join(VQA_ORIGINAL, VQA_STYLISED, "vqa", "pencil")
    r = client.post("/api/v1/projects", headers=api["admin"], json={"name": "VOLDOGER", "stages": [{"workflow": "voldoger.verify"}]})
    project_id, stage_id = r.json()["id"], r.json()["stages"][0]["id"]
    r = client.post(f"/api/v1/projects/{project_id}/items", headers=api["admin"],
                    files={"file": ("pencil_vqa.jsonl", import_body(records)), "images": ("i.zip", zip_bytes(images_of(records)))})
    assert r.status_code == 201 and r.json()["created"] == 3 and r.json()["images"] == 4
    login(client, "ann")
    plans = {
        "1000340": {"image": "keep", "label": "yes", "paraphrase": "edit", "text": "Is the ball red?", "note": "still red"},
        "1000341": {"image": "keep", "label": "yes", "paraphrase": "keep", "text": "Is the weather  sunny?", "note": ""},
        "2000120": {"image": "discard", "note": "the street is gone"},
    }
    for _ in plans:
        html = start_annotating(client, stage_id).text
        qid = re.search(r"item <code>vqa-pencil-\d+-\d+\.jpg-(\d+)</code>", html).group(1)
        assert len(re.findall(r'<img src="/assets/[0-9a-f]{64}"', html)) == 2  # photo and drawing, full size
        if qid == "1000340":
            assert "data-flipped" in html and "changed by the LLM (was yes)" in html
            assert re.search(r'<input type="radio" name="label" value="no" data-key="2" checked', html)  # the LLM's label pre-filled
            assert re.search(r'<input type="radio" name="paraphrase" value="keep" data-key="p" checked', html)
            assert "Is the ball coloured red? </textarea>" in html
            bad = client.post(f"/assignments/{_form(html)[0]}/submit", data={**_form(html)[1], "image": "keep", "paraphrase": "keep"})
            assert "Choose the label" in bad.text
            html = bad.text
        if qid == "1000341":
            assert "data-flipped" not in html
        assignment, hidden = _form(html)
        done = client.post(f"/assignments/{assignment}/submit", data={**hidden, **plans[qid]}, follow_redirects=False)
        assert done.status_code in (200, 303), done.text
    with transaction(app.state.sessions) as s:
        stored = {ext.rsplit("-", 1)[1]: p for ext, p in s.execute(sa.select(Item.external_id, Annotation.payload).join(Annotation, Annotation.item_id == Item.id))}
        statuses = {ext.rsplit("-", 1)[1]: st for ext, st in s.execute(sa.select(Item.external_id, Item.status))}
    assert stored == {
        "1000340": {"image": "keep", "label": "yes", "paraphrase": "edit", "text": "Is the ball red?", "note": "still red"},
        "1000341": {"image": "keep", "label": "yes", "paraphrase": "keep", "text": None, "note": ""},
        "2000120": {"image": "discard", "label": None, "paraphrase": None, "text": None, "note": "the street is gone"},
    }
    assert statuses == {"1000340": "done", "1000341": "done", "2000120": "discarded"}
    login(client, "boss")
    page = client.get(f"/projects/{project_id}").text
    assert "LLM label changes people accepted" in page and "Stylised images kept or discarded" in page


@pytest.mark.committed
def test_route_flipped_on_the_first_stage_shows_only_changed_labels(client, app, api, tmp_path):
    """Rows whose label the LLM kept are done at import, exported as the LLM left them."""
    records = join(VQA_ORIGINAL, VQA_STYLISED, "vqa", "oil")
    admin, ann = api["admin"], api["ann"]
    project = client.post("/api/v1/projects", headers=admin, json={
        "name": "flipped only", "stages": [{"workflow": "voldoger.verify", "config": {"route": "flipped"}}]}).json()
    r = client.post(f"/api/v1/projects/{project['id']}/items", headers=admin,
                    files={"file": ("oil_vqa.jsonl", import_body(records)), "images": ("i.zip", zip_bytes(images_of(records)))})
    assert r.status_code == 201, r.text
    shown = []
    stage = project["stages"][0]["id"]
    while (claim := client.post(f"/api/v1/stages/{stage}/claim", headers=ann)).status_code == 200:
        item = claim.json()
        shown.append(item["data"]["stylised"]["question_id"])
        client.post(f"/api/v1/assignments/{item['assignment_id']}/submit", headers=ann,
                    json={"payload": accept_llm("voldoger.verify", item), "idempotency_key": str(item["item_id"])}).raise_for_status()
    changed = [row["question_id"] for row, orig in zip(VQA_STYLISED, [next(o for o in VQA_ORIGINAL if o["question_id"] == s["question_id"]) for s in VQA_STYLISED])
               if row["answer"] != orig["answer"]]
    assert shown == changed and len(shown) < len(VQA_STYLISED)
    with transaction(app.state.sessions) as s:
        statuses = sorted(s.scalars(sa.select(Item.status).where(Item.project_id == project["id"])))
    assert statuses == ["done"] * len(VQA_STYLISED)
    out = tmp_path / "flipped"
    from tests.web.test_round_trip import export_as

    export_as(app, project["id"], "published", out)
    assert (out / "all.json").read_bytes() == json.dumps(VQA_STYLISED, indent=4).encode()
