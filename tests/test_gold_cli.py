"""`vlcurate gold import`, `gold accuracy`, `leaks` and `export --no-leaks`, in-process against the test database."""

from __future__ import annotations

import json

import sqlalchemy as sa
from typer.testing import CliRunner

from app.cli import app as cli
from app.db import transaction
from app.models import Item, Project
from app.services.quality import gold
from tests.services.test_leaks import planted_project
from tests.test_cli import env  # noqa: F401 (the CLI's environment on the test database)

runner = CliRunner()


def test_leaks_block_an_export_until_groups_are_kept_together(env, settings, storage, tmp_path):  # noqa: F811
    with transaction(env) as s:
        project_id, planted = planted_project(s, settings, storage, tmp_path / "src")
        name = s.get(Project, project_id).name
    r = runner.invoke(cli, ["leaks", name])
    assert r.exit_code == 2, r.output
    assert "test / train: 30 leaked groups" in r.output

    out = tmp_path / "out"
    refused = runner.invoke(cli, ["export", name, "--format", "jsonl", "--out", str(out), "--no-leaks"])
    assert refused.exit_code == 1 and "30 leaked duplicate groups" in refused.output and not out.exists()
    warned = runner.invoke(cli, ["export", name, "--format", "jsonl", "--out", str(out)])
    assert warned.exit_code == 0 and "Warning" in warned.output

    fixed = runner.invoke(cli, ["leaks", name, "--keep-together", "--json"])
    assert fixed.exit_code == 0, fixed.output
    report = json.loads(fixed.output)
    assert report["version"] == 2 and report["leaked_groups"] == 0 and report["within_split_groups"] == 30
    clean = runner.invoke(cli, ["export", name, "--format", "jsonl", "--out", str(tmp_path / "out2"), "--no-leaks"])
    assert clean.exit_code == 0, clean.output


def test_gold_import_accuracy_and_gold_never_exported(env, settings, storage, tmp_path):  # noqa: F811
    with transaction(env) as s:
        project_id, _ = planted_project(s, settings, storage, tmp_path / "src", distinct=40)
        name = s.get(Project, project_id).name
        # A finished item made gold leaves the data.
        item_id = s.scalar(sa.select(Item.id).where(Item.external_id == "o3"))
        stage_id = s.scalar(sa.select(Item.stage_id).where(Item.id == item_id))
        gold.make_final_gold(s, item_id, stage_id, actor_id=None)
    (tmp_path / "gold.jsonl").write_text("\n".join(json.dumps({"id": f"o{i}", "answer": {"choice": "b"}}) for i in range(5, 9)))
    r = runner.invoke(cli, ["gold", "import", name, str(tmp_path / "gold.jsonl")])
    assert r.exit_code == 0 and "4 gold items" in r.output, r.output
    (tmp_path / "bad.jsonl").write_text('{"id": "o9", "answer": {"choice": "zzz"}}\n')
    bad = runner.invoke(cli, ["gold", "import", name, str(tmp_path / "bad.jsonl")])
    assert bad.exit_code == 1 and "line 1" in bad.output
    acc = runner.invoke(cli, ["gold", "accuracy", name, "--json"])
    assert acc.exit_code == 0 and json.loads(acc.output)["gold_items"] == 5

    runner.invoke(cli, ["splits", name, "--ratios", "train=0.5,test=0.5"])
    out = tmp_path / "out"
    r = runner.invoke(cli, ["export", name, "--format", "jsonl", "--out", str(out)])
    assert r.exit_code == 0, r.output
    exported = "\n".join(p.read_text() for p in out.rglob("*.jsonl"))
    assert '"o1"' in exported and '"o2"' in exported
    for gold_id in ("o3", "o5", "o6", "o7", "o8"):
        assert f'"{gold_id}"' not in exported
    # Off by default: no gold file, and the manifest names none.
    assert not (out / "gold.jsonl").exists() and "gold.jsonl" not in json.loads((out / "manifest.json").read_text())["files"]

    with_gold = tmp_path / "with-gold"
    r = runner.invoke(cli, ["export", name, "--format", "jsonl", "--out", str(with_gold), "--gold"])
    assert r.exit_code == 0 and "5 gold items in gold.jsonl" in r.output, r.output
    manifest = json.loads((with_gold / "manifest.json").read_text())
    assert manifest["gold_items"] == 5 and "gold.jsonl" in manifest["files"]
    lines = [json.loads(line) for line in (with_gold / "gold.jsonl").read_text().splitlines()]
    assert [line["id"] for line in lines] == ["o3", "o5", "o6", "o7", "o8"]
    assert lines[0]["answer"] == {"choice": "a"} and all(line["answer"] == {"choice": "b"} for line in lines[1:])
    assert lines[1]["data"]["id"] == "o5" and lines[1]["stage"]["workflow"] == "generic.choice"
    # The data files are the same as without the option: still no gold item in them.
    data = {p.name: p.read_bytes() for p in with_gold.glob("*.jsonl") if p.name != "gold.jsonl"}
    assert data == {p.name: p.read_bytes() for p in out.glob("*.jsonl")}
    assert manifest["files"].keys() - {"gold.jsonl"} == json.loads((out / "manifest.json").read_text())["files"].keys()
