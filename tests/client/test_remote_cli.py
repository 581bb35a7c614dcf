"""`vlcurate-remote` (the client distribution's command) against a live server, and `vlcurate gold
--server`: each command's output and exit status, a refusal's message, and every command in the README."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from app import ROOT
from app.cli import app as server_cli
from app.db import transaction
from tests import factories
from tests.client.test_client_live import png
from vlcurate import Client
from vlcurate.cli import main, parser


def run(capsys, *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


def test_every_command_is_in_the_readme():
    section = (ROOT / "README.md").read_text().split("\n## Remote CLI\n", 1)[1].split("\n## ", 1)[0]
    commands = parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name, sub in commands.items():
        actions = [a for a in sub._actions if a.choices] if sub._subparsers else []
        names = [f"{name} {action}" for group in actions for action in group.choices] or [name]
        for full in names:
            assert re.search(rf"vlcurate-remote {full}\b", section), full


@pytest.mark.committed
def test_remote_commands(live_server, committed, tmp_path, capsys, monkeypatch):
    with transaction(committed) as s:
        pid, (stage,) = factories.project(s, "wikido.verify", name="remote")
        admin = factories.token(s, factories.user(s, "r-admin", "admin"))
        annotator = factories.token(s, factories.user(s, "r-ann"))
    monkeypatch.setenv("VLCURATE_SERVER", live_server)
    monkeypatch.setenv("VLCURATE_TOKEN", admin)
    (tmp_path / "imgs").mkdir()
    for i in range(4):
        (tmp_path / "imgs" / f"i{i}.png").write_bytes(png(i))
    lines = [json.dumps({"image_id": f"r{i}", "caption": f"A cat {i} on a mat.", "image": f"i{i}.png"}) for i in range(4)]
    (tmp_path / "records.jsonl").write_text("\n".join(lines) + "\n")

    assert run(capsys, "import", "remote", str(tmp_path / "records.jsonl"), "--images", str(tmp_path / "imgs"))[1] == (
        "Imported 4 items (4 images, 4 new; 0 already there, 0 updated).\n")
    lines[0] = lines[0].replace("A cat 0", "A black cat 0")
    (tmp_path / "records.jsonl").write_text("\n".join(lines) + "\n")
    updated = run(capsys, "import", "remote", str(tmp_path / "records.jsonl"), "--images", str(tmp_path / "imgs"), "--update")
    assert updated == (0, "Imported 0 items (4 images, 0 new; 3 already there, 1 updated).\n", "")
    (tmp_path / "ids.txt").write_text("r3\nnope\n")
    status, out, err = run(capsys, "delete-records", "remote", "@" + str(tmp_path / "ids.txt"))
    assert status != 0 and out == "" and "'nope'" in err and "nothing was hidden" in err  # refused as a whole
    assert run(capsys, "delete-records", "remote", "r3")[1] == "Hid 1 items (0 hidden before).\n"
    (tmp_path / "hints.jsonl").write_text(json.dumps({"external_id": "r1", "kind": "wikido.itm", "payload": {"score": 0.5}}) + "\n")
    assert run(capsys, "suggest", "remote", "--from", str(tmp_path / "hints.jsonl"), "--model", "clip")[1] == "Stored 1 suggestions (0 unchanged).\n"

    with Client(live_server, annotator) as ann:
        while (claimed := ann.claim(stage)) is not None:
            ann.submit(claimed.assignment_id, {"verdict": "correct"})
    (tmp_path / "gold.jsonl").write_text(json.dumps({"id": "r0", "answer": {"verdict": "correct"}}) + "\n")
    assert run(capsys, "gold", "import", str(pid), str(tmp_path / "gold.jsonl"))[1] == "1 gold items in stage 'wikido.verify'.\n"
    status, out, _ = run(capsys, "gold", "accuracy", "remote", "--json")
    assert status == 0 and json.loads(out)["gold_items"] == 1
    assert run(capsys, "annotations", "remote", "--out", str(tmp_path / "a.jsonl"))[1] == f"Wrote 3 annotations to {tmp_path / 'a.jsonl'}.\n"
    assert {json.loads(line)["annotator"] for line in (tmp_path / "a.jsonl").read_text().splitlines()} == {"r-ann"}
    status, out, _ = run(capsys, "agreement", "remote", "--json")
    assert status == 0 and json.loads(out)[0]["stage"]["workflow"] == "wikido.verify"
    assert run(capsys, "project", "update", "remote", "--description", "cats")[1] == f"Project {pid} is 'remote'.\n"
    status, out, _ = run(capsys, "project", "list", "--json")
    assert status == 0 and json.loads(out)[0]["description"] == "cats"

    monkeypatch.setenv("VLCURATE_PASSWORD", "a long password 123")
    assert run(capsys, "user", "create", "r-new", "--role", "reviewer")[1].startswith("Created reviewer 'r-new'")
    token = run(capsys, "token", "create", "r-new")[1].strip()
    with Client(live_server, token) as newcomer:
        assert newcomer.projects()[0].name == "remote"
    assert "r-new\treviewer" in run(capsys, "user", "list")[1]

    status, out, err = run(capsys, "--token", annotator, "project", "delete", "remote", "--confirm", "remote")
    assert (status, out) == (1, "") and err.startswith("Error: ")
    assert run(capsys, "project", "delete", "remote", "--confirm", "remote")[1].startswith("Deleted project 'remote' (archived")
    status, out, _ = run(capsys, "project", "list", "--archived", "--json")
    assert status == 0 and [(p["id"], p["items"]) for p in json.loads(out)] == [(pid, 3)] and json.loads(out)[0]["archived_at"]
    assert run(capsys, "project", "list")[1] == "No projects yet.\n"
    assert run(capsys, "project", "restore", "remote")[1] == f"Restored project {pid}, 'remote'.\n"
    assert run(capsys, "--server", "localhost:1", "project", "list") == (
        1, "", "Error: The server's URL 'localhost:1' needs its scheme and host, as in http://localhost:8000 or https://localhost:1\n")

    # The server's own command line through --server: gold import and accuracy too.
    runner = CliRunner()
    done = runner.invoke(server_cli, ["gold", "accuracy", "remote", "--json", "--server", live_server, "--token", admin])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["gold_items"] == 1
    again = runner.invoke(server_cli, ["gold", "import", "remote", str(tmp_path / "gold.jsonl"), "--server", live_server, "--token", admin])
    assert again.exit_code == 0 and "1 gold items in stage 'wikido.verify'." in again.output
