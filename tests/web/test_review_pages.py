"""Review: disagreements queue up for reviewers, who accept one annotation or write the final version."""

from __future__ import annotations

import re

import sqlalchemy as sa

from app.db import transaction
from app.models import AuditEvent, Item, ItemResult
from app.services import annotation
from tests.conftest import csrf_from, login, make_choice_project, make_user


def _annotate(sessions, stage_id, users, answers):
    for user, row in zip(users, answers, strict=True):
        for choice in row:
            with transaction(sessions) as s:
                claimed = annotation.claim(s, stage_id, user)
                annotation.submit(s, claimed.assignment_id, user, {"choice": choice}, f"{user}-{claimed.item_id}")


def _items(sessions) -> dict[str, Item]:
    with transaction(sessions) as s:
        return {i.external_id: i for i in s.scalars(sa.select(Item))}


def test_reviewers_settle_disagreements(client, app, settings):
    sessions = app.state.sessions
    project_id, stage_id = make_choice_project(sessions, settings, app.state.storage, 3, overlap=2, name="R")
    users = [make_user(sessions, "u1"), make_user(sessions, "u2")]
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
    assert screen.count('class="review-annotation"') == 2 and screen.count('<dd class="differs">') == 2
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
