"""ColorSwap through the app: import, filter and re-caption by API and by plain forms, suggestions, figures."""

from __future__ import annotations

import json
import re
import uuid

import pytest
import sqlalchemy as sa

from app.datasets import dataset_of
from app.db import transaction
from app.errors import Invalid
from app.models import Item
from app.services.annotation import suggestions
from app.services.annotation.pipeline import results_by_stage
from app.services.projects import projects
from app.services.quality.figures import breakdown
from tests.conftest import (
    COLOURS,
    colorswap_records,
    csrf_from,
    led_to,
    login,
    make_user,
    png_bytes,
    start_annotating,
    zip_bytes,
)


def create(client, headers, records, files, name="ColorSwap") -> tuple[int, int, int]:
    r = client.post(
        "/api/v1/projects",
        headers=headers,
        json={"name": name, "stages": [{"workflow": "colorswap.filter"}, {"workflow": "colorswap.recaption"}]},
    )
    assert r.status_code == 201, r.text
    project = r.json()
    body = "\n".join(json.dumps(rec) for rec in records).encode()
    r = client.post(
        f"/api/v1/projects/{project['id']}/items",
        headers=headers,
        files={"file": ("pairs.jsonl", body), "images": ("images.zip", zip_bytes(files))},
    )
    assert r.status_code == 201, r.text
    return project["id"], project["stages"][0]["id"], project["stages"][1]["id"]


def submit(client, headers, assignment_id, payload):
    return client.post(
        f"/api/v1/assignments/{assignment_id}/submit",
        headers=headers,
        json={"payload": payload, "idempotency_key": uuid.uuid4().hex},
    )


def test_filter_then_recaption_through_the_api(client, app, api):
    records, files = colorswap_records(3)
    project_id, filter_id, recaption_id = create(client, api["admin"], records, files)
    choices = {"pair-0": {"choice_1": 2, "choice_2": 0}, "pair-1": {"choice_1": 1, "choice_2": 3}, "pair-2": {"choice_1": None, "choice_2": 1}}
    for _ in range(3):
        claim = client.post(f"/api/v1/stages/{filter_id}/claim", headers=api["ann"]).json()
        assert len(claim["data"]["candidates"]) == 4 and len(claim["assets"]) == 4
        bad = submit(client, api["ann"], claim["assignment_id"], {"choice_1": 1, "choice_2": 1})
        assert bad.status_code == 422 and "cannot fit both captions" in bad.text
        assert submit(client, api["ann"], claim["assignment_id"], choices[claim["data"]["id"]]).status_code == 200
    assert client.post(f"/api/v1/stages/{filter_id}/claim", headers=api["ann"]).status_code == 204

    # Only the kept rule-based pair reaches re-captioning, with the filter's choice.
    claim = client.post(f"/api/v1/stages/{recaption_id}/claim", headers=api["ann"]).json()
    assert claim["data"]["id"] == "pair-0"
    assert claim["results"] == {"colorswap.filter": {"choice_1": 2, "choice_2": 0}}
    bad = submit(client, api["ann"], claim["assignment_id"], {"caption_1": "a red cat 0 in a grey coat", "caption_2": "a grey dog 0 in a red coat"})
    assert bad.status_code == 422 and "more than colour words" in bad.text
    same = submit(client, api["ann"], claim["assignment_id"], {"caption_1": records[0]["caption_1"], "caption_2": records[0]["caption_2"]})
    assert same.status_code == 422 and "unchanged" in same.text
    good = {"caption_1": "A red kitten wears a grey jacket.", "caption_2": "A grey kitten wears a red jacket."}
    r = submit(client, api["ann"], claim["assignment_id"], good)
    assert r.status_code == 200 and r.json()["item_status"] == "done"
    assert client.post(f"/api/v1/stages/{recaption_id}/claim", headers=api["ann"]).status_code == 204

    with transaction(app.state.sessions) as s:
        items = {i.external_id: i for i in s.scalars(sa.select(Item).where(Item.project_id == project_id))}
        assert {k: v.status for k, v in items.items()} == {"pair-0": "done", "pair-1": "done", "pair-2": "discarded"}
        wf = dataset_of("colorswap.filter")
        exported = wf.export_record(items["pair-0"].data, results_by_stage(s, items["pair-0"].id))
        assert (exported["caption_1"], exported["caption_2"]) == (good["caption_1"], good["caption_2"])
        files_0 = wf.export_files(items["pair-0"].data, items["pair-0"].assets, results_by_stage(s, items["pair-0"].id))
        assert files_0 == {"images/img_pair-0_1.png": items["pair-0"].assets["/candidates/2/image"], "images/img_pair-0_2.png": items["pair-0"].assets["/candidates/0/image"]}
        handmade = wf.export_record(items["pair-1"].data, results_by_stage(s, items["pair-1"].id))
        assert handmade["caption_1"] == records[1]["caption_1"]
        figures = breakdown(s, project_id)
    assert figures.fields == ("caption_source", "image_source")
    assert (figures.cell("rule-based", "stable-diffusion").kept, figures.cell("rule-based", "stable-diffusion").discarded) == (1, 1)
    assert figures.cell("handmade", "dall-e-3").kept == 1
    assert figures.total().kept == 2 and figures.total().discarded == 1


def test_the_published_layout_imports_for_reverification(client, app, api):
    published = [
        {"id": i, "caption_1": f"a blue ball {i} on a yellow box", "caption_2": f"a yellow ball {i} on a blue box",
         "image_1": f"images/img_{i}_1.png", "image_2": f"images/img_{i}_2.png", "image_source": "midjourney", "caption_source": "handmade"}
        for i in (1, 2)
    ]
    files = {f"images/img_{i}_{n}.png": png_bytes(COLOURS[n], size=(20 + i, 20)) for i in (1, 2) for n in (1, 2)}
    r = client.post("/api/v1/projects", headers=api["admin"], json={"name": "Release", "stages": [{"workflow": "colorswap.filter"}]})
    project_id, stage_id = r.json()["id"], r.json()["stages"][0]["id"]
    r = client.post(
        f"/api/v1/projects/{project_id}/items",
        headers=api["admin"],
        files={"file": ("test.json", json.dumps(published).encode()), "images": ("i.zip", zip_bytes(files))},
    )
    assert r.status_code == 201 and r.json() == {"created": 2, "images": 4, "new_images": 4}
    claim = client.post(f"/api/v1/stages/{stage_id}/claim", headers=api["ann"]).json()
    assert [c["from_caption"] for c in claim["data"]["candidates"]] == [1, 2]
    assert submit(client, api["ann"], claim["assignment_id"], {"choice_1": 0, "choice_2": 1}).json()["item_status"] == "done"
    with transaction(app.state.sessions) as s:
        item = s.get(Item, claim["item_id"])
        record = dataset_of("colorswap.filter").export_record(item.data, results_by_stage(s, item.id))
    original = next(p for p in published if str(p["id"]) == claim["data"]["id"])
    assert record == original


def test_filter_screen_without_javascript(client, app, api):
    records, files = colorswap_records(2)
    records[0]["caption_1"] = "a red <b>cat</b> in a grey jacket"
    _, filter_id, _ = create(client, api["admin"], records, files)
    login(client, "ann")
    screen = start_annotating(client, filter_id)
    html = screen.text
    assert screen.status_code == 200
    assert len(re.findall(r'<img src="/assets/[0-9a-f]{64}/thumb"', html)) == 4
    assert '<mark class="colour-word" style="--swatch: #d22" title="colour: red">red</mark>' in html
    assert "&lt;b&gt;cat&lt;/b&gt;" in html or "&lt;b&gt;" in html
    assert "<b>cat</b>" not in html
    action = re.search(r'action="(/assignments/\d+/submit)"', html).group(1)
    token = csrf_from(html)
    form = {"csrf_token": token, "idempotency_key": uuid.uuid4().hex, "choice_1": "1"}
    r = client.post(action, data=form)
    assert r.status_code == 422 and "Choose an image for caption 2" in r.text
    # What was chosen is kept on the re-shown form.
    assert re.search(r'name="choice_1" value="1" checked', r.text)
    r = client.post(action, data={**form, "choice_2": "none"}, follow_redirects=False)
    assert led_to(r).startswith("/assignments/")  # the second pair
    with transaction(app.state.sessions) as s:
        statuses = sorted(s.scalars(sa.select(Item.status)).all())
    assert statuses == ["active", "discarded"]


def test_suggestions_are_shown_marked_and_preselected(client, app, api):
    records, files = colorswap_records(1)
    _, filter_id, _ = create(client, api["admin"], records, files)
    with transaction(app.state.sessions) as s:
        item_id = s.scalar(sa.select(Item.id))
        scores = [[0.21, 0.30], [0.18, 0.19], [0.33, 0.20], [0.25, 0.24]]
        suggestions.store(s, item_id, filter_id, "colorswap.itm", "clip-vit-b32", {"scores": scores}, model_version="v1")
    login(client, "ann")
    html = start_annotating(client, filter_id).text
    assert "<strong>Suggestion</strong> from model <code>clip-vit-b32 v1</code>" in html
    assert "image 3 for caption 1, image 1 for caption 2" in html
    assert re.search(r'name="choice_1" value="2" checked', html) and re.search(r'name="choice_2" value="0" checked', html)
    assert html.count('class="model-score"') == 4
    # A draft wins over the suggestion when the annotator comes back.
    assignment = re.search(r"/assignments/(\d+)/submit", html).group(1)
    r = client.post(f"/assignments/{assignment}/draft", data={"choice_1": "3"}, headers={"X-CSRF-Token": csrf_from(html)})
    assert r.status_code == 200
    again = client.get(f"/assignments/{assignment}").text
    assert re.search(r'name="choice_1" value="3" checked', again) and not re.search(r'name="choice_2" value="\d" checked', again)


def test_live_check_fragment_and_its_access(client, app, api):
    records, files = colorswap_records(1)
    _, filter_id, recaption_id = create(client, api["admin"], records, files)
    claim = client.post(f"/api/v1/stages/{filter_id}/claim", headers=api["ann"]).json()
    submit(client, api["ann"], claim["assignment_id"], {"choice_1": 0, "choice_2": 3})
    login(client, "ann")
    html = start_annotating(client, recaption_id).text
    assert html.count('<img src="/assets/') == 2 and 'value="a red cat 0 in a grey jacket"' in html
    assert "Caption 1 is unchanged" in html
    check_url = re.search(r'hx-post="(/assignments/\d+/check)"', html).group(1)
    headers = {"X-CSRF-Token": csrf_from(html), "HX-Request": "true"}
    r = client.post(check_url, data={"caption_1": "a red cat sits in a grey box", "caption_2": "a grey cat sits in a red box"}, headers=headers)
    assert r.status_code == 200 and r.text.lstrip().startswith('<section id="swap-check" class="swap-check ok"')
    assert "cat: <mark" in r.text and "<html" not in r.text
    r = client.post(check_url, data={"caption_1": "a red cat", "caption_2": "a blue cat"}, headers=headers)
    assert "Not a swap pair yet" in r.text and "only in caption 1: red" in r.text
    assert client.post(check_url, data={"caption_1": "x"}, headers={"HX-Request": "true"}).status_code == 403
    make_user(app.state.sessions, "eve", "annotator")
    client.cookies.clear()
    login(client, "eve")
    other = client.get("/").text
    assert client.post(check_url, data={"caption_1": "x"}, headers={"X-CSRF-Token": csrf_from(other)}).status_code == 404  # as a missing one


def test_project_form_builds_the_pipeline_and_shows_figures(client, app, api):
    login(client, "boss")
    page = client.get("/projects/new").text
    assert "colorswap.filter → colorswap.recaption" in page
    assert 'value="colorswap.recaption"' not in page
    r = client.post("/projects", data={"csrf_token": csrf_from(page), "name": "CS", "workflow": "colorswap.filter", "overlap": 1}, follow_redirects=False)
    assert r.status_code == 303
    with transaction(app.state.sessions) as s:
        project = projects.find_project(s, "CS")
        assert [st.workflow for st in projects.stages_of(s, project.id)] == ["colorswap.filter", "colorswap.recaption"]
        with pytest.raises(Invalid, match="builds on 'colorswap.filter'"):
            projects.create_project(s, "alone", [projects.StageSpec(workflow="colorswap.recaption")])
    records, files = colorswap_records(2)
    body = "\n".join(json.dumps(rec) for rec in records).encode()
    client.post(f"/api/v1/projects/{project.id}/items", headers=api["admin"], files={"file": ("p.jsonl", body), "images": ("i.zip", zip_bytes(files))})
    detail = client.get(f"/projects/{project.id}").text
    assert "Kept and discarded by caption_source × image_source" in detail
    assert 'title="0 kept, 0 discarded, 1 open"' in detail


def test_what_annotators_do_with_suggestions_is_recorded_and_shown(client, app, api):
    records, files = colorswap_records(2)
    project_id, filter_id, _ = create(client, api["admin"], records, files)
    with transaction(app.state.sessions) as s:
        for item_id in s.scalars(sa.select(Item.id)):
            scores = [[0.9, 0.1], [0.1, 0.9], [0.2, 0.2], [0.3, 0.3]]  # preselects images 1 and 2
            suggestions.store(s, item_id, filter_id, "colorswap.itm", "clip-b32", {"scores": scores}, model_version="v2")
    outcomes = []
    for payload in ({"choice_1": 0, "choice_2": 1}, {"choice_1": 0, "choice_2": 3}):
        claim = client.post(f"/api/v1/stages/{filter_id}/claim", headers=api["ann"]).json()
        assert claim["suggestions"][0]["kind"] == "colorswap.itm"
        assert submit(client, api["ann"], claim["assignment_id"], payload).status_code == 200
    with transaction(app.state.sessions) as s:
        outcomes = sorted(s.scalars(sa.text("SELECT outcome FROM suggestion_outcomes")).all())
    assert outcomes == ["accepted", "edited"]
    login(client, "boss")
    page = client.get(f"/projects/{project_id}").text
    row = re.search(r'<tr data-kind="colorswap.itm">(.*?)</tr>', page, re.S).group(1)
    assert "clip-b32" in row and "<code>v2</code>" in row and '<td class="rate">50%</td>' in row
