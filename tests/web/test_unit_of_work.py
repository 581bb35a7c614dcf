"""One unit of work per request: one session shared by authentication and the route, committed
before the response is sent; and an OpenAPI schema that types every API answer."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.db import transaction
from app.models import User
from app.web.deps import Db, db
from tests import factories


def _dependants(dependant):
    yield dependant
    for sub in dependant.dependencies:
        yield from _dependants(sub)


def _routes(routes):
    for route in routes:
        if hasattr(route, "original_router"):  # an included router, in recent FastAPI
            yield from _routes(route.original_router.routes)
        elif hasattr(route, "dependant"):
            yield route


def test_every_route_shares_one_session_committed_before_the_response(app):
    """A bare Depends(db) would be a second session, committed after the response: only `Db` is allowed."""
    found = 0
    for route in _routes(app.routes):
        for d in _dependants(route.dependant):
            if getattr(d, "call", None) is db:
                found += 1
                assert d.scope == "function", f"{route.path} takes the session in scope {d.scope!r}: use deps.Db"
    assert found > 40


@pytest.mark.committed
def test_a_failed_commit_answers_an_error_not_a_200(app, client):
    """The commit runs before the response: data a client was told is saved, is saved."""
    with transaction(app.state.sessions) as s:
        factories.user(s, "taken")

    @app.post("/_probe/{name}")
    def probe(name: str, session: Db) -> dict[str, str]:
        session.add(User(username=name, password_hash="x", role="annotator"))  # flushed only by the commit
        return {"saved": name}

    assert client.post("/_probe/fresh").json() == {"saved": "fresh"}
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.select(sa.func.count()).where(User.username == "fresh")) == 1
    with TestClient(app, raise_server_exceptions=False) as quiet:
        assert quiet.post("/_probe/taken").status_code == 500  # unique username: the commit fails


def test_authentication_and_route_use_the_same_session(app, client):
    seen = []

    @app.get("/_probe")
    def probe(request_session: Db, also: Db) -> dict[str, bool]:
        seen.append((request_session, also))
        return {"same": request_session is also}

    assert client.get("/_probe").json() == {"same": True}


def _typed(schema: dict, components: dict) -> bool:
    """A schema that says what is in the answer: a model, a typed list, a scalar; not `{}` or a bare object."""
    if "$ref" in schema:
        target = components[schema["$ref"].rsplit("/", 1)[-1]]
        return bool(target.get("properties")) or _typed(target, components)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"]
            return bool(options) and all(_typed(o, components) for o in options)
    kind = schema.get("type")
    if kind == "array":
        return _typed(schema.get("items", {}), components)
    if kind == "object":
        return bool(schema.get("properties"))
    return kind in ("string", "integer", "number", "boolean")


def test_every_api_operation_has_a_typed_success_response(client):
    spec = client.get("/openapi.json").json()
    components = spec.get("components", {}).get("schemas", {})
    checked = 0
    for path, operations in spec["paths"].items():
        if not path.startswith("/api/v1"):
            continue
        for method, op in operations.items():
            success = min(code for code in op["responses"] if code.startswith("2"))
            answer = op["responses"][success]
            if success == "204":
                assert not answer.get("content"), f"{method.upper()} {path}: a 204 has no body"
                continue
            content = answer.get("content") or {}
            assert content, f"{method.upper()} {path}: no response schema for {success}"
            for media, body in content.items():
                assert _typed(body.get("schema", {}), components), f"{method.upper()} {path} answers an untyped {media}"
            checked += 1
    assert checked >= 15


def test_the_typed_check_refuses_an_untyped_route(app, client):
    @app.get("/api/v1/_untyped")
    def untyped() -> dict:
        return {}

    app.openapi_schema = None
    with pytest.raises(AssertionError, match="_untyped answers an untyped"):
        test_every_api_operation_has_a_typed_success_response(client)


@pytest.mark.committed
def test_concurrent_requests_hold_no_more_connections_than_the_pool_keeps(app, committed, settings, storage):
    """At most the pool's size of requests hold a session at once in a process (deps.Sessions):
    16 clients claiming, submitting and reading their project (a `Db` route, whose commit must come
    before the turn is given back) at once never check out a connection past the pool, which would
    be opened and closed again per request."""
    import threading
    import uuid

    import httpx

    from tests.conftest import make_choice_project, make_token, make_user, run_concurrently, serving

    project_id, stage_id = make_choice_project(committed, settings, storage, 40)
    tokens = [make_token(committed, make_user(committed, f"bounded{i}")) for i in range(16)]
    app.state.settings = settings.model_copy(update={"db_pool_size": 2})
    held, most, lock = [0], [0], threading.Lock()

    def checkout(*_):
        with lock:
            held[0] += 1
            most[0] = max(most[0], held[0])

    def checkin(*_):
        with lock:
            held[0] -= 1

    def annotator(base: str, token: str) -> None:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            for _ in range(2):
                claimed = http.post(f"/api/v1/stages/{stage_id}/claim")
                assert claimed.status_code == 200, claimed.text
                body = {"payload": {"choice": "a"}, "idempotency_key": uuid.uuid4().hex}
                assert http.post(f"/api/v1/assignments/{claimed.json()['assignment_id']}/submit", json=body).status_code == 200
                assert http.get(f"/api/v1/projects/{project_id}").status_code == 200

    pool = app.state.engine.pool
    sa.event.listen(pool, "checkout", checkout)
    sa.event.listen(pool, "checkin", checkin)
    try:
        with serving(app) as base:
            run_concurrently(annotator, [(base, t) for t in tokens])
    finally:
        sa.event.remove(pool, "checkout", checkout)
        sa.event.remove(pool, "checkin", checkin)
    assert 1 <= most[0] <= 2, most[0]
    with transaction(committed) as s:
        assert s.scalar(sa.text("SELECT count(*) FROM annotations")) == 32


@pytest.mark.committed
def test_a_refused_or_failed_request_gives_its_turn_back(app, committed, settings, storage):
    """With one turn in the process, requests refused before the route runs (no token, a body that
    fails validation), refused in it (an assignment that is not theirs) or served by a `Db` route
    each give the turn back: the next claim is answered, not left waiting."""
    import httpx

    from tests.conftest import make_choice_project, make_token, make_user, serving

    project_id, stage_id = make_choice_project(committed, settings, storage, 3)
    token = make_token(committed, make_user(committed, "oneturn"))
    app.state.settings = settings.model_copy(update={"db_pool_size": 1})
    with serving(app) as base, httpx.Client(base_url=base, timeout=10) as http:
        bearer = {"Authorization": f"Bearer {token}"}
        for _ in range(3):
            assert http.post(f"/api/v1/stages/{stage_id}/claim").status_code == 401
            assert http.post(f"/api/v1/stages/{stage_id}/claim", headers={"Authorization": "Bearer wrong"}).status_code == 401
            assert http.post("/api/v1/assignments/1/submit", headers=bearer, json={"payload": "not an object"}).status_code == 422
            assert http.post("/api/v1/assignments/999999/submit", headers=bearer,
                             json={"payload": {"choice": "a"}, "idempotency_key": "k"}).status_code == 404
            assert http.get(f"/api/v1/projects/{project_id}", headers=bearer).status_code == 200
        claimed = http.post(f"/api/v1/stages/{stage_id}/claim", headers=bearer)  # a leaked turn: a timeout here
        assert claimed.status_code == 200, claimed.text
    assert app.state.work_limiter.borrowed_tokens == 0
