"""Run by tests/test_upgrade.py in a process of its own, with one release's code first on the path:
`make` builds a database as that release would (its migrations, users of each role, a project with
items, annotations and a live lease), `probe` records what each of those users gets from every page
and API route the test asks for. Only calls every release since 0024 has are used here.

    python tests/upgrade_probe.py make|probe DATABASE_URL DATA_DIR STATE_JSON
"""

from __future__ import annotations

import io
import json
import re
import sys
import uuid
from pathlib import Path

PASSWORD = "correct horse battery"
SECRET = "upgrade-probe-secret"
ROLES = ("admin", "reviewer", "annotator")


def _settings(url: str, data: str):
    from app.settings import Settings

    return Settings(database_url=url, data_dir=Path(data), secret_key=SECRET)


def _png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (32, 24), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def make(url: str, data: str, state_path: str) -> None:
    """The previous release's database: its schema, and data its own services made."""
    import sqlalchemy as sa

    from app.db import transaction
    from app.migrate import upgrade
    from app.services.annotation import annotation
    from app.services.imports import imports
    from app.services.imports.import_sources import ImageSource
    from app.services.projects import projects
    from app.services.users import users
    from app.storage import make_storage

    upgrade(sa.engine.make_url(url))
    settings = _settings(url, data)
    storage = make_storage(settings)
    engine = sa.create_engine(url)
    sessions = sa.orm.sessionmaker(bind=engine, expire_on_commit=False)
    folder = Path(data) / "incoming"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "img.png").write_bytes(_png())
    state = {"tokens": {}}
    with transaction(sessions) as s:
        for role in ROLES:
            user = users.create_user(s, f"old-{role}", role, PASSWORD)
            state["tokens"][role] = users.create_token(s, user, "probe")[1]
            state[f"{role}_id"] = user.id
        specs = projects.stage_specs_for("generic.choice", then=[], overlap=2, config={"choices": ["a", "b", "c"]})
        project = projects.create_project(s, "old-project", specs, description="made by the previous release")
        records = "\n".join(json.dumps({"id": f"it-{i}", "image": "img.png", "question": f"Q{i}?"}) for i in range(6)).encode()
        source = ImageSource(settings, storage, base=folder)
        imports.import_items(s, project.id, records, "items.jsonl", settings=settings, storage=storage, images=source)
        source.close()
        stage = projects.stages_of(s, project.id)[0]
        state.update(project=project.id, stage=stage.id)
    for who, answers in (("annotator", ["a", "b", "a"]), ("reviewer", ["a", "a"])):
        for answer in answers:
            with transaction(sessions) as s:
                claimed = annotation.claim(s, stage.id, state[f"{who}_id"])
                annotation.submit(s, claimed.assignment_id, state[f"{who}_id"], {"choice": answer}, uuid.uuid4().hex)
                state.setdefault("item", claimed.item_id)
    with transaction(sessions) as s:  # and a live lease each, which the probes' claims get back
        for role in ROLES:
            annotation.claim(s, stage.id, state[f"{role}_id"])
    Path(state_path).write_text(json.dumps(state))
    engine.dispose()


# What differs from one run to the next by design, not by release: per-session tokens, fresh keys,
# the clock. Each is replaced by a fixed mark before the answers are compared.
VOLATILE = [
    (re.compile(r'(name="csrf_token" value=")[^"]+'), r"\1CSRF"),
    (re.compile(r'(name="csrf-token" content=")[^"]+'), r"\1CSRF"),
    (re.compile(r'(data-csrf=")[^"]+'), r"\1CSRF"),
    (re.compile(r'("X-CSRF-Token": ")[^"]+'), r"\1CSRF"),
    (re.compile(r'(name="idempotency_key" value=")[0-9a-f]+'), r"\1KEY"),
    (re.compile(r'(name="opened_at" value=")[0-9.]+'), r"\1T"),
    (re.compile(r"\d+ (second|minute)s? ago"), "AGO"),
]


def _stable(text: str) -> str:
    for pattern, mark in VOLATILE:
        text = pattern.sub(mark, text)
    return text


def requests_of(state: dict) -> dict[str, list[tuple[str, str]]]:
    """Per role: the (method, path) pairs to record."""
    p, s, i = state["project"], state["stage"], state["item"]
    pages = ["/", f"/projects/{p}", f"/stages/{s}/annotate", "/account/password"]
    reviewer_pages = [f"/projects/{p}/items", f"/stages/{s}/review", f"/items/{i}/history", f"/stages/{s}/agreement"]
    api = ["/api/v1/projects", f"/api/v1/projects/{p}", f"/api/v1/projects/{p}/settings"]
    reviewer_api = [f"/api/v1/projects/{p}/items", f"/api/v1/items/{i}", f"/api/v1/stages/{s}/review",
                    f"/api/v1/projects/{p}/annotations", f"/api/v1/stages/{s}/gold/accuracy?samples=10"]
    admin = ["/admin/users", f"/projects/{p}/export", "/api/v1/users", f"/api/v1/projects/{p}/splits", f"/api/v1/projects/{p}/finals"]
    asked = {
        "annotator": pages + api + reviewer_pages + admin,  # the refusals must stay the same too
        "reviewer": pages + reviewer_pages + api + reviewer_api + admin,
        "admin": pages + reviewer_pages + api + reviewer_api + admin + ["/projects/new"],
    }
    # Each user holds a live lease (`make`): a claim gives it back, the same before and after.
    return {role: [("POST", f"/api/v1/stages/{s}/claim")] + [("GET", path) for path in paths] for role, paths in asked.items()}


def probe(url: str, data: str, state_path: str) -> None:
    """Every answer of `requests_of`, for each user (pages with their session, the API with their token), as JSON on stdout."""
    from fastapi.testclient import TestClient

    from app.main import create_app

    state = json.loads(Path(state_path).read_text())
    app = create_app(_settings(url, data))
    answers = {}
    with TestClient(app) as client:
        for role, asked in requests_of(state).items():
            client.cookies.clear()
            page = client.get("/login")
            token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
            client.post("/login", data={"username": f"old-{role}", "password": PASSWORD, "csrf_token": token, "next": "/"})
            for method, path in asked:
                headers = {"Authorization": f"Bearer {state['tokens'][role]}"} if path.startswith("/api/") else {}
                r = client.request(method, path, headers=headers, follow_redirects=False)
                answers[f"{role} {method} {path}"] = [r.status_code, r.headers.get("location"), _stable(r.text)]
    print(json.dumps(answers))


if __name__ == "__main__":
    {"make": make, "probe": probe}[sys.argv[1]](*sys.argv[2:5])
