"""Pages and API end to end through the app: projects, import, annotate without JavaScript, images."""

from __future__ import annotations

import re

import pytest

from app.db import transaction
from tests import factories
from tests.conftest import (
    csrf_from,
    led_to,
    login,
    make_choice_project,
    make_token,
    png_bytes,
    start_annotating,
    zip_bytes,
)


@pytest.fixture
def admin(app):
    with transaction(app.state.sessions) as s:
        factories.user(s, "boss", "admin")
    return "boss"


@pytest.fixture
def annotator(app):
    with transaction(app.state.sessions) as s:
        return factories.user(s, "ann", "annotator")


def user_id(app, username: str) -> int:
    from app.services.users.users import user_by_name

    with transaction(app.state.sessions) as s:
        return user_by_name(s, username).id


def test_admin_creates_a_project_and_imports_through_the_pages(client, admin):
    login(client, admin)
    token = csrf_from(client.get("/").text)
    r = client.post("/projects", data={"csrf_token": token, "name": "Birds", "workflow": "generic.choice", "overlap": 1, "choices": "yes, no"}, follow_redirects=False)
    assert r.status_code == 303
    url = r.headers["location"]
    records = b'{"id": "1", "image": "x/a.png", "question": "A bird?"}\n{"id": "2", "image": "x/a.png"}'
    r = client.post(
        f"{url}/import",
        data={"csrf_token": token},
        files={"file": ("birds.jsonl", records), "images": ("imgs.zip", zip_bytes({"x/a.png": png_bytes()}))},
    )
    assert r.status_code == 200 and "Imported 2 items (1 images, 1 new)" in r.text
    assert "0</span> / 2 finished" in client.get(url).text


def test_failed_import_page_lists_errors_and_imports_nothing(client, admin):
    login(client, admin)
    token = csrf_from(client.get("/").text)
    r = client.post("/projects", data={"csrf_token": token, "name": "B", "workflow": "generic.choice", "choices": "a,b"}, follow_redirects=False)
    url = r.headers["location"]
    r = client.post(f"{url}/import", data={"csrf_token": token}, files={"file": ("b.jsonl", b'{"id": "1", "image": "a.png"}\n{"id": 1}')})
    assert r.status_code == 422
    assert "nothing was imported" in r.text and "line 2: field &#39;image&#39;: Field required" in r.text
    assert "0</span> / 0 finished" in r.text


def test_progress_fragment_for_htmx_polling(client, app, settings, admin):
    project_id, _ = make_choice_project(app.state.sessions, settings, app.state.storage, 3)
    login(client, admin)
    r = client.get(f"/projects/{project_id}", headers={"HX-Request": "true", "HX-Target": "progress"})
    assert r.text.lstrip().startswith('<section id="progress"') and "<html" not in r.text
    assert "0</span> / 3 finished" in r.text and "HX-Request" in r.headers["vary"]


def test_create_project_form_keeps_input_on_error(client, admin):
    login(client, admin)
    token = csrf_from(client.get("/").text)
    r = client.post("/projects", data={"csrf_token": token, "name": "Keep me", "workflow": "no.such", "choices": "p, q"})
    assert r.status_code == 422 and "Unknown workflow" in r.text
    assert 'value="Keep me"' in r.text and 'value="p, q"' in r.text


def test_annotating_with_plain_forms(client, app, settings, annotator):
    project_id, stage_id = make_choice_project(app.state.sessions, settings, app.state.storage, 2, name="plain")
    login(client, "ann")
    r = start_annotating(client, stage_id, follow_redirects=False)
    screen_url = r.headers["location"]
    page = client.get(screen_url)
    assert page.status_code == 200 and 'name="choice" value="b"' in page.text
    # Reopening the stage resumes the same item (a closed tab loses nothing).
    assert client.get(f"/stages/{stage_id}/annotate", follow_redirects=False).headers["location"] == screen_url
    # The screen comes whole: the stage's progress bar is in it, no request after it.
    assert '<div id="stage-bar"><div class="stage-bar"' in page.text and "0</span> / 2 finished" in page.text
    assert "hx-get" not in page.text.split('<form id="annotation-form"')[0]
    key = re.search(r'name="idempotency_key" value="([^"]+)"', page.text).group(1)
    form = {"csrf_token": csrf_from(page.text), "idempotency_key": key, "choice": "b"}
    bad = client.post(f"{screen_url}/submit", data={**form, "choice": "zzz"})
    assert bad.status_code == 422 and "not one of the choices" in bad.text
    r = client.post(f"{screen_url}/submit", data=form, follow_redirects=False)
    # Straight to the next item's screen, leased and rendered in the same request (no redirect, no
    # second request); the page names its own address, never cached; a double click leads to the same one.
    next_url = led_to(r)
    assert r.status_code == 200 and next_url.startswith("/assignments/") and next_url != screen_url
    assert r.headers["cache-control"] == "no-store" and f'action="{next_url}/submit"' in r.text
    again = client.post(f"{screen_url}/submit", data=form, follow_redirects=False)  # a double click
    assert led_to(again) == next_url
    assert client.get(f"/stages/{stage_id}/annotate", follow_redirects=False).headers["location"] == next_url
    # The last item is on screen: nothing is left to name for prefetching.
    assert 'rel="prefetch"' not in r.text
    # Counts are shared for a few seconds, but never hide the annotator's own submit.
    assert "1</span> / 2 finished" in r.text and "1</span> / 2 finished" in client.get(next_url).text
    detail = client.get(f"/projects/{project_id}").text
    assert "1</span> / 2 finished" in detail


@pytest.mark.committed
def test_a_page_submit_commits_the_answer_before_it_claims_and_renders_the_next_item(client, app, settings, annotator, monkeypatch):
    """Storing the answer and leading to the next screen are two transactions in one request: while
    the next screen is made, the answer is visible to everyone and the counter rows its triggers
    updated are free for the other annotators' submits (two transactions in annotate_pages.submit)."""
    import sqlalchemy as sa

    from app.web import annotate_pages

    _, stage_id = make_choice_project(app.state.sessions, settings, app.state.storage, 2, name="then")
    seen = []
    original = annotate_pages._next_screen

    def looking(request, session, stage, user):
        with app.state.engine.connect() as other:
            counted = other.execute(sa.text("SELECT count(*) FROM annotations a JOIN assignments s ON s.id = a.assignment_id"
                                            " WHERE s.stage_id = :s"), {"s": stage}).scalar()
            # NOWAIT: fails at once if the submit's transaction still held the stage's counter rows.
            locked = other.execute(sa.text("SELECT count(*) FROM (SELECT 1 FROM stage_counts WHERE stage_id = :s"
                                           " FOR UPDATE NOWAIT) x"), {"s": stage}).scalar()
            other.rollback()
        seen.append((counted, locked))
        return original(request, session, stage, user)

    monkeypatch.setattr(annotate_pages, "_next_screen", looking)
    login(client, "ann")
    screen_url = start_annotating(client, stage_id, follow_redirects=False).headers["location"]
    page = client.get(screen_url)
    key = re.search(r'name="idempotency_key" value="([^"]+)"', page.text).group(1)
    r = client.post(f"{screen_url}/submit", data={"csrf_token": csrf_from(page.text), "idempotency_key": key, "choice": "a"})
    assert r.status_code == 200 and led_to(r) != screen_url
    assert seen == [(1, 1)]


def test_a_page_submit_whose_opened_at_is_absurd_keeps_no_time(client, app, settings, annotator):
    """The screen's hidden opened_at, forged: -1e308 would make 1e308 seconds and -inf infinity; the
    answer is kept, its time is not known. A real one gives the seconds since."""
    import time

    import sqlalchemy as sa

    from app.models import Annotation
    from app.services.annotation import annotation

    _, stage_id = make_choice_project(app.state.sessions, settings, app.state.storage, 6, name="clock")  # a submit leases the next item too
    login(client, "ann")
    spent = []
    for opened_at in ("-1e308", "-inf", str(time.time() - 5)):
        with transaction(app.state.sessions) as s:
            assignment_id = annotation.claim(s, stage_id, annotator).assignment_id
        page = client.get(f"/assignments/{assignment_id}").text
        form = {"csrf_token": csrf_from(page), "idempotency_key": f"clock-{opened_at}", "opened_at": opened_at, "choice": "a"}
        assert client.post(f"/assignments/{assignment_id}/submit", data=form, follow_redirects=False).status_code in (200, 303)
        with transaction(app.state.sessions) as s:
            spent.append(s.scalar(sa.select(Annotation.seconds_spent).where(Annotation.assignment_id == assignment_id)))
    assert spent[:2] == [None, None] and 5 <= spent[2] < 60


def test_a_refused_page_submit_keeps_nothing_it_wrote_and_shows_the_screen_with_the_error(client, app, settings, annotator, monkeypatch):
    """A submit refused after it wrote (no write of the service does so today, a later one might):
    its transaction is rolled back whole, and the screen comes again with the error and the key."""
    import sqlalchemy as sa

    from app.errors import Invalid
    from app.models import Assignment
    from app.services.annotation import annotation

    _, stage_id = make_choice_project(app.state.sessions, settings, app.state.storage, 2, name="refused")
    login(client, "ann")
    screen_url = start_annotating(client, stage_id, follow_redirects=False).headers["location"]
    page = client.get(screen_url)
    key = re.search(r'name="idempotency_key" value="([^"]+)"', page.text).group(1)
    assignment_id = int(screen_url.rsplit("/", 1)[1])
    lease = sa.select(Assignment.lease_until).where(Assignment.id == assignment_id)
    with transaction(app.state.sessions) as s:
        before = s.scalar(lease)

    def write_then_refuse(session, assignment, *args, **kwargs):
        session.execute(sa.update(Assignment).where(Assignment.id == assignment).values(lease_until=sa.func.now() + sa.text("interval '9 days'")))
        raise Invalid("Refused after a write.")

    monkeypatch.setattr(annotation, "submit", write_then_refuse)
    r = client.post(f"{screen_url}/submit", data={"csrf_token": csrf_from(page.text), "idempotency_key": key, "choice": "b"})
    assert r.status_code == 422 and "Refused after a write." in r.text
    assert f'name="idempotency_key" value="{key}"' in r.text and f'action="{screen_url}/submit"' in r.text
    assert '<div class="stage-bar"' in r.text
    with transaction(app.state.sessions) as s:
        assert s.scalar(lease) == before


def test_a_submitted_item_opened_again_says_so_and_takes_a_revision(client, app, settings, annotator):
    import sqlalchemy as sa

    from app.models import Annotation

    _, stage_id = make_choice_project(app.state.sessions, settings, app.state.storage, 2, overlap=2, name="again")
    login(client, "ann")
    screen_url = start_annotating(client, stage_id, follow_redirects=False).headers["location"]
    page = client.get(screen_url)
    first_key = re.search(r'name="idempotency_key" value="([^"]+)"', page.text).group(1)
    form = {"csrf_token": csrf_from(page.text), "choice": "a"}
    led_to(client.post(f"{screen_url}/submit", data={**form, "idempotency_key": first_key}, follow_redirects=False))

    again = client.get(screen_url)
    assert again.headers["cache-control"] == "no-store" and "You submitted this item" in again.text
    assert "store a new revision" in again.text  # the second annotator has yet to answer: still open
    assert 'name="choice" value="a" data-key="1" checked' in again.text and "/draft" not in again.text
    # The old page's key with another answer: refused, with a message and a new key on the page.
    refused = client.post(f"{screen_url}/submit", data={**form, "choice": "b", "idempotency_key": first_key})
    assert refused.status_code == 409 and "already submitted this item with another answer" in refused.text
    new_key = re.search(r'name="idempotency_key" value="([^"]+)"', refused.text).group(1)
    assert new_key != first_key
    led_to(client.post(f"{screen_url}/submit", data={**form, "choice": "b", "idempotency_key": new_key}, follow_redirects=False))
    with transaction(app.state.sessions) as s:
        assert s.execute(sa.select(Annotation.revision, Annotation.payload).order_by(Annotation.id)).all() == [
            (1, {"choice": "a"}), (2, {"choice": "b"})]
        factories.annotation(s, stage_id, factories.user(s, "second"), {"choice": "a"})  # it waits for review now
    moved_on = client.get(screen_url).text
    assert "It has moved on" in moved_on and "store a new revision" not in moved_on


def test_another_annotators_item_is_answered_as_a_missing_one_on_every_route(client, app, settings, annotator):
    """Someone else's assignment and one that does not exist get the same 404 and the same body, on
    the pages and in the API, so that assignment ids cannot be enumerated."""
    import sqlalchemy as sa

    from app.models import Annotation, Assignment

    _, stage_id = make_choice_project(app.state.sessions, settings, app.state.storage, 2, name="mine")
    with transaction(app.state.sessions) as s:
        theirs = factories.user(s, "theirs")
    login(client, "theirs")
    screen_url = start_annotating(client, stage_id, follow_redirects=False).headers["location"]
    token = csrf_from(client.get(screen_url).text)
    client.post("/logout", data={"csrf_token": token})
    login(client, "ann")
    token = csrf_from(client.get("/").text)
    form = {"csrf_token": token, "idempotency_key": "k", "choice": "a"}
    api = {"Authorization": f"Bearer {make_token(app.state.sessions, annotator)}"}
    missing_url = "/assignments/999999999"

    def answers(url: str) -> list[tuple[int, str]]:
        got = [client.get(url)] + [client.post(f"{url}/{action}", data=form) for action in ("submit", "skip", "draft", "check")]
        got += [client.post(f"/api/v1{url}/{action}", headers=api, json={"payload": {"choice": "a"}, "idempotency_key": "k"})
                for action in ("submit", "skip", "release")]
        got.append(client.put(f"/api/v1{url}/draft", headers=api, json={"payload": {"choice": "a"}}))
        return [(r.status_code, r.text) for r in got]

    theirs_answers, missing_answers = answers(screen_url), answers(missing_url)
    assert [status for status, _ in theirs_answers] == [404] * 9
    assert theirs_answers == missing_answers
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Annotation)) == 0
        assert s.scalars(sa.select(Assignment.status).where(Assignment.annotator_id == theirs)).all() == ["active"]


def test_the_next_items_images_are_named_ahead_without_a_lease(client, app, settings, annotator):
    import sqlalchemy as sa

    from app.models import Assignment, Item

    project_id, stage_id = make_choice_project(app.state.sessions, settings, app.state.storage, 3, name="ahead")
    login(client, "ann")
    with transaction(app.state.sessions) as s:
        first, second, third = s.execute(sa.select(Item.id, Item.assets).where(Item.project_id == project_id).order_by(Item.id)).all()
        s.execute(sa.update(Item).where(Item.id == second.id).values(assets={"/image": "b" * 64}))
    screen = start_annotating(client, stage_id, follow_redirects=False).headers["location"]
    page = client.get(screen).text
    # The screen of the first item names the second's image (the one a claim would give next) for
    # the browser to fetch while the annotator works, in the screen itself: no request after it.
    assert re.findall(r'<link rel="prefetch"[^>]*>', page) == [f'<link rel="prefetch" as="image" href="/assets/{"b" * 64}/thumb">']
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Assignment)) == 1  # only the item on screen is held
    # Once the second is held by someone else, the first's screen names the third instead.
    from app import queue

    with transaction(app.state.sessions) as s:
        assert queue.claim_next(s, stage_id, factories.user(s, "other")).item_id == second.id
    page = client.get(screen).text
    assert re.findall(r'<link rel="prefetch"[^>]*>', page) == [f'<link rel="prefetch" as="image" href="/assets/{third.assets["/image"]}/thumb">']


def test_nothing_left_here_leads_to_the_stage_where_work_waits(client, app, settings, annotator, tmp_path):
    with transaction(app.state.sessions) as s:
        project_id, (first, second) = factories.project(s, ["generic.choice", "generic.choice"], name="two <b>steps</b>", config_for_all=True)
        factories.choice_items(s, settings, app.state.storage, project_id, 2, tmp_path)
        other = factories.user(s, "other")
        for _ in range(2):
            factories.annotation(s, first, other, {"choice": "a"})
    login(client, "ann")
    page = start_annotating(client, first).text  # followed to the page that says so
    assert "Nothing left for you here" in page and "Work waits in" in page
    # The way on is a button that posts (only a POST leases), focused so that Enter takes it.
    assert re.search(rf'action="/stages/{second}/annotate"[^<]*<input[^>]*><button[^>]*autofocus>', page) and "2 items open" in page
    assert "two &lt;b&gt;steps&lt;/b&gt;" in page
    # With no work anywhere, the project is the way on.
    with transaction(app.state.sessions) as s:
        for _ in range(2):
            factories.annotation(s, second, other, {"choice": "b"})
    page = start_annotating(client, first).text
    assert "Work waits in" not in page and f'<a href="/projects/{project_id}" autofocus>' in page


def test_opening_a_stage_with_a_get_never_leases(client, app, settings, annotator):
    """A GET of the stage's page (a link prefetched, crawled or reloaded) shows a start button and
    leases nothing; its POST, with the CSRF token, leases; a held item is then shown again by a GET."""
    import sqlalchemy as sa

    from app.models import Assignment

    project_id, stage_id = make_choice_project(app.state.sessions, settings, app.state.storage, 2, name="get")
    login(client, "ann")

    def leases() -> int:
        with transaction(app.state.sessions) as s:
            return s.scalar(sa.select(sa.func.count()).select_from(Assignment))

    for _ in range(3):
        page = client.get(f"/stages/{stage_id}/annotate", follow_redirects=False)
        assert page.status_code == 200 and leases() == 0
    assert re.search(rf'<form method="post" action="/stages/{stage_id}/annotate"[^<]*<input type="hidden" name="csrf_token"[^<]*<button[^>]*autofocus>Start annotating', page.text)
    # The dashboard and the project page start with the same POST.
    for url in ("/", f"/projects/{project_id}"):
        assert f'<a role="button" class="small" href="/stages/{stage_id}/annotate"' not in client.get(url).text
        assert f'action="/stages/{stage_id}/annotate"' in client.get(url).text
    assert client.post(f"/stages/{stage_id}/annotate", data={}).status_code == 403 and leases() == 0  # no CSRF token
    screen_url = client.post(f"/stages/{stage_id}/annotate", data={"csrf_token": csrf_from(page.text)}, follow_redirects=False).headers["location"]
    assert leases() == 1
    assert client.get(f"/stages/{stage_id}/annotate", follow_redirects=False).headers["location"] == screen_url
    assert client.get("/stages/999999/annotate").status_code == 404 and leases() == 1


def test_draft_autosave_is_restored(client, app, settings, annotator):
    _, stage_id = make_choice_project(app.state.sessions, settings, app.state.storage, 1)
    login(client, "ann")
    url = start_annotating(client, stage_id, follow_redirects=False).headers["location"]
    page = client.get(url)
    r = client.post(f"{url}/draft", data={"choice": "c"}, headers={"HX-Request": "true", "X-CSRF-Token": csrf_from(page.text)})
    assert r.status_code == 200 and "Draft saved" in r.text
    assert 'value="c" data-key="3" checked' in client.get(url).text


def test_item_text_is_escaped(client, app, settings, admin):
    from app.db import transaction
    from app.models import Item

    _, stage_id = make_choice_project(app.state.sessions, settings, app.state.storage, 1)
    with transaction(app.state.sessions) as s:
        item = s.query(Item).one()
        item.data = {**item.data, "question": "<script>alert(1)</script>"}
    login(client, admin)
    url = start_annotating(client, stage_id, follow_redirects=False).headers["location"]
    html = client.get(url).text
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_images_and_thumbnails_are_served_with_etags(client, app, settings, annotator):
    from app.db import transaction
    from app.models import Asset

    make_choice_project(app.state.sessions, settings, app.state.storage, 1)
    with transaction(app.state.sessions) as s:
        sha = s.query(Asset).one().sha256
    assert client.get(f"/assets/{sha}/thumb", follow_redirects=False).status_code == 303
    login(client, "ann")
    full = client.get(f"/assets/{sha}")
    assert full.content == png_bytes() and full.headers["etag"] == f'"{sha}"'
    thumb = client.get(f"/assets/{sha}/thumb")
    assert thumb.headers["content-type"] == "image/webp" and "immutable" in thumb.headers["cache-control"]
    assert thumb.content[:4] == b"RIFF"
    assert client.get(f"/assets/{sha}/thumb", headers={"If-None-Match": thumb.headers["etag"]}).status_code == 304
    assert client.get("/assets/" + "0" * 64).status_code == 404


def test_api_claim_submit_skip_and_204_when_empty(client, app, settings, annotator):
    _, stage_id = make_choice_project(app.state.sessions, settings, app.state.storage, 2)
    h = {"Authorization": f"Bearer {make_token(app.state.sessions, annotator)}"}
    first = client.post(f"/api/v1/stages/{stage_id}/claim", headers=h).json()
    assert set(first) >= {"assignment_id", "item_id", "data", "suggestions"} and first["data"]["image"] == "img.png"
    assert client.post(f"/api/v1/assignments/{first['assignment_id']}/skip", headers=h).status_code == 204
    second = client.post(f"/api/v1/stages/{stage_id}/claim", headers=h).json()
    body = {"payload": {"choice": "a"}, "idempotency_key": "k-1"}
    r = client.post(f"/api/v1/assignments/{second['assignment_id']}/submit", headers=h, json=body)
    assert r.status_code == 200 and r.json()["replayed"] is False and r.json()["item_status"] == "done"
    assert client.post(f"/api/v1/assignments/{second['assignment_id']}/submit", headers=h, json=body).json()["replayed"] is True
    bad = client.post(f"/api/v1/assignments/{second['assignment_id']}/submit", headers=h, json={"payload": {}, "idempotency_key": "k-2"})
    assert bad.status_code in (409, 422)
    back = client.post(f"/api/v1/stages/{stage_id}/claim", headers=h).json()
    assert back["item_id"] == first["item_id"]  # the skipped item comes back last
    client.post(f"/api/v1/assignments/{back['assignment_id']}/submit", headers=h, json={"payload": {"choice": "c"}, "idempotency_key": "k-3"})
    assert client.post(f"/api/v1/stages/{stage_id}/claim", headers=h).status_code == 204
    projects = client.get("/api/v1/projects", headers=h).json()
    assert projects[0]["stages"][0]["counts"]["finished"] == 2


def test_api_claim_resumes_a_live_lease(client, app, settings, annotator):
    _, stage_id = make_choice_project(app.state.sessions, settings, app.state.storage, 2)
    h = {"Authorization": f"Bearer {make_token(app.state.sessions, annotator)}"}
    first = client.post(f"/api/v1/stages/{stage_id}/claim", headers=h).json()
    again = client.post(f"/api/v1/stages/{stage_id}/claim", headers=h).json()
    assert again["assignment_id"] == first["assignment_id"] and again["item_id"] == first["item_id"]
    body = {"payload": {"choice": "a"}, "idempotency_key": "resume-1"}
    assert client.post(f"/api/v1/assignments/{first['assignment_id']}/submit", headers=h, json=body).status_code == 200
    other = client.post(f"/api/v1/stages/{stage_id}/claim", headers=h).json()
    assert other["item_id"] != first["item_id"]


def test_api_import_reports_errors_as_json(client, app, admin):
    h = {"Authorization": f"Bearer {make_token(app.state.sessions, user_id(app, admin))}"}
    created = client.post("/api/v1/projects", headers=h, json={"name": "api", "stages": [{"workflow": "generic.choice", "config": {"choices": ["a", "b"]}}]})
    assert created.status_code == 201
    pid = created.json()["id"]
    r = client.post(f"/api/v1/projects/{pid}/items", headers=h, files={"file": ("x.jsonl", b'{"id": "1", "image": "a.png"}\n[1]')})
    assert r.status_code == 422 and r.json()["detail"] == "line 2: a record is a JSON object."
    r = client.post(
        f"/api/v1/projects/{pid}/items",
        headers=h,
        files={"file": ("x.jsonl", b'{"id": "1", "image": "a.png"}'), "images": ("i.zip", zip_bytes({"a.png": png_bytes()}))},
    )
    assert r.status_code == 201 and r.json() == {"created": 1, "images": 1, "new_images": 1}
    detail = client.get(f"/api/v1/projects/{pid}", headers=h).json()
    assert detail["stages"][0]["counts"]["active"] == 1 and "id" in detail["stages"][0]


def test_healthz_and_openapi(client):
    assert client.get("/healthz").json()["status"] == "ok"
    paths = client.get("/openapi.json").json()["paths"]
    for p in ("/api/v1/projects", "/api/v1/projects/{project_id}", "/api/v1/projects/{project_id}/items",
              "/api/v1/stages/{stage_id}/claim", "/api/v1/assignments/{assignment_id}/submit",
              "/api/v1/assignments/{assignment_id}/skip"):
        assert p in paths


def test_security_headers(client):
    r = client.get("/login")
    assert r.headers["x-frame-options"] == "DENY" and "script-src 'self'" in r.headers["content-security-policy"]


def test_admin_users_page_creates_users_and_shows_tokens_once(client, admin):
    login(client, admin)
    token = csrf_from(client.get("/admin/users").text)
    r = client.post("/admin/users", data={"csrf_token": token, "username": "newbie", "role": "annotator"}, follow_redirects=False)
    assert r.status_code == 303
    page = client.get("/admin/users").text
    uid = re.search(r'action="/admin/users/(\d+)/tokens"[^<]*\s*<input type="hidden" name="csrf_token" value="[^"]+">\s*<input name="name" placeholder="token name" aria-label="Token name for newbie"', page)
    assert uid
    r = client.post(f"/admin/users/{uid.group(1)}/tokens", data={"csrf_token": token, "name": "cli"})
    shown = re.search(r'<code id="new-token">(vlc_[^<]+)</code>', r.text).group(1)
    assert shown not in client.get("/admin/users").text
    assert client.get("/api/v1/projects", headers={"Authorization": f"Bearer {shown}"}).status_code == 200


def test_last_admin_cannot_be_demoted(client, app, admin):
    login(client, admin)
    token = csrf_from(client.get("/admin/users").text)
    r = client.post(f"/admin/users/{user_id(app, admin)}", data={"csrf_token": token, "role": "annotator", "is_active": "on"})
    assert r.status_code == 409 and "At least one active admin" in r.text
