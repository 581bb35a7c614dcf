"""Reviewers see an item as its annotators saw it, and each answer as its workflow renders it, never as JSON."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
import sqlalchemy as sa

from app.datasets import all_workflows
from app.datasets.workflow import ItemContext
from app.db import transaction
from app.models import Item
from app.services.imports import imports
from tests import factories
from tests.conftest import login, make_user
from tests.staged import ANSWERS, item_at, text_shown


def _words(html: str) -> str:
    """The page's text, tags left out."""
    return unescape(re.sub(r"<[^>]+>", "", html))


def _no_json(html: str) -> None:
    """Nothing of the page dumps a payload as JSON (the closed editor of a final aside)."""
    html = html.split("<main", 1)[1]
    html = re.sub(r'<details class="review-json".*?</details>', "", html, flags=re.S)
    html = re.sub(r"<script.*?</script>|<style.*?</style>", "", html, flags=re.S)
    assert not re.search(r"\{\s*(&#34;|&quot;|\")", html), "the page shows JSON"
    assert "&#34;:" not in html and '":' not in html


@pytest.mark.parametrize("workflow", [t.name for t in all_workflows()])
def test_every_workflow_shows_its_item_and_answers_to_reviewers(client, app, settings, tmp_path, workflow):
    stage_id, item_id, assets = item_at(app.state.sessions, settings, app.state.storage, tmp_path, workflow)
    with transaction(app.state.sessions) as s:
        record = s.get(Item, item_id).data
    make_user(app.state.sessions, "rita", "reviewer")
    login(client, "rita")
    text = text_shown(record)
    image = f"/assets/{next(iter(assets.values()))}/thumb" if assets else record.get("image")
    _, _, shown = ANSWERS[workflow]

    screen = client.get(f"/stages/{stage_id}/review/{item_id}").text
    assert text in _words(screen) and image in screen
    assert shown in screen and screen.count('class="review-annotation"') == 2
    assert 'class="differs' in screen or "differs\"" in screen
    _no_json(screen)
    assert '<details class="review-json"' in screen and "<details class=\"review-json\" open" not in screen

    history = client.get(f"/items/{item_id}/history").text
    assert text in _words(history) and image in history and shown in history
    assert history.count("annotation (revision 1)") >= 2
    _no_json(history)


def test_markup_in_an_items_and_an_answers_text_is_shown_as_text(client, app, settings, tmp_path):
    record = {
        "image_id": "wd-x", "image": "https://example.org/x.png", "orig_cap": "A <i>cat</i> & a dog.",
        "caption": "A <b>cat</b> on a <script>mat</script>.",
    }
    sessions = app.state.sessions
    with transaction(sessions) as s:
        project_id, (stage_id,) = factories.project(s, "wikido.verify", overlap=2)
        source = imports.ImageSource(settings, app.state.storage, base=tmp_path)
        imports.import_items(s, project_id, json.dumps(record).encode(), "x.jsonl", settings=settings, storage=app.state.storage, images=source)
        source.close()
        u1, u2 = factories.user(s, "m1"), factories.user(s, "m2")
        factories.annotation(s, stage_id, u1, {"verdict": "correct"})
        factories.annotation(s, stage_id, u2, {"verdict": "hallucinated", "caption": "A <b>cat</b> <u>here</u>."})
        item_id = s.scalar(sa.select(Item.id).where(Item.project_id == project_id))
    make_user(sessions, "rita", "reviewer")
    login(client, "rita")
    for url in (f"/stages/{stage_id}/review/{item_id}", f"/items/{item_id}/history"):
        page = client.get(url).text
        assert "<b>cat</b>" not in page and "<script>mat" not in page and "<u>here" not in page and "<i>cat" not in page
        assert "&lt;b&gt;" in page and "&lt;i&gt;cat&lt;/i&gt; &amp; a dog." in page and "here" in page


@pytest.mark.parametrize("workflow, kind, payload, shown", [
    ("colorswap.filter", "colorswap.itm", {"scores": [[0.9, 0.1], [0.2, 0.3], [0.1, 0.8], [0.3, 0.2], [0.2, 0.1], [0.1, 0.2]]},
     "The model&#39;s preselection"),
    ("wikido.verify", "wikido.unsupported", {"spans": [[3, 6]]}, '<u title="not supported by the reference text">pale</u>'),
    ("visargs.grounding", "visargs.boxes", {"boxes": [{"vp": 0, "startX": 5, "startY": 6, "w": 70, "h": 30}]}, "70 × 30"),
])
def test_the_history_shows_suggestions_as_their_workflow_renders_them(client, app, settings, tmp_path, workflow, kind, payload, shown):
    from app.services.annotation import suggestions

    stage_id, item_id, _ = item_at(app.state.sessions, settings, app.state.storage, tmp_path, workflow)
    with transaction(app.state.sessions) as s:
        suggestions.store(s, item_id, stage_id, kind, "model-x", payload, model_version="1")
    make_user(app.state.sessions, "rita", "reviewer")
    login(client, "rita")
    history = client.get(f"/items/{item_id}/history").text
    assert f"suggestion {kind}" in history and "model-x 1" in history and shown in history
    _no_json(history)


def test_a_task_without_a_view_shows_its_fields_as_readable_text():
    from app.datasets.workflow import Workflow
    from app.web.templating import templates

    view = Workflow().view_item(ItemContext({"id": "x", "image": "https://example.org/a.png", "caption": "A <b>dog</b>", "tags": ["one", "two"], "meta": {"n": 3, "ok": True}}))
    assert [i["src"]["full"] for i in view["images"]] == ["https://example.org/a.png"] and "image" not in view["fields"]
    macros = templates.env.get_template("datasets/_view.html").module
    html = str(macros.item(view)) + str(macros.answer(Workflow().view_answer(ItemContext({}), {"labels": ["a", "b"], "note": None})))
    assert "A &lt;b&gt;dog&lt;/b&gt;" in html and '<li dir="auto">one</li><li dir="auto">two</li>' in html and '<dd dir="auto">yes</dd>' in html
    assert '<li dir="auto">a</li><li dir="auto">b</li>' in html and "—" in html
    assert "{" not in html and "[" not in html and "&#34;" not in html
