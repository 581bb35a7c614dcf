"""What the admin's project and export pages say: counts that agree, sizes as people read them, a
sentence instead of an empty chart, a refused import's note on its file pickers, the split form
open where it is needed, and the gold demo's description matching its items."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from app.db import transaction
from app.models import Project
from app.services.demo import demo_quality
from tests import factories
from tests.conftest import csrf_from, login, png_bytes, zip_bytes


@pytest.fixture
def boss(app, client):
    with transaction(app.state.sessions) as s:
        factories.user(s, "boss", "admin")
    login(client, "boss")


def test_an_empty_project_says_so_instead_of_drawing_an_empty_chart(app, client, boss, settings, tmp_path):
    with transaction(app.state.sessions) as s:
        project_id, _ = factories.project(s, "wikido.verify", name="Empty")
    page = client.get(f"/projects/{project_id}").text
    assert "No items yet: import some" in page and 'class="legend"' not in page and "<svg" not in page

    with transaction(app.state.sessions) as s:
        factories.items(s, settings, app.state.storage, project_id, [
            {"image_id": 1, "orig_cap": "A square.", "caption": "A red square.", "image": "a.png", "topic": "art"}], {"a.png": png_bytes()}, tmp_path)
    page = client.get(f"/projects/{project_id}").text
    assert "No finished items yet" in page and "No items yet" not in page and 'class="legend"' not in page


def test_a_stage_bar_counts_kept_and_discarded_as_the_project_line_does(app, client, boss, settings, tmp_path):
    """WikiDO's Wrong discards an item: the stage's "finished" holds it, the project's "done" does not."""
    with transaction(app.state.sessions) as s:
        project_id, (stage_id,) = factories.project(s, "wikido.verify", name="Verify")
        records = [{"image_id": i, "orig_cap": "A square.", "caption": "A red square.", "image": "a.png", "topic": "art"} for i in range(4)]
        factories.items(s, settings, app.state.storage, project_id, records, {"a.png": png_bytes()}, tmp_path)
        annotator = factories.user(s, "ann")
        for verdict in ("correct", "correct", "wrong"):
            factories.annotation(s, stage_id, annotator, {"verdict": verdict})
    page = client.get(f"/projects/{project_id}").text
    assert "4 items · 2 done · 1 discarded" in page
    bar = re.search(r'<div class="stage-bar".*?</div>', page, re.S).group(0)
    assert re.search(r'<span class="finished">3</span> / 4 finished \(<span class="kept">2</span> kept · 1 discarded\)', bar), bar


def test_a_refused_import_asks_for_the_files_again_and_names_sizes_readably(app, client, boss):
    app.state.settings = app.state.settings.model_copy(update={"max_image_bytes": 30 * 1024 * 1024})
    with transaction(app.state.sessions) as s:
        project_id, _ = factories.project(s, name="Shapes")
    page = client.get(f"/projects/{project_id}").text
    assert "images up to 30 MiB each" in page and "31457280" not in page and "31,457,280" not in page
    assert "Choose the files again" not in page

    bad = b'{"id": "a", "image": "missing.png", "question": "Q"}'
    r = client.post(f"/projects/{project_id}/import", data={"csrf_token": csrf_from(page)},
                    files={"file": ("items.jsonl", bad), "images": ("i.zip", zip_bytes({"a.png": png_bytes()}))})
    assert r.status_code == 422 and "missing.png" in r.text
    assert "Nothing was imported. Choose the files again" in r.text
    assert re.search(r'<input type="file" name="file"[^>]*aria-describedby="choose-again"', r.text)
    assert re.search(r'<input type="file" name="images"[^>]*aria-describedby="choose-again"', r.text)


def test_an_oversized_image_is_refused_in_mebibytes(app, client, boss):
    app.state.settings = app.state.settings.model_copy(update={"max_image_bytes": 1024})
    with transaction(app.state.sessions) as s:
        project_id, _ = factories.project(s, name="Big")
    token = csrf_from(client.get(f"/projects/{project_id}").text)
    big = png_bytes(size=(400, 300))
    r = client.post(f"/projects/{project_id}/import", data={"csrf_token": token},
                    files={"file": ("items.jsonl", b'{"id": "a", "image": "a.png", "question": "Q"}'), "images": ("i.zip", zip_bytes({"a.png": big}))})
    assert r.status_code == 422 and "the limit is 1 KiB" in r.text and "1,024" not in r.text


def test_the_split_form_is_open_when_finished_items_wait_for_a_split(app, client, boss, settings, tmp_path):
    with transaction(app.state.sessions) as s:
        project_id, (stage_id,) = factories.project(s, name="Split me")
        factories.choice_items(s, settings, app.state.storage, project_id, 3, tmp_path)
    opened = re.compile(r'<details open id="split-form">')
    assert not opened.search(client.get(f"/projects/{project_id}/export").text)  # nothing finished: nothing to split
    with transaction(app.state.sessions) as s:
        factories.annotation(s, stage_id, factories.user(s, "ann"), {"choice": "a"})
    page = client.get(f"/projects/{project_id}/export").text
    assert opened.search(page)
    saved = client.post(f"/projects/{project_id}/splits", data={"csrf_token": csrf_from(page), "method": "ratios", "sizes": "train=1"})
    assert saved.status_code == 200, saved.text
    assert "<details id=\"split-form\">" in client.get(f"/projects/{project_id}/export").text  # a split exists: closed again


def test_the_gold_demo_describes_the_items_its_page_counts(app, client, boss, settings, tmp_path):
    with transaction(app.state.sessions) as s:
        demo_quality.gold_demo(s, settings, app.state.storage, tmp_path)
        project_id = s.scalar(sa.select(Project.id).where(Project.name == demo_quality.GOLD_DEMO))
    page = client.get(f"/projects/{project_id}").text
    shown = int(re.search(r"<p>(\d+) items · ", page).group(1))
    assert f"{shown} items to annotate, and 8 gold items" in page and "forty" not in page.lower()
