"""Every form of the project and export pages answers a POST with a redirect to a GET page (a reload never
posts again), shows its notice there once, and on an error shows the form again as typed."""

from __future__ import annotations

import re

import pytest

from app.db import transaction
from tests import factories
from tests.conftest import csrf_from, login, png_bytes, zip_bytes
from tests.web.test_export import visargs_project, wikido_project


@pytest.fixture
def admin(client, app):
    with transaction(app.state.sessions) as s:
        factories.user(s, "root", "admin")
        project_id, _ = factories.project(s, name="Plain")
    login(client, "root")
    return project_id


def _token(client, url="/projects/new") -> str:
    return csrf_from(client.get(url).text)


def test_project_creation_redirects_to_the_project(client, admin):
    r = client.post("/projects", data={"csrf_token": _token(client), "name": "New", "workflow": "wikido.verify"}, follow_redirects=False)
    assert r.status_code == 303 and re.fullmatch(r"/projects/\d+", r.headers["location"])


def test_import_redirects_and_says_what_it_imported_once(client, admin):
    url = f"/projects/{admin}"
    r = client.post(f"{url}/import", data={"csrf_token": _token(client)}, follow_redirects=False,
                    files={"file": ("r.jsonl", b'{"id": "1", "image": "a.png"}'), "images": ("i.zip", zip_bytes({"a.png": png_bytes()}))})
    assert r.status_code == 303 and r.headers["location"] == f"{url}#import"
    assert "Imported 1 items (1 images, 1 new)." in client.get(url).text
    assert "Imported 1 items" not in client.get(url).text  # shown once, not on every reload
    bad = client.post(f"{url}/import", data={"csrf_token": _token(client)}, files={"file": ("r.jsonl", b'{"id": "2"}')}, follow_redirects=False)
    assert bad.status_code == 422 and "line 1: field &#39;image&#39;: Field required" in bad.text


def test_splits_redirect_and_errors_speak_the_form_s_language(client, admin):
    url = f"/projects/{admin}"
    token = _token(client, f"{url}/export")
    r = client.post(f"{url}/splits", data={"csrf_token": token, "method": "counts", "sizes": "train=1, test=1", "seed": "3"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"{url}/export"
    page = client.get(f"{url}/export").text
    assert "Saved split version 1: train 0, test 0." in page and "Saved split version" not in client.get(f"{url}/export").text

    cases = [
        ({"method": "ratios", "sizes": "Train=0.5, test=0.5"}, "Splits: split name &#39;Train&#39;: use lower-case letters"),
        ({"method": "ratios", "sizes": ""}, "give either ratios (e.g. train 0.8, test 0.2) or counts"),
        ({"method": "ratios", "sizes": "train=0.8, test=0.2", "held_field": "topic"}, "Hold-out values: name one or more values"),
        ({"method": "ratios", "sizes": "train=0.8, test=0.2", "held_field": "topic", "held_values": "food", "held_split": "Out!"},
         "Hold-out split: split name &#39;Out!&#39;"),
        ({"method": "ratios", "sizes": "train=0.8, test=0.2", "stratify": "a b"}, "Stratify by field: field &#39;a b&#39;"),
    ]
    for fields, message in cases:
        bad = client.post(f"{url}/splits", data={"csrf_token": token, "seed": "7", **fields}, follow_redirects=False)
        assert bad.status_code == 422 and message in bad.text, (fields, bad.text[-3000:])
        assert "field &#39;record&#39;" not in bad.text and "Value error" not in bad.text
        for value in fields.values():
            if value not in ("ratios", ""):
                assert f'value="{value}"' in bad.text, value
        assert 'value="7"' in bad.text and '<details open id="split-form">' in bad.text


def test_exports_redirect_and_a_refused_export_keeps_the_form(client, admin):
    url = f"/projects/{admin}"
    token = _token(client, f"{url}/export")
    r = client.post(f"{url}/exports", data={"csrf_token": token, "format": "jsonl", "version": "none"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"{url}/export"
    assert re.search(r"Export \d+ \(jsonl\) is queued", client.get(f"{url}/export").text)
    bad = client.post(f"{url}/exports", data={"csrf_token": token, "format": "parquet", "version": "none", "target": "/etc"}, follow_redirects=False)
    assert bad.status_code == 422 and "s3://bucket/prefix" in bad.text
    assert 'value="/etc"' in bad.text and '<option value="parquet" selected>' in bad.text and '<option value="none" selected>' in bad.text


def _formats(client, project_id) -> list[str]:
    page = client.get(f"/projects/{project_id}/export").text
    select = re.search(r'<select name="format">(.*?)</select>', page, re.S).group(1)
    return re.findall(r'<option value="([^"]+)"', select)


def test_coco_is_offered_only_where_the_dataset_has_boxes(client, app, api, admin):
    visargs = visargs_project(client, api)
    wikido = wikido_project(client, api, n=2)
    assert "coco" in _formats(client, visargs)
    assert "coco" not in _formats(client, wikido) and "coco" not in _formats(client, admin)
    assert _formats(client, admin) == ["published", "jsonl", "parquet"]
