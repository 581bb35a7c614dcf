"""The command line in remote mode (--server / --token): import, suggest --from, splits, agreement and
export go through the API of a live server, never the database."""

from __future__ import annotations

import json
import threading

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from app.cli import app as cli
from app.db import transaction
from app.models import Export, Item, Suggestion
from app.services.exports import export
from tests import factories
from tests.client.test_client_live import png

runner = CliRunner()


def worker_thread(sessions, storage, settings, stop: threading.Event) -> threading.Thread:
    """Runs queued exports as `vlcurate worker` would (the live server has no worker here)."""

    def run():
        while not stop.wait(0.2):
            with sessions() as s:
                queued = s.scalars(sa.select(Export.id).where(Export.status == "queued")).all()
            for export_id in queued:
                export.run_export(sessions, storage, settings, export_id)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.committed
def test_remote_import_suggest_splits_agreement_export(live_server, committed, settings, storage, tmp_path, monkeypatch):
    with transaction(committed) as s:
        pid, (stage_id,) = factories.project(s, "wikido.verify", name="remote-cli")
        admin = factories.token(s, factories.user(s, "cli-admin", "admin"))
        annotator = factories.token(s, factories.user(s, "cli-ann"))
    # The database is out of reach: only the API can answer.
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    monkeypatch.setenv("VLCURATE_SERVER", live_server)
    (tmp_path / "imgs").mkdir()
    lines = []
    for i in range(6):
        (tmp_path / "imgs" / f"i{i}.png").write_bytes(png(i))
        lines.append(json.dumps({"image_id": f"r{i}", "caption": f"A cat {i} on a mat.", "image": f"i{i}.png", "score": 1.50}))
    (tmp_path / "records.jsonl").write_text("\n".join(lines) + "\n")

    first = runner.invoke(cli, ["import", "remote-cli", str(tmp_path / "records.jsonl"), "--images", str(tmp_path / "imgs"), "--token", admin])
    assert first.exit_code == 0, first.output
    assert "Imported 6 items (6 images, 6 new; 0 already there)" in first.output
    again = runner.invoke(cli, ["import", str(pid), str(tmp_path / "records.jsonl"), "--images", str(tmp_path / "imgs"), "--token", admin])
    assert "Imported 0 items" in again.output and "6 already there" in again.output
    with committed() as s:
        assert s.scalar(sa.select(Item.source).where(Item.external_id == "r0"))["score"] == 1.5
        assert s.scalar(sa.select(sa.func.count()).select_from(Item)) == 6

    (tmp_path / "hints.jsonl").write_text("".join(json.dumps({"external_id": f"r{i}", "kind": "wikido.itm", "payload": {"score": 0.1 * i}}) + "\n" for i in range(6)))
    suggest = ["suggest", "remote-cli", "--from", str(tmp_path / "hints.jsonl"), "--model", "clip", "--model-version", "1", "--token", admin]
    assert "Stored 6 suggestions (0 unchanged)" in runner.invoke(cli, suggest).output
    assert "Stored 0 suggestions (6 unchanged)" in runner.invoke(cli, suggest).output
    with committed() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Suggestion)) == 6

    refused = runner.invoke(cli, ["suggest", "remote-cli", "--from", str(tmp_path / "records.jsonl"), "--token", admin])
    assert refused.exit_code == 1 and "suggestions.0.external_id: Field required" in refused.output

    from vlcurate import Client

    with Client(live_server, annotator) as ann:
        while (claimed := ann.claim(stage_id)) is not None:
            ann.submit(claimed.assignment_id, {"verdict": "correct"})

    splits = runner.invoke(cli, ["splits", "remote-cli", "--ratios", "train=0.5,test=0.5", "--token", admin])
    assert splits.exit_code == 0, splits.output
    assert "train 3" in splits.output and "test 3" in splits.output
    agreement = runner.invoke(cli, ["agreement", "remote-cli", "--json", "--samples", "10", "--token", admin])
    assert agreement.exit_code == 0, agreement.output
    assert json.loads(agreement.output)[0]["stage"]["workflow"] == "wikido.verify"

    stop = threading.Event()
    thread = worker_thread(committed, storage, settings, stop)
    try:
        done = runner.invoke(cli, ["export", "remote-cli", "--format", "published", "--out", str(tmp_path / "out"), "--token", admin])
    finally:
        stop.set()
        thread.join(10)
    assert done.exit_code == 0, done.output
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["splits"] == {"train": 3, "test": 3}
    for relative in manifest["files"]:
        assert (tmp_path / "out" / relative).is_file()
    assert len((tmp_path / "out" / "train.jsonl").read_text().splitlines()) == 3

    wrong = runner.invoke(cli, ["agreement", "remote-cli", "--token", "nope"])
    assert wrong.exit_code == 1 and "Invalid or revoked token" in wrong.output
