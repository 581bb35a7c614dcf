"""Bad input, as an attacker or a careless user sends it: every case answers a 4xx with a message that
says what is wrong (and where), and changes nothing: no row, no storage object."""

from __future__ import annotations

import hashlib

import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from types import UnionType
from typing import Annotated, Union, get_args, get_origin

import pytest
import sqlalchemy as sa

from app.db import transaction
from app.models import Base
from tests import factories
from tests.conftest import csrf_from, login, png_bytes

INT4_OUT = 2**31  # one past PostgreSQL's integer
INT8_OUT = 2**63  # one past its bigint
DEEP = "[" * 100_000 + "]" * 100_000
DEEP_900 = "[" * 900 + "]" * 900


def _zip(members: dict[str, bytes], stored: bool = False) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out.getvalue()


def _bad_crc_zip() -> bytes:
    """a.png intact, b.png with one byte of its (stored) data flipped: its CRC no longer matches."""
    b = png_bytes((9, 90, 200), size=(40, 40))
    data = bytearray(_zip({"a.png": png_bytes((200, 30, 30)), "b.png": b}, stored=True))
    at = bytes(data).rindex(b[-20:])  # inside b.png's bytes, past its local header
    data[at] ^= 0xFF
    return bytes(data)


def _records(*recs: dict) -> bytes:
    return "\n".join(json.dumps(r) for r in recs).encode()


def _deep_jsonl() -> bytes:
    return (json.dumps({"id": "a", "image": "a.png", "question": "q"}) + '\n{"id": "b", "image": "a.png", "question": ' + DEEP + "}\n").encode()


@dataclass
class Case:
    name: str
    method: str
    path: str  # {project}, {stage} are filled in
    status: int
    says: list[str]  # each must appear in the answer's message (detail and errors)
    role: str = "admin"
    json: object = None
    content: bytes | None = None
    files: dict = field(default_factory=dict)
    data: dict | None = None  # a page form (its CSRF token is added)
    content_type: str = "application/json"  # of `content`


IMPORT = "/api/v1/projects/{project}/items"
CASES = [
    # Ids out of the columns' ranges, at the API and on pages.
    Case("project id past int4", "GET", f"/api/v1/projects/{INT4_OUT}", 422, ["project_id", "less than or equal to 2147483647"]),
    Case("claim on stage 2^31", "POST", f"/api/v1/stages/{INT4_OUT}/claim", 422, ["stage_id"], role="annotator"),
    Case("submit on assignment 2^63", "POST", f"/api/v1/assignments/{INT8_OUT}/submit", 422, ["assignment_id"], role="annotator",
         json={"payload": {"choice": "a"}, "idempotency_key": "k"}),
    Case("draft on assignment 2^63", "PUT", f"/api/v1/assignments/{INT8_OUT}/draft", 422, ["assignment_id"], role="annotator",
         json={"payload": {}}),
    Case("agreement on stage 2^31", "GET", f"/api/v1/stages/{INT4_OUT}/agreement", 422, ["stage_id"]),
    Case("export version past int4", "POST", "/api/v1/projects/{project}/exports", 422, ["version"], json={"format": "jsonl", "version": INT8_OUT}),
    Case("agreement with a negative seed", "GET", "/api/v1/stages/{stage}/agreement?seed=-1", 422, ["seed"]),
    Case("page: export of split version 2^63", "POST", "/projects/{project}/exports", 404, ["no split version 9223372036854775808"],
         role="page", data={"format": "jsonl", "version": str(INT8_OUT)}),
    Case("stage sample size past int4", "POST", "/api/v1/projects", 422, ["sample_size", "less than or equal to 2147483647"],
         json={"name": "big", "stages": [{"workflow": "generic.choice", "sample_size": INT4_OUT, "config": {"choices": ["a"]}}]}),
    Case("page: project form, sample size past int4", "POST", "/projects", 422, ["sample_size", "less than or equal to 2147483647"],
         role="page", data={"name": "big", "workflow": "generic.choice", "sample_size": str(INT4_OUT), "choices": "a,b"}),
    Case("page: project form, overlap 10^20", "POST", "/projects", 422, ["Annotators per item is a whole number from 1 to 50"],
         role="page", data={"name": "big", "workflow": "generic.choice", "overlap": str(10**20), "choices": "a,b"}),
    Case("page: project 2^31", "GET", f"/projects/{INT4_OUT}", 422, ["project_id"], role="page"),
    Case("page: assignment 2^63", "GET", f"/assignments/{INT8_OUT}", 422, ["assignment_id"], role="page"),
    # Imports: depth, size, CSV cells, corrupt zip members, a bad second image.
    Case("JSONL line 100,000 deep", "POST", IMPORT, 422, ["line 2", "nested deeper than 64"],
         files={"file": ("items.jsonl", _deep_jsonl())}),
    Case("JSON array 100,000 deep", "POST", IMPORT, 422, ["line 1", "nested deeper than 64"],
         files={"file": ("items.json", f'[{{"id": "a", "image": "a.png", "q": {DEEP}}}]'.encode())}),
    Case("a field 900 deep (JSONB)", "POST", IMPORT, 422, ["line 1", "nested deeper than 64"],
         files={"file": ("items.jsonl", f'{{"id": "a", "image": "a.png", "question": "q", "extra": {DEEP_900}}}'.encode())}),
    Case("JSON array element 900 deep", "POST", IMPORT, 422, ["record 2", "nested deeper than 64"],
         files={"file": ("items.json", f'[{{"id": "a"}}, {{"id": "b", "x": {DEEP_900}}}]'.encode())}),
    Case("CSV cell 100,000 deep", "POST", IMPORT, 422, ["line 3", "column 'extra'", "nested deeper than 64"],
         files={"file": ("items.csv", ("id,image,question,extra\na,a.png,q,1\nb,a.png,q," + DEEP + "\n").encode())}),
    Case("CSV field of 5 MB", "POST", IMPORT, 422, ["line 3", "cell is larger than 4,194,304 bytes"],
         files={"file": ("items.csv", ("id,image,question\na,a.png,q\nb,a.png," + "x" * 5_000_000 + "\n").encode())}),
    Case("JSONL line of 5 MB", "POST", IMPORT, 422, ["line 1", "the limit is 4,194,304"],
         files={"file": ("items.jsonl", _records({"id": "a", "image": "a.png", "question": "x" * 5_000_000}))}),
    Case("zip member with a bad CRC", "POST", IMPORT, 422, ["line 2", "b.png", "Bad CRC-32"],
         files={"file": ("items.jsonl", _records({"id": "a", "image": "a.png", "question": "q"}, {"id": "b", "image": "b.png", "question": "q"})),
                "images": ("images.zip", _bad_crc_zip())}),
    Case("second image not an image", "POST", IMPORT, 422, ["line 2", "field 'image'", "b.png"],
         files={"file": ("items.jsonl", _records({"id": "a", "image": "a.png", "question": "q"}, {"id": "b", "image": "b.png", "question": "q"})),
                "images": ("images.zip", _zip({"a.png": png_bytes((1, 99, 1)), "b.png": b"not an image"}))}),
    # Text longer than its column.
    Case("token name of 101 characters", "POST", "/api/v1/users/{user}/tokens", 422, ["name", "at most 100 characters"], json={"name": "t" * 101}),
    Case("project name of 201 characters", "POST", "/api/v1/projects", 422, ["name", "at most 200 characters"],
         json={"name": "p" * 201, "stages": [{"workflow": "generic.choice", "config": {"choices": ["a"]}}]}),
    Case("stage name of 101 characters", "POST", "/api/v1/projects", 422, ["stages.0.name", "at most 100 characters"],
         json={"name": "p", "stages": [{"workflow": "generic.choice", "name": "s" * 101, "config": {"choices": ["a"]}}]}),
    Case("page: token name of 101 characters", "POST", "/admin/users/{user}/tokens", 422, ["at most 100 characters"],
         role="page", data={"name": "t" * 101}),
    Case("page: project name of 201 characters", "POST", "/projects", 422, ["at most 200 characters"],
         role="page", data={"name": "p" * 201, "workflow": "generic.choice", "choices": "a,b"}),
    # NUL characters, which PostgreSQL's text and JSONB cannot hold.
    Case("token name with a NUL", "POST", "/api/v1/users/{user}/tokens", 422, ["NUL character"], json={"name": "a\u0000b"}),
    Case("project name with a NUL", "POST", "/api/v1/projects", 422, ["NUL character"],
         json={"name": "a\u0000b", "stages": [{"workflow": "generic.choice", "config": {"choices": ["a"]}}]}),
    Case("import record with a NUL", "POST", IMPORT, 422, ["line 2", "NUL character"],
         files={"file": ("items.jsonl", b'{"id": "a", "image": "a.png", "question": "q"}\n{"id": "b\\u0000", "image": "a.png", "question": "q"}')}),
    Case("CSV cell with a NUL", "POST", IMPORT, 422, ["line 2", "NUL character"],
         files={"file": ("items.csv", b"id,image,question\na,a.png,q\x00\n")}),
    Case("API query with a NUL", "GET", "/api/v1/audit?target=a%00b&actor=x", 422, ["query parameter 'target'", "NUL character"]),
    Case("audit page filter with a NUL", "GET", "/admin/audit?actor=a%00b", 422, ["actor", "NUL character"], role="page"),
    # '¹' is a digit to str.isdigit, and no number to int or to the API's validation.
    Case("stage id as a superscript digit", "GET", "/api/v1/stages/%C2%B9/prompts", 422, ["stage_id"]),
    Case("project page id as a superscript digit", "GET", "/projects/%C2%B9", 422, ["project_id"], role="page"),
    Case("page form with a NUL", "POST", "/projects", 422, ["field &#39;name&#39;", "NUL character"], role="page",
         data={"name": "a\x00b", "workflow": "generic.choice"}),
    # API bodies.
    Case("submit body 100,000 deep", "POST", f"/api/v1/assignments/{INT4_OUT}/submit", 422, ["line 1", "nests arrays and objects deeper than 64"],
         role="annotator", content=f'{{"payload": {{"x": {DEEP}}}, "idempotency_key": "k"}}'.encode()),
    Case("draft body 900 deep", "PUT", "/api/v1/assignments/1/draft", 422, ["line 1", "deeper than 64"], role="annotator",
         content=f'{{"payload": {{"x": {DEEP_900}}}}}'.encode()),
    Case("body without a content type, 900 deep", "PUT", "/api/v1/assignments/1/draft", 422, ["deeper than 64"], role="annotator",
         content=f'{{"payload": {{"x": {DEEP_900}}}}}'.encode(), content_type=""),
    Case("split config body of 5 MB", "POST", "/api/v1/projects/{project}/splits", 413, ["larger than 4,194,304 bytes"],
         content=json.dumps({"ratios": {"train": 1}, "pad": "x" * 5_000_000}).encode()),
    # Numbers JSON has not (Python's parser takes NaN and Infinity, reads 1e400 as inf and gives up on
    # integers past 4,300 digits): refused naming the field, in bodies, imports and forms.
    Case("draft with a NaN", "PUT", "/api/v1/assignments/1/draft", 422, ["body.payload.choice: NaN is not a number JSON allows"],
         role="annotator", content=b'{"payload": {"choice": NaN}}'),
    Case("draft with -Infinity in a list", "PUT", "/api/v1/assignments/1/draft", 422, ["body.payload.boxes.1: -Infinity"],
         role="annotator", content=b'{"payload": {"boxes": [1, -Infinity]}}'),
    Case("draft without a content type, Infinity", "PUT", "/api/v1/assignments/1/draft", 422, ["body.payload.x: Infinity"],
         role="annotator", content=b'{"payload": {"x": Infinity}}', content_type=""),
    Case("submit with 1e400", "POST", "/api/v1/assignments/1/submit", 422, ["body.payload.n: 1e400 is beyond the largest number"],
         role="annotator", content=b'{"payload": {"n": 1e400}, "idempotency_key": "k"}'),
    Case("submit with seconds_spent 1e308", "POST", "/api/v1/assignments/1/submit", 422,
         ["body.seconds_spent", "less than or equal to 2678400"], role="annotator",
         json={"payload": {"choice": "a"}, "idempotency_key": "k", "seconds_spent": 1e308}),
    Case("submit with an integer of 5,001 digits", "POST", "/api/v1/assignments/1/submit", 422,
         ["body.payload.n: an integer of 5,001 digits; the limit is 4,300"], role="annotator",
         content=b'{"payload": {"n": ' + b"9" * 5001 + b'}, "idempotency_key": "k"}'),
    Case("split ratio NaN", "POST", "/api/v1/projects/{project}/splits", 422, ["body.ratios.train: NaN"],
         content=b'{"ratios": {"train": NaN, "test": 1}}'),
    Case("stage config with Infinity", "POST", "/api/v1/projects", 422, ["body.stages.0.config.x: Infinity"],
         content=b'{"name": "p", "stages": [{"workflow": "generic.choice", "config": {"choices": ["a"], "x": Infinity}}]}'),
    Case("import line with NaN", "POST", IMPORT, 422, ["line 2: field 'question': NaN is not a number JSON allows"],
         files={"file": ("items.jsonl", b'{"id": "a", "image": "a.png", "question": "q"}\n{"id": "b", "image": "a.png", "question": NaN}')}),
    Case("import line with an integer of 5,001 digits", "POST", IMPORT, 422, ["line 1: field 'n': an integer of 5,001 digits"],
         files={"file": ("items.jsonl", b'{"id": "a", "image": "a.png", "question": "q", "n": ' + b"1" * 5001 + b"}")}),
    Case("import id 1e400", "POST", IMPORT, 422, ["record 1: field 'id': 1e400 is beyond the largest number"],
         files={"file": ("items.json", b'[{"id": 1e400, "image": "a.png", "question": "q"}]')}),
    Case("CSV cell with Infinity", "POST", IMPORT, 422, ["line 2: field 'extra.0': Infinity"],
         files={"file": ("items.csv", b'id,image,question,extra\na,a.png,q,"[Infinity]"\n')}),
    Case("gold answer with NaN", "POST", "/api/v1/stages/{stage}/gold", 422, ["line 1: field 'answer.choice': NaN"],
         files={"file": ("gold.jsonl", b'{"id": "it-0", "answer": {"choice": NaN}}\n')}),
    Case("page: split ratio nan", "POST", "/projects/{project}/splits", 422, ["finite number"],
         role="page", data={"method": "ratios", "sizes": "train=nan,test=1"}),
    Case("page: stage config with NaN", "POST", "/projects", 422, ["field &#39;x&#39;: NaN is not a number JSON allows"],
         role="page", data={"name": "p", "workflow": "generic.choice", "choices": "a,b", "config_0": '{"x": NaN}'}),
]


def _rows(app) -> dict[str, int]:
    with transaction(app.state.sessions) as s:
        return {t.name: s.scalar(sa.select(sa.func.count()).select_from(t)) for t in Base.metadata.sorted_tables}


def _objects(settings) -> set[str]:
    root = settings.storage_dir
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} if root.exists() else set()


@pytest.fixture
def world(app, client, settings, storage, tmp_path):
    with transaction(app.state.sessions) as s:
        headers = {"admin": factories.bearer(s, "boss", "admin"), "annotator": factories.bearer(s, "ann")}
        somebody = factories.user(s, "somebody")
        project_id, stage_ids = factories.project(s)
        factories.choice_items(s, settings, storage, project_id, 2, tmp_path)
    login(client, "boss")
    return {"headers": headers, "project": project_id, "stage": stage_ids[0], "user": somebody}


def test_bad_input_gets_a_4xx_that_says_why_and_changes_nothing(app, client, settings, world, subtests):
    """One app for the whole table (each case a subtest): setting up users and items per case costs more than the cases."""
    csrf = csrf_from(client.get("/").text)
    for case in CASES:
        with subtests.test(case.name):
            headers = {} if case.role == "page" else dict(world["headers"][case.role])
            if case.content is not None and case.content_type:
                headers["content-type"] = case.content_type
            path = case.path.format(project=world["project"], stage=world["stage"], user=world["user"])
            data = {**case.data, "csrf_token": csrf} if case.data else None
            rows, objects = _rows(app), _objects(settings)
            body = {"content": case.content} if case.content is not None else {"json": case.json}
            r = client.request(case.method, path, headers=headers, files=case.files or None, data=data, **body)
            assert r.status_code == case.status, r.text[:500]
            said = r.text if case.role == "page" else " ".join([r.json()["detail"], *r.json().get("errors", [])])
            for words in case.says:
                assert words in said, f"{words!r} not in {said[:500]!r}"
            assert _rows(app) == rows
            assert _objects(settings) == objects


def test_a_good_import_leaves_no_staged_object(app, client, settings, world):
    """Its two new images land in one pack, each read back from its slice as it was posted."""
    before = _objects(settings)
    body = _records({"id": "a", "image": "a.png", "question": "q"}, {"id": "b", "image": "b.png", "question": "q"})
    posted = {"a.png": png_bytes((1, 99, 1)), "b.png": png_bytes((1, 99, 2))}
    r = client.post(f"/api/v1/projects/{world['project']}/items", headers=world["headers"]["admin"],
                    files={"file": ("items.jsonl", body), "images": ("images.zip", _zip(posted))})
    assert r.status_code == 201 and r.json()["new_images"] == 2
    added = _objects(settings) - before
    assert len(added) == 1 and all(key.startswith("images/packs/") for key in added)
    for data in posted.values():
        served = client.get(f"/api/v1/images/{hashlib.sha256(data).hexdigest()}", headers=world["headers"]["admin"])
        assert served.status_code == 200 and served.content == data


def _integer(annotation, metadata=()) -> tuple[bool, bool]:
    """Whether a parameter's type is an integer (optional or not), and whether it has an upper bound."""
    if get_origin(annotation) is Annotated:
        base, *more = get_args(annotation)
        return _integer(base, (*metadata, *more))
    if get_origin(annotation) in (Union, UnionType):
        found = [_integer(arg, metadata) for arg in get_args(annotation) if arg is not type(None)]
        return any(i for i, _ in found), all(b for i, b in found if i)
    bounded = any(getattr(m, "le", None) is not None or getattr(m, "lt", None) is not None for m in metadata)
    return annotation is int, bounded


def _int_params(route):
    """The route's path and query parameters that are integers, each with whether it has an upper bound."""
    for param in [*route.dependant.path_params, *route.dependant.query_params]:
        integer, bounded = _integer(param.field_info.annotation, tuple(param.field_info.metadata))
        if integer:
            yield param, bounded


def _routes(app):
    from tests.web.test_role_matrix import app_routes

    served = set(app_routes(app))

    def walk(routes):
        for route in routes:
            if hasattr(route, "original_router"):
                yield from walk(route.original_router.routes)
            elif hasattr(route, "dependant"):
                yield route

    return [r for r in walk(app.routes) if any((m, r.path) in served for m in r.methods)]


def test_every_integer_a_route_takes_is_bounded(app):
    """Ids use deps.Id / deps.BigId (or another bound): PostgreSQL never sees a number past its column."""
    found = [(route.path, param.name, bounded) for route in _routes(app) for param, bounded in _int_params(route)]
    assert len(found) >= 50 and ("/stages/{stage_id}/review/{item_id}/edit", "start", True) in found
    assert not [f"{path}: {name}" for path, name, bounded in found if not bounded]


def test_every_route_answers_out_of_range_ids_with_a_4xx(app, world):
    """Generated from the routes: each integer path parameter past int8, as an admin (page and API)."""
    from fastapi.testclient import TestClient

    from tests.web.test_role_matrix import concrete

    checked = 0
    with TestClient(app, raise_server_exceptions=False) as browser:
        login(browser, "boss")
        csrf = csrf_from(browser.get("/").text)
        for route in _routes(app):
            ids = [p.name for p, _ in _int_params(route) if p in route.dependant.path_params]
            if not ids:
                continue
            path = route.path
            for name in ids:
                path = path.replace("{" + name + "}", str(INT8_OUT))
            for method in route.methods - {"HEAD"}:
                api = route.path.startswith("/api/")
                r = browser.request(method, concrete(path) if "{" in path else path + ("?after=1" if "upcoming" in path else ""),
                                    headers=world["headers"]["admin"] if api else {},
                                    data=None if api or method == "GET" else {"csrf_token": csrf}, follow_redirects=False)
                assert r.status_code in (404, 422), f"{method} {route.path}: {r.status_code} {r.text[:300]}"
                checked += 1
    assert checked >= 40


# Odd values for every form field and query parameter of the pages; the annotation and review forms'
# fields are the workflows' own, so the common ones are named here.
ODD = ["", "-1", "99999999999999999999", "abc", "x" * 20_000, "[[[[", "☃"]
FORM_FIELDS = ["choice", "verdict", "caption", "comment", "start", "opened_at", "idempotency_key", "format", "version",
               "target", "ratios", "counts", "seed", "role", "username", "is_active", "name", "password", "project_id", "workspace_id"]


def test_no_page_answers_odd_form_values_with_a_server_error(app, settings, storage, world):
    """Generated from the routes: every page, as an admin, on things that exist, each field odd in turn."""
    import sqlalchemy as sa
    from fastapi.testclient import TestClient

    from app.models import ApiToken, Item, Webhook
    from app.services.annotation import annotation
    from app.services.users.workspaces import default_workspace_id

    with transaction(app.state.sessions) as s:
        factories.annotation(s, world["stage"], world["user"], {"choice": "a"})
        boss = s.scalar(sa.text("SELECT id FROM users WHERE username = 'boss'"))
        assignment = annotation.claim(s, world["stage"], boss).assignment_id
        ids = {"project_id": world["project"], "stage_id": world["stage"], "item_id": s.scalar(sa.select(sa.func.min(Item.id))),
               "assignment_id": assignment, "user_id": world["user"], "token_id": s.scalar(sa.select(sa.func.min(ApiToken.id))),
               "export_id": 1, "sha256": "0" * 64, "path:path": "x.json", "kind": "csv",
               "workspace_id": default_workspace_id(s),
               "member_id": s.scalar(sa.text("SELECT min(id) FROM workspace_members")), "annotator_id": world["user"]}
        hook = Webhook(workspace_id=ids["workspace_id"], url="https://receiver.example/h", secret="whsec_" + "A" * 44, events=["item.finalized"])
        s.add(hook)
        s.flush()
        ids["webhook_id"] = hook.id
    failures = []
    with TestClient(app, raise_server_exceptions=False) as browser:
        login(browser, "boss")
        csrf = csrf_from(browser.get("/").text)
        for route in _routes(app):
            if route.path.startswith("/api/") or route.path in ("/logout", "/login", "/account/password"):
                continue  # the API is schemathesis's; logging out or in would end this session
            path = re.sub(r"\{([^}]+)\}", lambda m: str(ids[m.group(1)]), route.path)
            fields = [p.name for p in route.dependant.body_params] + FORM_FIELDS
            queries = [p.name for p in route.dependant.query_params]
            for method in route.methods - {"HEAD"}:
                for value in ODD:
                    data = {**{f: value for f in fields}, "csrf_token": csrf} if method == "POST" else None
                    # (A URL has room for 64 KiB: query values are cut to what fits; form fields take all.)
                    params = {q: value[:8_000] for q in queries}
                    r = browser.request(method, path, data=data, params=params, follow_redirects=False)
                    if r.status_code >= 500:
                        failures.append(f"{method} {route.path} with {value[:20]!r}: {r.status_code}")
    assert not failures


def test_every_api_route_holds_json_bodies_to_the_limits(app):
    from app.web.limits import LimitedJsonRoute

    api = [route for route in _routes(app) if route.path.startswith("/api/v1/")]
    assert len(api) >= 15 and not [r.path for r in api if not isinstance(r, LimitedJsonRoute)]


def test_every_api_route_taking_json_refuses_numbers_json_has_not(app, client, world):
    """Generated from the routes: each API route that takes a JSON body, sent NaN, Infinity, 1e400 and an
    integer of 5,001 digits as an admin, answers 422 naming the field, whatever the route does with it."""
    checked = 0
    for route in _routes(app):
        body = route.dependant.body_params
        if not route.path.startswith("/api/v1/") or not body or any(getattr(p.field_info, "media_type", "") != "application/json" for p in body):
            continue  # no body, or a form / file upload (imports are the table's)
        path = re.sub(r"\{([^}]+)\}", "1", route.path)
        for method in route.methods - {"HEAD", "GET"}:
            for bad in (b"NaN", b"-Infinity", b"1e400", b"7" * 5001):
                r = client.request(method, path, headers={**world["headers"]["admin"], "content-type": "application/json"},
                                   content=b'{"x": {"y": [0, ' + bad + b"]}}")
                assert r.status_code == 422, f"{method} {route.path} with {bad[:10]!r}: {r.status_code} {r.text[:300]}"
                assert r.json()["errors"][0].startswith("body.x.y.1: "), r.text[:300]
                checked += 1
    assert checked >= 40
