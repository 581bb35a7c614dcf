"""docs/plugins.md's shortest dataset, registered from its own text and run from import to export.

Proves that a dataset is its package alone: nothing in the core changes to import, annotate,
consolidate and export it, and the export page offers only the formats it supports.
"""

from __future__ import annotations

import json
import re
import sys
import types

import pytest

from app import ROOT
from app.datasets import dataset_of, registry
from app.db import transaction
from app.exporters import formats_for
from app.services.exports import export
from tests.conftest import csrf_from, led_to, login, make_token, make_user, png_bytes, start_annotating, zip_bytes

PLUGINS = (ROOT / "docs" / "plugins.md").read_text()


def example_source() -> str:
    m = re.search(r"<!-- example-dataset -->\s*```python\n(.*?)```", PLUGINS, re.S)
    assert m, "docs/plugins.md has no example dataset"
    return m.group(1)


def load_example(name: str) -> types.ModuleType:
    """Run docs/plugins.md's example as the module `name` (pydantic resolves annotations through it)."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        exec(compile(example_source(), "docs/plugins.md", "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return module


@pytest.fixture
def yesno():
    load_example("tests.datasets.yesno_example")
    try:
        yield dataset_of("yesno.check")
    finally:
        registry.unregister("yesno")


@pytest.mark.committed  # the export runs in its own snapshot transaction
def test_readme_example_dataset_runs_end_to_end(client, app, settings, yesno):
    sessions = app.state.sessions
    admin = {"Authorization": f"Bearer {make_token(sessions, make_user(sessions, 'boss', 'admin'))}"}
    ann = make_user(sessions, "ann")
    created = client.post("/api/v1/projects", headers=admin, json={"name": "yes/no", "stages": [{"workflow": "yesno.check"}]})
    assert created.status_code == 201, created.text
    pid, sid = created.json()["id"], created.json()["stages"][0]["id"]

    records = [{"id": "q1", "image": "a.png", "question": "Is the <b>square</b> red?"}, {"id": "q2", "image": "a.png", "question": "Is it blue?"}]
    bad = client.post(f"/api/v1/projects/{pid}/items", headers=admin, files={"file": ("q.jsonl", b'{"id": "q0", "image": "a.png"}')})
    assert bad.status_code == 422 and "question" in json.dumps(bad.json())  # the item schema is the dataset's
    body = "\n".join(json.dumps(r) for r in records).encode()
    r = client.post(f"/api/v1/projects/{pid}/items", headers=admin,
                    files={"file": ("q.jsonl", body), "images": ("i.zip", zip_bytes({"a.png": png_bytes()}))})
    assert r.status_code == 201 and r.json()["created"] == 2

    # An annotator in the browser: the borrowed screen shows the dataset's choices, text escaped.
    login(client, "ann")
    screen_url = start_annotating(client, sid, follow_redirects=False).headers["location"]
    page = client.get(screen_url).text
    assert 'name="choice" value="yes"' in page and "1 yes · 2 no" in page and "&lt;b&gt;square" in page
    key = re.search(r'name="idempotency_key" value="([^"]+)"', page).group(1)
    form = {"csrf_token": csrf_from(page), "idempotency_key": key}
    assert client.post(f"{screen_url}/submit", data={**form, "choice": "maybe"}).status_code == 422
    led_to(client.post(f"{screen_url}/submit", data={**form, "choice": "yes"}, follow_redirects=False))

    # The same annotator through the API.
    token = {"Authorization": f"Bearer {make_token(sessions, ann)}"}
    claim = client.post(f"/api/v1/stages/{sid}/claim", headers=token).json()
    done = client.post(f"/api/v1/assignments/{claim['assignment_id']}/submit", headers=token,
                       json={"payload": {"choice": "no"}, "idempotency_key": "k"})
    assert done.json()["item_status"] == "done"

    assert formats_for(yesno) == ["published", "jsonl", "parquet"]  # no boxes, no COCO
    with transaction(sessions) as s:
        assert export.formats_of(s, pid) == ["published", "jsonl", "parquet"]
        with pytest.raises(Exception, match="coco format can't express"):
            export.create_export(s, pid, "coco", settings=settings)
        run = export.create_export(s, pid, "published", settings=settings, use_splits=False).id
    manifest = export.run_export(sessions, app.state.storage, settings, run)
    assert manifest["splits"] == {"all": 2}
    with transaction(sessions) as s:
        path = export.find_file(s, run, "all.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["id"], r["question"], r["choice"]) for r in lines] == [("q1", records[0]["question"], "yes"), ("q2", "Is it blue?", "no")]


@pytest.mark.committed
def test_a_dataset_charts_its_finished_items_on_the_project_page(client, app, settings, yesno, monkeypatch):
    from app.datasets.dataset import Chart
    from app.services.imports import imports
    from app.services.projects import projects

    def charts(self, finished):
        answers = [row.results["yesno.check"]["choice"] for row in finished]
        return [Chart("Answers", ("yes", "no"), [("all", (answers.count("yes"), answers.count("no")))], kind="stacked", digits=0)]

    monkeypatch.setattr(type(yesno), "charts", charts)
    sessions = app.state.sessions
    make_user(sessions, "boss", "admin")
    ann = {"Authorization": f"Bearer {make_token(sessions, make_user(sessions, 'ann'))}"}
    with transaction(sessions) as s:
        pid = projects.create_project(s, "charted", [projects.StageSpec(workflow="yesno.check")]).id
        source = imports.ImageSource(settings, app.state.storage, zip_path=None)
        body = "\n".join(json.dumps({"id": f"q{i}", "image": "https://x.org/a.png", "question": "Red?"}) for i in range(3))
        imports.import_items(s, pid, body.encode(), "q.jsonl", settings=settings, storage=app.state.storage, images=source)
        sid = projects.stages_of(s, pid)[0].id
    for choice in ("yes", "yes", "no"):
        claim = client.post(f"/api/v1/stages/{sid}/claim", headers=ann).json()
        client.post(f"/api/v1/assignments/{claim['assignment_id']}/submit", headers=ann,
                    json={"payload": {"choice": choice}, "idempotency_key": f"k{claim['item_id']}"}).raise_for_status()
    login(client, "boss")
    page = client.get(f"/projects/{pid}").text
    assert 'data-chart="Answers"' in page and 'data-series="yes" data-value="2"' in page and 'data-series="no" data-value="1"' in page


def test_registering_a_taken_name_is_refused(yesno):
    with pytest.raises(ValueError, match="registered already"):
        load_example("tests.datasets.yesno_again")
