"""Review: disagreements queue up for reviewers, who accept one annotation or write the final version."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation, AuditEvent, Item, ItemResult
from app.services.annotation import annotation
from tests import factories
from tests.conftest import csrf_from, led_to, login, make_choice_project, make_user, start_annotating


def _annotate(sessions, stage_id, users, answers):
    with transaction(sessions) as s:
        for user, row in zip(users, answers, strict=True):
            for choice in row:
                factories.annotation(s, stage_id, user, {"choice": choice})


def _items(sessions) -> dict[str, Item]:
    with transaction(sessions) as s:
        return {i.external_id: i for i in s.scalars(sa.select(Item))}


def test_reviewers_settle_disagreements(client, app, settings, tmp_path):
    sessions = app.state.sessions
    with transaction(sessions) as s:
        project_id, (stage_id,) = factories.project(s, overlap=2, name="R")
        factories.choice_items(s, settings, app.state.storage, project_id, 3, tmp_path)
        users = [factories.user(s, "u1"), factories.user(s, "u2")]
    _annotate(sessions, stage_id, users, [["a", "a", "a"], ["a", "b", "c"]])
    items = _items(sessions)
    assert [items[k].status for k in ("it-0", "it-1", "it-2")] == ["done", "review", "review"]

    make_user(sessions, "rita", "reviewer")
    login(client, "u1")
    assert client.get(f"/stages/{stage_id}/review").status_code == 403
    client.cookies.clear()
    login(client, "rita")
    assert f'href="/stages/{stage_id}/review"' in client.get(f"/projects/{project_id}").text
    queue = client.get(f"/stages/{stage_id}/review").text
    assert re.findall(r'data-item="([^"]+)"', queue) == ["it-1", "it-2"]

    screen = client.get(f"/stages/{stage_id}/review/{items['it-1'].id}").text
    assert screen.count('class="review-annotation"') == 2 and screen.count('<dd dir="auto" class="differs">') == 2
    accept_b = re.search(r'data-annotator="u2".*?name="accept" value="(\d+)"', screen, re.S).group(1)
    form = {"csrf_token": csrf_from(screen), "accept": accept_b, "comment": "u2 is right: it is a square"}
    r = client.post(f"/stages/{stage_id}/review/{items['it-1'].id}", data=form, follow_redirects=False)
    assert r.status_code == 303
    again = client.post(f"/stages/{stage_id}/review/{items['it-1'].id}", data=form)
    assert again.status_code == 409 and "no longer waiting for review" in again.text

    url = f"/stages/{stage_id}/review/{items['it-2'].id}"
    bad = client.post(url, data={"csrf_token": form["csrf_token"], "final": '{"choice": "zzz"}'})
    assert bad.status_code == 422 and "not one of the choices" in bad.text and "{&#34;choice&#34;: &#34;zzz&#34;}" in bad.text
    broken = client.post(url, data={"csrf_token": form["csrf_token"], "final": '{"choice": '})
    assert broken.status_code == 422 and "not valid JSON" in broken.text
    nan = client.post(url, data={"csrf_token": form["csrf_token"], "final": '{"choice": NaN}'})
    assert nan.status_code == 422 and "field &#39;choice&#39;: NaN is not a number JSON allows" in nan.text
    assert client.post(url, data={"csrf_token": form["csrf_token"], "final": '{"choice": "c"}'}, follow_redirects=False).status_code == 303

    items = _items(sessions)
    with transaction(sessions) as s:
        finals = {i.external_id: (r.payload, r.source) for r, i in s.execute(sa.select(ItemResult, Item).join(Item, Item.id == ItemResult.item_id))}
        audit = s.scalars(sa.select(AuditEvent).where(AuditEvent.action == "item.review").order_by(AuditEvent.id)).all()
    assert finals["it-1"] == ({"choice": "b"}, "review") and finals["it-2"] == ({"choice": "c"}, "review")
    assert finals["it-0"] == ({"choice": "a"}, "auto")
    assert items["it-1"].status == items["it-2"].status == "done"
    assert [a.detail["how"] for a in audit] == [f"accepted annotation {accept_b}", "edited"]
    assert audit[0].detail["comment"] == "u2 is right: it is a square"
    assert "Nothing waits for review" in client.get(f"/stages/{stage_id}/review").text
    history = client.get(f"/items/{items['it-1'].id}/history").text
    rows = re.findall(r"<tr><td>[^<]+</td><td>([^<]*)</td><td>([^<]+)</td><td>([^<]+)</td>", history)
    assert [(what, who) for _, what, who in rows] == [
        ("annotation (revision 1)", "u1"), ("annotation (revision 1)", "u2"), ("final (review)", "rita"), ("item.review", "rita"),
    ]
    assert "u2 is right: it is a square" in history


def test_a_reviewer_sends_an_item_back_and_the_annotators_revise_it(client, app, settings):
    sessions = app.state.sessions
    _, stage_id = make_choice_project(sessions, settings, app.state.storage, 1, overlap=2, name="Back")
    u1, u2, u3 = (make_user(sessions, n) for n in ("u1", "u2", "u3"))
    _annotate(sessions, stage_id, [u1, u2], [["a"], ["b"]])
    item = _items(sessions)["it-0"]
    assert item.status == "review"

    make_user(sessions, "rita", "reviewer")
    login(client, "rita")
    url = f"/stages/{stage_id}/review/{item.id}"
    token = csrf_from(client.get(url).text)
    empty = client.post(url, data={"csrf_token": token, "action": "send_back", "comment": "  "})
    assert empty.status_code == 422 and "Say what to change" in empty.text
    assert _items(sessions)["it-0"].status == "review"
    note = "Look at the corner: <b>it is a square</b>"
    assert client.post(url, data={"csrf_token": token, "action": "send_back", "comment": note}, follow_redirects=False).status_code == 303
    assert _items(sessions)["it-0"].status == "active"
    assert client.post(url, data={"csrf_token": token, "accept": "1"}).status_code == 409  # no longer in review

    with transaction(sessions) as s:
        assert annotation.claim(s, stage_id, u3) is None  # only its annotators revise it
    client.cookies.clear()
    login(client, "u1")
    screen = start_annotating(client, stage_id)
    assert 'id="returned-note"' in screen.text and "rita" in screen.text
    assert "&lt;b&gt;it is a square&lt;/b&gt;" in screen.text and "<b>it is a square</b>" not in screen.text
    assert re.search(r'value="a"[^>]*checked', screen.text)  # their earlier answer is filled in
    assignment = re.search(r'action="/assignments/(\d+)/submit"', screen.text).group(1)
    form = {"csrf_token": csrf_from(screen.text), "idempotency_key": "again-1", "choice": "b"}
    done = client.post(f"/assignments/{assignment}/submit", data=form, follow_redirects=False)
    assert "Nothing left for you here" in done.text and led_to(done) == f"/stages/{stage_id}/annotate"
    assert _items(sessions)["it-0"].status == "active"  # u2 has not revised yet

    with transaction(sessions) as s:
        claimed = annotation.claim(s, stage_id, u2)
        assert claimed.item_id == item.id
        annotation.submit(s, claimed.assignment_id, u2, {"choice": "b"}, "again-2")
    with transaction(sessions) as s:
        final = s.scalar(sa.select(ItemResult).where(ItemResult.item_id == item.id))
        revisions = s.scalars(sa.select(Annotation.revision).where(Annotation.item_id == item.id).order_by(Annotation.id)).all()
    assert (final.payload, final.source) == ({"choice": "b"}, "auto") and revisions == [1, 1, 2, 2]
    client.cookies.clear()
    login(client, "rita")
    history = client.get(f"/items/{item.id}/history").text
    assert "item.sent_back" in history and "&lt;b&gt;it is a square&lt;/b&gt;" in history


def test_the_reviewer_writes_the_final_version_in_the_workflows_editor(client, app, settings):
    sessions = app.state.sessions
    _, stage_id = make_choice_project(sessions, settings, app.state.storage, 1, overlap=2, name="Edit")
    _annotate(sessions, stage_id, [make_user(sessions, "u1"), make_user(sessions, "u2")], [["a"], ["b"]])
    item = _items(sessions)["it-0"]
    make_user(sessions, "rita", "reviewer")
    login(client, "u1")
    assert client.get(f"/stages/{stage_id}/review/{item.id}/edit").status_code == 403
    client.cookies.clear()
    login(client, "rita")
    screen = client.get(f"/stages/{stage_id}/review/{item.id}").text
    second = re.search(r'data-annotator="u2".*?edit\?start=(\d+)', screen, re.S).group(1)
    editor = client.get(f"/stages/{stage_id}/review/{item.id}/edit?start={second}").text
    assert re.search(r'value="b"[^>]*checked', editor) and not re.search(r'value="a"[^>]*checked', editor)
    url = f"/stages/{stage_id}/review/{item.id}/edit"
    bad = client.post(url, data={"csrf_token": csrf_from(editor), "start": second, "choice": "zzz", "comment": "mine"})
    assert bad.status_code == 422 and "not one of the choices" in bad.text and 'value="mine"' in bad.text
    assert client.post(url, data={"choice": "c"}).status_code == 403  # CSRF
    ok = client.post(url, data={"csrf_token": csrf_from(editor), "start": second, "choice": "c", "comment": "both wrong"}, follow_redirects=False)
    assert ok.status_code == 303
    with transaction(sessions) as s:
        final = s.scalar(sa.select(ItemResult).where(ItemResult.item_id == item.id))
        event = s.scalar(sa.select(AuditEvent).where(AuditEvent.action == "item.review"))
    assert (final.payload, final.source) == ({"choice": "c"}, "review") and event.detail["comment"] == "both wrong"


def test_a_sent_back_item_can_be_taken_back_when_annotators_do_not_return(client, app, settings):
    sessions = app.state.sessions
    _, stage_id = make_choice_project(sessions, settings, app.state.storage, 1, overlap=2, name="Take back")
    u1, u2 = make_user(sessions, "u1"), make_user(sessions, "u2")
    _annotate(sessions, stage_id, [u1, u2], [["a"], ["b"]])
    item = _items(sessions)["it-0"]
    make_user(sessions, "rita", "reviewer")
    login(client, "rita")
    token = csrf_from(client.get(f"/stages/{stage_id}/review/{item.id}").text)
    client.post(f"/stages/{stage_id}/review/{item.id}", data={"csrf_token": token, "action": "send_back", "comment": "Is it really a circle?"})
    with transaction(sessions) as s:  # u1 revises; u2 never comes back
        claimed = annotation.claim(s, stage_id, u1)
        annotation.submit(s, claimed.assignment_id, u1, {"choice": "c"}, "u1-again")

    queue = client.get(f"/stages/{stage_id}/review").text
    assert "Nothing waits for review" in queue
    waiting = re.search(r'<tr data-sent-back="it-0">.*?</tr>', queue, re.S).group(0)
    assert "1 annotator<" in waiting and "Is it really a circle?" in waiting
    r = client.post(f"/stages/{stage_id}/review/{item.id}/take-back", data={"csrf_token": token}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/stages/{stage_id}/review/{item.id}"
    assert _items(sessions)["it-0"].status == "review"
    screen = client.get(f"/stages/{stage_id}/review/{item.id}").text
    answers = dict(re.findall(r'data-annotator="(u\d)".*?<dd dir="auto" class="differs">([^<]*)</dd>', screen, re.S))
    assert answers == {"u1": "c", "u2": "b"}
    with transaction(sessions) as s:
        assert annotation.claim(s, stage_id, u2) is None  # nothing is waiting for u2 any more
    again = client.post(f"/stages/{stage_id}/review/{item.id}/take-back", data={"csrf_token": token})
    assert again.status_code == 409 and "not waiting for its annotators" in again.text


def test_the_heatmaps_scale_is_fixed_and_leaves_the_diagonal_apart():
    from app.web.review_pages import SELF_COLOUR, heatmap

    shown = heatmap([[1.0, 0.04, 0.7], [0.04, 1.0, None], [0.7, None, 1.0]])
    cells = {(c["y"], c["x"]): c for c in shown["cells"]}
    assert all(cells[i, i]["self"] and cells[i, i]["colour"] == SELF_COLOUR for i in range(3))
    assert (shown["legend"]["low"], shown["legend"]["high"]) == (0.0, 1.0) and shown["legend"]["seen"] == (0.04, 0.7)
    # A kappa of 0.04 (barely above chance) is drawn near the light end, not as the darkest green.
    assert cells[0, 1]["colour"] == "rgb(244,250,197)" and not cells[0, 1]["dark"]
    assert cells[1, 2]["colour"] == "#ddd" and not cells[1, 2]["self"]  # no figure for the pair
    ends = {(c["y"], c["x"]): c["colour"] for c in heatmap([[1.0, -0.3, 1.0], [-0.3, 1.0, 1.0], [1.0, 1.0, 1.0]])["cells"]}
    assert ends[0, 1] == "rgb(255,255,204)" and ends[0, 2] == "rgb(0,104,55)"  # worse than chance takes the 0 end
    # The same figure gets the same colour whatever the other pairs are.
    assert heatmap([[1.0, 0.7], [0.7, 1.0]])["cells"][1]["colour"] == cells[0, 2]["colour"]




def test_a_reviewer_does_not_decide_an_item_they_annotated(client, app, settings, tmp_path):
    sessions = app.state.sessions
    with transaction(sessions) as s:
        project_id, (stage_id,) = factories.project(s, overlap=2, name="Own")
        factories.choice_items(s, settings, app.state.storage, project_id, 2, tmp_path)
        _, (lenient,) = factories.project(s, overlap=2, name="Lenient", config={"choices": ["a", "b", "c"], "forbid_self_review": False})
        factories.choice_items(s, settings, app.state.storage, _, 1, tmp_path)
        rita, u1, u2 = factories.user(s, "rita", "reviewer"), factories.user(s, "u1"), factories.user(s, "u2")
        token = factories.token(s, rita)
    _annotate(sessions, stage_id, [rita, u2], [["a"], ["b"]])  # it-0: rita is one of the two who disagree
    _annotate(sessions, stage_id, [u1, u2], [["a"], ["c"]])  # it-1: rita took no part
    _annotate(sessions, lenient, [rita, u1], [["a"], ["b"]])
    with transaction(sessions) as s:
        own = s.scalar(sa.select(Item).where(Item.stage_id == stage_id, Item.external_id == "it-0"))
    assert own.status == "review"

    login(client, "rita")
    queue = client.get(f"/stages/{stage_id}/review").text
    assert re.findall(r'data-item="([^"]+)"', queue) == ["it-1"]
    api = client.get(f"/api/v1/stages/{stage_id}/review", headers={"Authorization": f"Bearer {token}"}).json()
    assert [r["external_id"] for r in api] == ["it-1"]
    assert re.findall(r'data-item="([^"]+)"', client.get(f"/stages/{lenient}/review").text) == ["it-0"]  # the stage allows it

    screen = client.get(f"/stages/{stage_id}/review/{own.id}").text
    assert 'id="own-work"' in screen  # opened by its address: the screen says why no decision will be taken
    accept = re.search(r'name="accept" value="(\d+)"', screen).group(1)
    r = client.post(f"/stages/{stage_id}/review/{own.id}", data={"csrf_token": csrf_from(screen), "accept": accept})
    assert r.status_code == 403 and "You annotated this item in this stage" in r.text
    back = client.post(f"/stages/{stage_id}/review/{own.id}", data={"csrf_token": csrf_from(screen), "action": "send_back", "comment": "redo"})
    assert back.status_code == 403
    by_api = client.post(f"/api/v1/stages/{stage_id}/review/{own.id}", headers={"Authorization": f"Bearer {token}"},
                         json={"accept_annotation_id": int(accept)})
    assert by_api.status_code == 403
    with transaction(sessions) as s:
        assert s.get(Item, own.id).status == "review"
        assert s.scalar(sa.select(sa.func.count()).select_from(ItemResult).where(ItemResult.item_id == own.id)) == 0
