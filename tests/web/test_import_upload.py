"""Uploaded imports are read from their spool file as it streams, within the upload limit."""

from __future__ import annotations

import json

import sqlalchemy as sa

from app.db import transaction
from app.models import Item
from app.services.imports import imports
from tests import factories


def _records(n: int) -> bytes:
    return "\n".join(
        json.dumps({"id": f"r{i}", "image": "https://example.org/a.png", "question": f"Is {i} fine?"}) for i in range(n)
    ).encode()


def test_a_large_upload_is_imported_from_its_spool_file(app, client, monkeypatch):
    monkeypatch.setattr(imports, "BATCH", 1000)
    given = []
    real = imports.import_items

    def spy(session, project_id, data, *args, **kwargs):
        given.append((type(data), getattr(data, "_rolled", None)))
        return real(session, project_id, data, *args, **kwargs)

    monkeypatch.setattr(imports, "import_items", spy)
    with transaction(app.state.sessions) as s:
        headers = factories.bearer(s, "boss", "admin")
        project_id, _ = factories.project(s)
    body = _records(20_000)
    assert len(body) > 1024 * 1024  # past what python-multipart keeps in memory
    r = client.post(f"/api/v1/projects/{project_id}/items", headers=headers, files={"file": ("items.jsonl", body)})
    assert r.status_code == 201, r.text
    assert r.json()["created"] == 20_000
    assert given[0][0] is not bytes and given[0][1] is True  # the file on disk, not its bytes
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Item).where(Item.project_id == project_id)) == 20_000


def test_an_upload_over_the_limit_is_refused_and_changes_nothing(app, client):
    app.state.settings = app.state.settings.model_copy(update={"max_upload_bytes": 1000})
    with transaction(app.state.sessions) as s:
        headers = factories.bearer(s, "boss", "admin")
        project_id, _ = factories.project(s)
    r = client.post(f"/api/v1/projects/{project_id}/items", headers=headers, files={"file": ("items.jsonl", _records(50))})
    assert r.status_code == 422
    assert "items.jsonl is larger than the upload limit (1000 Bytes, VLCURATE_MAX_UPLOAD_BYTES)" in r.json()["detail"]
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Item).where(Item.project_id == project_id)) == 0
