"""Gold items through the pages and the API: import, honeypots that look like any item, accuracy on the dashboard."""

from __future__ import annotations

import json
import uuid
from html.parser import HTMLParser

import sqlalchemy as sa

from app.db import transaction
from app.models import GoldItem, Item, Stage
from app.services.annotation import annotation as annotations
from app.services.quality import gold
from tests import factories
from tests.conftest import csrf_from, login, make_choice_project


class Shape(HTMLParser):
    """A page's element structure: each start tag with its attribute names, no text and no values."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, tuple[str, ...]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, tuple(sorted(name for name, _ in attrs))))


def shape(html: str) -> list:
    parser = Shape()
    parser.feed(html)
    return parser.tags


def keys(value):
    """The nested key structure of a JSON value."""
    if isinstance(value, dict):
        return {k: keys(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [keys(v) for v in value[:1]]
    return type(value).__name__


def set_config(app, stage_id: int, **config) -> None:
    with transaction(app.state.sessions) as s:
        stage = s.get(Stage, stage_id)
        stage.config = {**stage.config, **config}


def gold_lines(ids, choice="a") -> bytes:
    return "\n".join(json.dumps({"id": i, "answer": {"choice": choice}}) for i in ids).encode()


def test_gold_import_page_and_a_gold_item_looks_like_any_other(client, app, settings, storage):
    sessions = app.state.sessions
    _, stage_id = make_choice_project(sessions, settings, storage, 30)
    with transaction(sessions) as s:
        factories.user(s, "boss", "admin")
        ann = factories.user(s, "ann")
        ann_token = factories.token(s, ann)
    login(client, "boss")
    page = client.get(f"/stages/{stage_id}/agreement")
    assert 'id="gold-import"' in page.text and "No answers to gold items yet" in page.text
    token = csrf_from(page.text)

    bad = client.post(f"/stages/{stage_id}/gold", data={"csrf_token": token},
                      files={"file": ("gold.jsonl", gold_lines(["it-1", "nope"]))}, follow_redirects=False)
    assert bad.status_code == 303
    shown = client.get(f"/stages/{stage_id}/agreement").text
    assert "nothing was imported" in shown and "line 2: no item &#39;nope&#39;" in shown
    with transaction(sessions) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(GoldItem)) == 0

    ids = [f"it-{i}" for i in range(20, 30)]
    good = client.post(f"/stages/{stage_id}/gold", data={"csrf_token": token},
                       files={"file": ("gold.jsonl", gold_lines(ids))}, follow_redirects=False)
    assert good.status_code == 303
    assert "10 gold items imported" in client.get(f"/stages/{stage_id}/agreement").text
    set_config(app, stage_id, gold_share=0.5)

    # The annotator claims through the API until one gold and one ordinary item came; both answers
    # and both screens have the same structure.
    with transaction(sessions) as s:
        gold_ids = gold.gold_item_ids(s, stage_id)
    headers = {"Authorization": f"Bearer {ann_token}"}
    seen: dict[bool, tuple[dict, str, dict]] = {}
    for _ in range(30):
        r = client.post(f"/api/v1/stages/{stage_id}/claim", headers=headers)
        assert r.status_code == 200
        body = r.json()
        is_gold = body["item_id"] in gold_ids
        client.cookies.clear()
        login(client, "ann")
        screen = client.get(f"/assignments/{body['assignment_id']}").text
        done = client.post(f"/api/v1/assignments/{body['assignment_id']}/submit", headers=headers,
                           json={"payload": {"choice": "a"}, "idempotency_key": uuid.uuid4().hex})
        assert done.status_code == 200
        seen.setdefault(is_gold, (body, screen, done.json()))
        if len(seen) == 2:
            break
    assert set(seen) == {True, False}
    (g_body, g_screen, g_done), (o_body, o_screen, o_done) = seen[True], seen[False]
    assert keys(g_body) == keys(o_body)
    assert shape(g_screen) == shape(o_screen)
    assert keys(g_done) == keys(o_done) and g_done["item_status"] == o_done["item_status"] == "done"
    assert "gold" not in g_screen.lower().replace("golden", "")


def test_dashboard_accuracy_column_trend_and_flag(client, app, settings, storage):
    sessions = app.state.sessions
    _, stage_id = make_choice_project(sessions, settings, storage, 40)
    set_config(app, stage_id, gold_share=0.5, gold_min_items=4, gold_threshold=0.7)
    with transaction(sessions) as s:
        factories.user(s, "rita", "reviewer")
        careless = factories.user(s, "careless")
        gold.import_answers(s, stage_id, gold_lines([f"it-{i}" for i in range(30, 40)]), actor_id=None)
        gold_ids = gold.gold_item_ids(s, stage_id)
        answered = 0
        while answered < 6:
            claim = annotations.claim(s, stage_id, careless)
            is_gold = claim.item_id in gold_ids
            answered += is_gold
            annotations.submit(s, claim.assignment_id, careless, {"choice": "b" if is_gold else "a"}, uuid.uuid4().hex)
    login(client, "rita")
    page = client.get(f"/stages/{stage_id}/agreement").text
    assert 'data-flagged' in page and "flagged" in page and "data-gold-trend" in page
    assert 'data-trend="careless"' in page and "0.000" in page
    api = client.get(f"/api/v1/stages/{stage_id}/gold/accuracy")
    assert api.status_code == 401  # the API takes tokens, not the page's cookie
    with transaction(sessions) as s:
        tok = factories.token(s, factories.user(s, "rev2", "reviewer"))
    report = client.get(f"/api/v1/stages/{stage_id}/gold/accuracy", headers={"Authorization": f"Bearer {tok}"}).json()
    assert report["annotators"]["careless"]["items"] == 6 and report["annotators"]["careless"]["flagged"] is True
    assert report["gold_items"] == 10


def test_make_this_final_gold_on_the_history_page_and_through_the_api(client, app, settings, storage):
    sessions = app.state.sessions
    _, stage_id = make_choice_project(sessions, settings, storage, 3)
    with transaction(sessions) as s:
        factories.user(s, "boss", "admin")
        ann = factories.user(s, "ann")
        factories.annotation(s, stage_id, ann, {"choice": "b"})
        factories.annotation(s, stage_id, ann, {"choice": "c"})
        first, second = s.scalars(sa.select(Item.id).where(Item.status == "done").order_by(Item.id)).all()
        admin_token = factories.token(s, factories.user(s, "boss2", "admin"))
    login(client, "boss")
    history = client.get(f"/items/{first}/history").text
    assert 'id="make-gold"' in history
    r = client.post(f"/items/{first}/gold", data={"csrf_token": csrf_from(history), "stage_id": stage_id}, follow_redirects=False)
    assert r.status_code == 303
    after = client.get(f"/items/{first}/history").text
    assert "now gold" in after and "no longer exported" in after and 'id="make-gold"' not in after
    api = client.post(f"/api/v1/items/{second}/gold", json={"stage_id": stage_id}, headers={"Authorization": f"Bearer {admin_token}"})
    assert api.status_code == 200
    third = client.post(f"/api/v1/items/{second + 1}/gold", json={"stage_id": stage_id}, headers={"Authorization": f"Bearer {admin_token}"})
    assert third.status_code == 422 and "no final record" in third.text
    up = client.post(f"/api/v1/stages/{stage_id}/gold", files={"file": ("g.jsonl", b'{"id": "it-2", "answer": {"choice": "x"}}')},
                     headers={"Authorization": f"Bearer {admin_token}"})
    assert up.status_code == 422 and "line 1" in up.text
    with transaction(sessions) as s:
        assert dict(s.execute(sa.select(GoldItem.item_id, GoldItem.answer)).all()) == {first: {"choice": "b"}, second: {"choice": "c"}}


def test_a_gold_submit_answers_what_an_ordinary_one_would_flagged_or_not(client, app, settings, storage):
    """Through the API: every gold submit answers the status the annotator's next ordinary submit answers,
    before the flag ("done") and after it, once their work is routed to review ("review")."""
    sessions = app.state.sessions
    _, stage_id = make_choice_project(sessions, settings, storage, 60)
    set_config(app, stage_id, gold_share=0.5, gold_min_items=3, gold_threshold=0.7, gold_route_to_review=True)
    with transaction(sessions) as s:
        gold.import_answers(s, stage_id, gold_lines([f"it-{i}" for i in range(40, 60)]), actor_id=None)
        gold_ids = gold.gold_item_ids(s, stage_id)
        factories.user(s, "rita", "reviewer")
        tokens = {name: factories.token(s, factories.user(s, name)) for name in ("careful", "careless")}
    answered: dict[str, list[tuple[bool, str]]] = {}
    for name, token in tokens.items():
        headers = {"Authorization": f"Bearer {token}"}
        answered[name] = []
        while sum(g for g, _ in answered[name]) < 6:
            claim = client.post(f"/api/v1/stages/{stage_id}/claim", headers=headers).json()
            is_gold = claim["item_id"] in gold_ids
            choice = "b" if is_gold and name == "careless" else "a"
            r = client.post(f"/api/v1/assignments/{claim['assignment_id']}/submit", headers=headers,
                            json={"payload": {"choice": choice}, "idempotency_key": uuid.uuid4().hex})
            assert r.status_code == 200
            answered[name].append((is_gold, r.json()["item_status"]))
        answered[name].append((False, client.post(  # one more ordinary item, after the last gold one
            f"/api/v1/assignments/{client.post(f'/api/v1/stages/{stage_id}/claim', headers=headers).json()['assignment_id']}/submit",
            headers=headers, json={"payload": {"choice": "a"}, "idempotency_key": uuid.uuid4().hex}).json()["item_status"]))
        for n, (is_gold, status) in enumerate(answered[name]):
            if is_gold:
                following = next(s for g, s in answered[name][n + 1:] if not g)
                assert status == following, (name, answered[name])
    assert {s for _, s in answered["careful"]} == {"done"}
    gold_statuses = [s for g, s in answered["careless"] if g]
    assert gold_statuses[:2] == ["done", "done"] and set(gold_statuses[2:]) == {"review"}  # flagged at the third

    # The reviewer sees why those items wait, with the annotator's accuracy.
    login(client, "rita")
    page = client.get(f"/stages/{stage_id}/review").text
    assert "routed: annotator below gold accuracy (0%)" in page
    with transaction(sessions) as s:
        tok = factories.token(s, factories.user(s, "rev2", "reviewer"))
    rows = client.get(f"/api/v1/stages/{stage_id}/review", headers={"Authorization": f"Bearer {tok}"}).json()
    assert rows and {(r["reason"], r["accuracy"]) for r in rows} == {("routed: annotator below gold accuracy", 0.0)}
