"""Export targets are checked when the export is asked for, not when the worker writes it."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from app.db import transaction
from app.errors import Invalid
from app.models import Export
from app.services.exports import export
from tests import factories


@pytest.fixture
def no_s3_credentials(monkeypatch, tmp_path):
    """This installation as a local-storage one: no AWS variables, profile files or instance role."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_an_s3_target_without_s3_credentials_is_refused_when_asked_for(client, app, api, no_s3_credentials):
    with transaction(app.state.sessions) as s:
        project_id, _ = factories.project(s)
    r = client.post(f"/api/v1/projects/{project_id}/exports", headers=api["admin"], json={"format": "jsonl", "target": "s3://bucket/runs"})
    assert r.status_code == 422, r.text
    assert "s3://bucket/runs is on S3, but this server has no S3 credentials" in r.json()["detail"]
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Export)) == 0  # nothing recorded, nothing queued
    r = client.post(f"/api/v1/projects/{project_id}/exports", headers=api["admin"], json={"format": "jsonl"})
    assert r.status_code == 202 and r.json()["status"] == "queued"  # this server's disk needs no credentials


def test_a_directory_target_that_cannot_be_made_is_refused(session, settings, tmp_path):
    project_id, _ = factories.project(session)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(Invalid, match="can't be written: .*a-file is not a writable directory"):
        export.create_export(session, project_id, "jsonl", settings=settings, target=str(blocker / "out"))
    assert export.create_export(session, project_id, "jsonl", settings=settings, target=str(tmp_path / "new" / "out")).target.endswith("/new/out")
