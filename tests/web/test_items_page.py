"""The items page of a project: filters (stage, status, annotator, text), keyset pages, roles, escaping."""

from __future__ import annotations

import html
import re

import pytest
import sqlalchemy as sa

from app.db import transaction
from app.models import Item
from tests import factories
from tests.conftest import login


@pytest.fixture
def project(app, settings, storage, tmp_path):
    """120 generic items in a two-stage project: it-0..it-4 passed stage 1 (ann1 did 0-2, ann2 did 3-4),
    it-5 waits for review, it-6 is discarded, it-7's question holds markup."""
    with transaction(app.state.sessions) as s:
        factories.user(s, "boss", "admin")
        factories.user(s, "rev", "reviewer")
        ann1, ann2 = factories.user(s, "ann1"), factories.user(s, "ann2")
        factories.user(s, "idle")
        project_id, (first, second) = factories.project(s, ["generic.choice", "generic.choice"], name="Herons")
        factories.choice_items(s, settings, storage, project_id, 120, tmp_path)
        for user in (ann1, ann1, ann1, ann2, ann2):
            factories.annotation(s, first, user, {"choice": "a"})
        ids = {ext: i for ext, i in s.execute(sa.select(Item.external_id, Item.id).where(Item.project_id == project_id))}
        s.execute(sa.update(Item).where(Item.id == ids["it-5"]).values(status="review"))
        s.execute(sa.update(Item).where(Item.id == ids["it-6"]).values(status="discarded"))
        s.execute(sa.update(Item).where(Item.id == ids["it-7"]).values(data=Item.data.op("||")(sa.literal({"question": "A <script>x()</script> heron"}, Item.data.type))))
    return {"id": project_id, "stages": (first, second), "ids": ids, "ann": (ann1, ann2)}


def _rows(page: str) -> list[str]:
    """The external ids listed, in order."""
    return re.findall(r'<a href="/items/\d+/history">([^<]+)</a>', page)


def _get(client, project, **params):
    r = client.get(f"/projects/{project['id']}/items", params=params)
    assert r.status_code == 200, r.text
    return r.text


def _link(page: str, rel: str) -> str | None:
    m = re.search(rf'<a href="([^"]+)" rel="{rel}"', page)
    return html.unescape(m.group(1)) if m else None


def test_filters_by_stage_status_annotator_and_text(client, project):
    login(client, "rev")
    first, second = project["stages"]
    ann1, ann2 = project["ann"]
    assert _rows(_get(client, project, stage=second)) == [f"it-{i}" for i in range(5)]
    assert _rows(_get(client, project, status="review")) == ["it-5"]
    assert _rows(_get(client, project, status="discarded")) == ["it-6"]
    assert len(_rows(_get(client, project, stage=first, status="active"))) == 50  # a full first page
    assert _rows(_get(client, project, annotator=ann1)) == ["it-0", "it-1", "it-2"]
    assert _rows(_get(client, project, annotator=ann2, stage=second)) == ["it-3", "it-4"]
    assert _rows(_get(client, project, q="HERON")) == ["it-7"]  # any text of the item, any case
    assert _rows(_get(client, project, q="it-11")) == ["it-11", "it-110", "it-111", "it-112", "it-113", "it-114", "it-115", "it-116", "it-117", "it-118", "it-119"]
    assert _rows(_get(client, project, q="100%")) == []  # % and _ are literal characters
    page = _get(client, project, annotator=ann1, status="active", stage=second)
    assert 'selected>ann1</option>' in page and '<option value="active" selected>' in page
    assert "ann1" in re.search(r'<tr data-item="%d">.*?</tr>' % project["ids"]["it-0"], page, re.S).group(0)


def test_pages_cover_every_item_once_and_stay_put_while_items_move(client, app, project):
    login(client, "boss")
    seen, url, pages = [], f"/projects/{project['id']}/items", 0
    page = client.get(url).text
    assert _link(page, "prev") is None
    while True:
        seen += _rows(page)
        pages += 1
        nxt = _link(page, "next")
        if not nxt:
            break
        page = client.get(url + nxt).text
    assert pages == 3 and len(seen) == 120 and len(set(seen)) == 120
    assert seen == sorted(seen, key=lambda e: project["ids"][e])
    # Back from the last page gives the second page again.
    assert _rows(client.get(url + _link(page, "prev")).text) == seen[50:100]

    # Filtered by status, the first page's items move on; the next page still starts right after it.
    first_page = _get(client, project, status="active", stage=project["stages"][0])
    listed = _rows(first_page)
    with transaction(app.state.sessions) as s:
        s.execute(sa.update(Item).where(Item.id.in_([project["ids"][e] for e in listed[:10]])).values(status="discarded"))
    second_page = _rows(client.get(url + _link(first_page, "next")).text)
    active = [e for e in seen if e not in listed and e not in ("it-0", "it-1", "it-2", "it-3", "it-4", "it-5", "it-6")]
    assert second_page == active[:50]
    assert not set(second_page) & set(listed)


def test_annotators_get_403_and_reviewers_find_the_page_from_the_project(client, project):
    login(client, "ann1")
    assert client.get(f"/projects/{project['id']}/items").status_code == 403
    assert "/items\"" not in client.get(f"/projects/{project['id']}").text
    login(client, "rev")
    assert f'href="/projects/{project["id"]}/items"' in client.get(f"/projects/{project['id']}").text


def test_item_text_is_escaped_and_a_bad_filter_says_why(client, project):
    login(client, "rev")
    page = _get(client, project, q="<script>")
    assert _rows(page) == ["it-7"] and "<script>x()" not in page and "&lt;script&gt;x()&lt;/script&gt;" in page
    assert 'value="&lt;script&gt;"' in page
    bad = client.get(f"/projects/{project['id']}/items", params={"status": "lost"})
    assert bad.status_code == 422 and "Unknown status" in bad.text
    assert client.get("/projects/999999/items").status_code == 404


def test_a_text_search_after_the_largest_ids_finds_nothing_instead_of_failing(client, project):
    """Where a search's page stops is held to bigint's range (found by the API fuzzer: a 500)."""
    login(client, "rev")
    for after in (2**63 - 2, 2**63 - 1):
        page = _get(client, project, q="heron", after=after)
        assert _rows(page) == [] and _link(page, "next") is None
    with transaction(client.app.state.sessions) as s:
        token = factories.token(s, s.scalar(sa.text("SELECT id FROM users WHERE username = 'boss'")))
    r = client.get(f"/api/v1/projects/{project['id']}/items", params={"text": "heron", "after": 2**63 - 2},
                   headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200 and r.json()["items"] == [] and r.json()["next"] is None


def test_a_text_search_for_a_nul_character_says_why_instead_of_failing(client, project):
    """PostgreSQL takes no NUL in a text parameter (found by the API fuzzer: a 500)."""
    login(client, "rev")
    page = client.get(f"/projects/{project['id']}/items", params={"q": "he\x00ron"})
    assert page.status_code == 422 and "NUL character" in page.text
    with transaction(client.app.state.sessions) as s:
        token = factories.token(s, s.scalar(sa.text("SELECT id FROM users WHERE username = 'boss'")))
    r = client.get(f"/api/v1/projects/{project['id']}/items", params={"text": "\x01\x00\nu"}, headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 422 and "NUL character" in r.json()["detail"]


def test_a_text_search_reads_a_window_of_items_per_page_and_searches_on(app, project):
    from app.services.imports import items

    ids = project["ids"]
    f = items.ItemFilter(text="heron")  # it-7 only
    with transaction(app.state.sessions) as s:
        first = items.list_items(s, project["id"], f, window=5)  # it-0..it-4: nothing yet
        assert first.rows == [] and first.searched_to == ids["it-4"] and first.after == ids["it-4"] and first.before is None
        second = items.list_items(s, project["id"], f, after=first.after, window=5)
        assert [r.external_id for r in second.rows] == ["it-7"] and second.searched_to == ids["it-9"]
        assert second.before == ids["it-7"]
        back = items.list_items(s, project["id"], f, before=second.before, window=5)  # it-2..it-6
        assert back.rows == [] and back.searched_to == ids["it-2"] and back.before == ids["it-2"] and back.after == ids["it-6"]
        assert [r.external_id for r in items.list_items(s, project["id"], items.ItemFilter(text="it-1"), window=5, limit=3).rows] == ["it-1"]
        whole = items.list_items(s, project["id"], items.ItemFilter(text="it-"), window=5, limit=3)  # a full page within the window
        assert [r.external_id for r in whole.rows] == ["it-0", "it-1", "it-2"] and whole.searched_to is None and whole.after == ids["it-2"]
