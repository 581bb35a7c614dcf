"""The client's work log against a live server: the rows the API gives, the same rows as a Dataset and as
downloaded CSV / Parquet files, the async client's too; 404 for a user who does not manage the workspace."""

from __future__ import annotations

import asyncio
import csv
import uuid

import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation
from app.services.annotation import annotation
from app.services.users.workspaces import default_workspace_id
from tests import factories
from tests.conftest import make_choice_project
from vlcurate import AsyncClient, Client, NotFound
from vlcurate.cli import main


@pytest.mark.committed
def test_work_log_rows_dataset_files_and_remote_cli(live_server, committed, settings, storage, tmp_path, capsys):
    _, stage = make_choice_project(committed, settings, storage, 3, name="Logged")
    with transaction(committed) as s:
        workspace = default_workspace_id(s)
        admin = factories.token(s, factories.user(s, "wl-admin", "admin"))
        outsider = factories.token(s, factories.user(s, "wl-ann"))
        uid = factories.user(s, "wl-worker")
        for n, active in enumerate((30.0, 45.0)):
            claimed = annotation.claim(s, stage, uid)
            done = annotation.submit(s, claimed.assignment_id, uid, {"choice": "a"}, uuid.uuid4().hex)
            s.execute(sa.update(Annotation).where(Annotation.id == done.annotation_id)
                      .values(created_at=sa.text(f"TIMESTAMPTZ '2026-02-0{n + 1} 10:00+00'"), active_seconds=active, wall_seconds=60.0))
    with Client(live_server, admin) as client:
        log = client.work_log(workspace, "2026-02-01", "2026-02-02", download=tmp_path / "log.csv")
        assert [(str(r.day), r.annotator, r.items, r.active_hours) for r in log.rows] == [
            ("2026-02-01", "wl-worker", 1, round(30 / 3600, 4)), ("2026-02-02", "wl-worker", 1, round(45 / 3600, 4))]
        with open(tmp_path / "log.csv", newline="") as fh:
            assert [(r["day"], r["active_hours"]) for r in csv.DictReader(fh)] == [(str(r.day), str(r.active_hours)) for r in log.rows]
        client.work_log(workspace, "2026-02-01", "2026-02-02", annotator="wl-worker", download=tmp_path / "log.parquet")
        assert pq.read_table(tmp_path / "log.parquet").to_pylist() == [r.model_dump() for r in log.rows]
        table = client.work_log(workspace, "2026-02-01", "2026-02-02", dataset=True)
        assert table.num_rows == 2 and table["wall_hours"] == [round(60 / 3600, 4)] * 2
        assert client.work_log(workspace, "2026-02-02", "2026-02-02").rows == log.rows[1:]
        with pytest.raises(ValueError, match="csv or .parquet"):
            client.work_log(workspace, download=tmp_path / "log.xlsx")

    async def from_async():
        async with AsyncClient(live_server, admin) as client:
            return await client.work_log(workspace, "2026-02-01", "2026-02-02")

    assert asyncio.run(from_async()).rows == log.rows
    with Client(live_server, outsider) as client, pytest.raises(NotFound):
        client.work_log(workspace)

    assert main(["--server", live_server, "--token", admin, "worklog", str(workspace), "--start", "2026-02-01", "--end", "2026-02-02"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Days in UTC, 2026-02-01 to 2026-02-02: 2 rows." and out[1].startswith("2026-02-01\twl-worker\tLogged\t1 items")
    assert main(["--server", live_server, "--token", outsider, "worklog", str(workspace)]) == 1
