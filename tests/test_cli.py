"""The `vlcurate` command line, run in-process against the test database."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from app.cli import app as cli
from app.db import transaction
from app.models import ApiToken, Item, Project, User
from app.settings import get_settings
from tests.conftest import png_bytes

runner = CliRunner()


@pytest.fixture
def env(settings, committed, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    monkeypatch.setenv("VLCURATE_DATA_DIR", str(settings.data_dir))
    get_settings.cache_clear()
    yield committed
    get_settings.cache_clear()


def invoke(*args, input=None):
    result = runner.invoke(cli, list(args), input=input)
    return result


def test_user_token_project_import(env, tmp_path):
    r = invoke("user", "create", "carol", "--role", "admin", "--password-stdin", input="a good password\n")
    assert r.exit_code == 0, r.output
    r = invoke("user", "create", "dave")
    assert r.exit_code == 0 and "One-time password:" in r.output
    with transaction(env) as s:
        dave = s.scalar(sa.select(User).where(User.username == "dave"))
        assert dave.must_change_password and dave.role == "annotator"

    r = invoke("token", "create", "carol")
    assert r.exit_code == 0 and r.output.strip().startswith("vlc_")
    with transaction(env) as s:
        token_id = s.scalar(sa.select(ApiToken.id))
    assert invoke("token", "revoke", str(token_id)).exit_code == 0
    with transaction(env) as s:
        assert s.get(ApiToken, token_id).revoked_at is not None
    r = invoke("token", "revoke", "999")
    assert r.exit_code == 1 and "No token with id 999" in r.output

    r = invoke("project", "create", "Cats", "--workflow", "generic.choice", "--overlap", "2", "--config", '{"choices": ["cat", "dog"]}')
    assert r.exit_code == 0, r.output
    project_id = int(r.output.strip())

    (tmp_path / "cat.png").write_bytes(png_bytes())
    (tmp_path / "items.jsonl").write_text("\n".join(json.dumps({"id": f"c{i}", "image": "cat.png"}) for i in range(5)))
    r = invoke("import", str(project_id), str(tmp_path / "items.jsonl"))
    assert r.exit_code == 0, r.output
    assert "Imported 5 items" in r.output
    with transaction(env) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Item)) == 5


def test_cli_errors_are_messages_not_tracebacks(env, tmp_path):
    r = invoke("project", "create", "X", "--workflow", "nope")
    assert r.exit_code == 1 and "Unknown workflow 'nope'" in r.output and "Traceback" not in r.output
    invoke("project", "create", "Y", "--workflow", "generic.choice", "--config", '{"choices": ["a", "b"]}')
    (tmp_path / "bad.jsonl").write_text('{"id": "1", "image": "a.png"}\n{"id": "2"}\n')
    r = invoke("import", "Y", str(tmp_path / "bad.jsonl"))
    assert r.exit_code == 1 and "line 2: field 'image': Field required" in r.output
    r = invoke("user", "create", "bad name!", "--role", "annotator")
    assert r.exit_code == 1 and "username" in r.output
    r = invoke("token", "create", "ghost")
    assert r.exit_code == 1 and "No user named 'ghost'" in r.output


def test_demo_is_idempotent(env):
    r = invoke("demo")
    assert r.exit_code == 0, r.output
    assert "Created project Demo: shapes" in r.output and "alice" in r.output
    r = invoke("demo")
    assert r.exit_code == 0 and "Created project" not in r.output
    with transaction(env) as s:
        # shapes 30 + 20, ColorSwap 12, WikiDO 12, VisArgs 6, VOLDOGER 7, ExpArt 20 sections + 12 explanations,
        # gold items 40, leaky splits 60
        assert s.scalar(sa.select(sa.func.count()).select_from(Item)) == 30 + 20 + 12 + 12 + 6 + 7 + 20 + 12 + 40 + 60


def test_suggest_queues_jobs_once_and_warns_about_missing_models(env, tmp_path):
    from tests.conftest import colorswap_records

    records, files = colorswap_records(2)
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    (tmp_path / "pairs.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    assert invoke("project", "create", "CS", "--workflow", "colorswap.filter").exit_code == 0
    assert invoke("import", "CS", str(tmp_path / "pairs.jsonl"), "--images", str(tmp_path)).exit_code == 0
    r = invoke("suggest", "CS", "--no-wait")
    assert r.exit_code == 0, r.output
    assert "Enqueued 1 jobs for 2 items" in r.output and "VLCURATE_CLIP_MODEL_DIR" in r.output
    # The batch is already waiting: a second call queues nothing new.
    r = invoke("suggest", "CS", "--no-wait")
    assert "Enqueued 0 jobs" in r.output
    r = invoke("suggest", "CS", "--stage", "nope")
    assert r.exit_code == 1 and "has no stage 'nope'" in r.output


def test_agreement_report(env, settings, storage):
    from app.services.annotation import annotation
    from tests.conftest import make_choice_project, make_user

    _, stage_id = make_choice_project(env, settings, storage, 4, overlap=2, name="Agree")
    users = [make_user(env, f"a{k}") for k in range(2)]
    for n, user in enumerate(users):
        for i in range(4):
            with transaction(env) as s:
                claimed = annotation.claim(s, stage_id, user)
                choice = "a" if (i < 3 or n == 0) else "b"
                annotation.submit(s, claimed.assignment_id, user, {"choice": choice}, f"{user}-{i}")
    r = invoke("agreement", "Agree", "--json", "--samples", "50")
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)[0]
    assert report["items"] == 4 and report["facets"]["choice"]["metrics"]["percent agreement"]["estimate"] == 0.75
    r = invoke("agreement", "Agree", "--samples", "50")
    assert r.exit_code == 0 and "percent agreement" in r.output and "0.750" in r.output
    assert invoke("agreement", "Agree", "--stage", "nope").exit_code == 1


def test_sampled_project_and_equivalence_commands(env, tmp_path):
    from app.models import StageSample

    r = invoke("project", "create", "Once", "--workflow", "generic.choice", "--sample", "3", "--config", '{"choices": ["a", "b"]}')
    assert r.exit_code == 1 and "two or more annotators" in " ".join(r.output.split())
    assert invoke("project", "create", "Few", "--workflow", "generic.choice", "--overlap", "2", "--sample", "0").exit_code == 1
    r = invoke("project", "create", "Sampled", "--workflow", "generic.choice", "--overlap", "2", "--sample", "3",
               "--sample-seed", "9", "--config", '{"choices": ["a", "b"]}')
    assert r.exit_code == 0, r.output
    (tmp_path / "a.png").write_bytes(png_bytes())
    (tmp_path / "items.jsonl").write_text("\n".join(json.dumps({"id": str(i), "image": "a.png"}) for i in range(10)))
    assert invoke("import", "Sampled", str(tmp_path / "items.jsonl"), "--images", str(tmp_path)).exit_code == 0
    with transaction(env) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(StageSample)) == 3

    r = invoke("equivalence", "Sampled")
    assert r.exit_code == 1 and "no stage with free-text answers" in r.output
    assert invoke("project", "create", "Args", "--workflow", "visargs.premises", "--workflow", "visargs.structure").exit_code == 0
    r = invoke("equivalence", "Args")  # no answers yet: nothing to judge, and no empty companion project
    assert r.exit_code == 1 and "Nothing to judge yet" in r.output, r.output
    with transaction(env) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Project).where(Project.name.like("Args · %"))) == 0


def test_splits_and_export_commands(env, settings, storage, tmp_path):
    from tests.services.test_splits import finished_project

    finished_project(env, settings, storage, tmp_path, 10, name="Done")
    r = invoke("splits", "Done", "--counts", "train=6,test=4", "--seed", "3")
    assert r.exit_code == 0, r.output
    assert "train 6, test 4" in r.output
    r = invoke("splits", "Done", "--ratios", "train=0.5,test=0.4")
    assert r.exit_code == 1 and "add up to 0.9" in r.output
    r = invoke("splits", "Done", "--ratios", "train=half")
    assert r.exit_code == 1 and "NAME=SIZE" in r.output
    r = invoke("splits", "Done", "--list")
    assert r.exit_code == 0 and "train 6, test 4" in r.output

    r = invoke("export", "Done", "--format", "jsonl", "--out", str(tmp_path / "out"))
    assert r.exit_code == 0, r.output
    assert "Exported train 6, test 4" in r.output
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["split_definition"]["version"] == 1 and sorted(manifest["files"]) == ["test.jsonl", "train.jsonl"]
    assert len((tmp_path / "out" / "train.jsonl").read_text().splitlines()) == 6
    r = invoke("export", "Done", "--format", "coco", "--out", str(tmp_path / "coco"))
    assert r.exit_code == 1 and "coco format can't express" in r.output and "use one of: published, jsonl, parquet" in r.output
    r = invoke("export", "Done", "--format", "xml", "--out", str(tmp_path / "x"))
    assert r.exit_code == 1 and "Unknown export format" in r.output


def test_project_create_names_stages_and_adds_follow_on_stages(env, tmp_path):
    """Stages made from the command line carry their workflow's name, not the workflow id; one
    --workflow gets the stages that follow it (as the web form does) and says so."""
    from app.models import Stage

    r = invoke("project", "create", "CS", "--workflow", "colorswap.filter")
    assert r.exit_code == 0, r.output
    assert "Added the stages that follow colorswap.filter: colorswap.recaption" in r.output
    with transaction(env) as s:
        stages = s.execute(sa.select(Stage.workflow, Stage.name).join(Project).where(Project.name == "CS").order_by(Stage.position)).all()
    assert [tuple(st) for st in stages] == [
        ("colorswap.filter", "Choose the image for each caption"), ("colorswap.recaption", "Rewrite a caption pair"),
    ]


def test_project_list_shows_each_projects_workflows_and_counts(env, tmp_path, monkeypatch):
    from app.cli.common import console

    monkeypatch.setattr(console, "_width", 160)  # a table row a line (the console exists before the test)
    r = invoke("project", "list")
    assert r.exit_code == 0 and "No projects yet" in r.output
    assert invoke("project", "create", "[bold]Cats[/bold]", "--workflow", "generic.choice", "--config", '{"choices": ["cat", "dog"]}').exit_code == 0
    assert invoke("project", "create", "CS", "--workflow", "colorswap.filter").exit_code == 0
    (tmp_path / "cat.png").write_bytes(png_bytes())
    (tmp_path / "items.jsonl").write_text("\n".join(json.dumps({"id": f"c{i}", "image": "cat.png"}) for i in range(3)))
    assert invoke("import", "[bold]Cats[/bold]", str(tmp_path / "items.jsonl")).exit_code == 0
    with transaction(env) as s:
        s.execute(sa.update(Item).where(Item.external_id == "c0").values(status="done"))

    r = invoke("project", "list")
    assert r.exit_code == 0, r.output
    assert "[bold]Cats[/bold]" in r.output  # a name is shown as typed, never read as console markup
    assert "colorswap.filter → colorswap.recaption" in r.output
    r = invoke("project", "list", "--json")
    listed = json.loads(r.output)
    assert [(p["name"], [s["workflow"] for s in p["stages"]]) for p in listed] == [
        ("[bold]Cats[/bold]", ["generic.choice"]), ("CS", ["colorswap.filter", "colorswap.recaption"]),
    ]
    assert (listed[0]["items"], listed[0]["done"], listed[1]["items"]) == (3, 1, 0)
    assert type(listed[0]["items"]) is int  # counts are whole numbers, as the API gives them


def test_equivalence_project_imports_and_shows_the_records_image(env, tmp_path, app, client):
    """A visargs.equivalence record's "image" is stored on import (it was dropped: "0 images") and
    drawn on the judging screen."""
    from tests.conftest import login, make_user, start_annotating

    r = invoke("project", "create", "Judge", "--workflow", "visargs.equivalence")
    assert r.exit_code == 0 and "Added" not in r.output, r.output
    (tmp_path / "poster.png").write_bytes(png_bytes())
    records = [{"id": str(i), "conclusion_a": "Save water.", "conclusion_b": "Fix taps.", "image": "poster.png"} for i in range(2)]
    records.append({"id": "no-image", "conclusion_a": "Save water.", "conclusion_b": "Fix taps."})
    (tmp_path / "pairs.jsonl").write_text("\n".join(json.dumps(rec) for rec in records))
    r = invoke("import", "Judge", str(tmp_path / "pairs.jsonl"), "--images", str(tmp_path))
    assert r.exit_code == 0 and "Imported 3 items (1 images, 1 new)" in r.output, r.output
    with transaction(env) as s:
        assets = dict(s.execute(sa.select(Item.external_id, Item.assets)).all())
        stage_id = s.scalar(sa.text("select s.id from stages s join projects p on p.id = s.project_id where p.name = 'Judge'"))
    assert set(assets["0"]) == {"/image"} and assets["no-image"] == {}
    make_user(env, "judge")
    login(client, "judge")
    html = start_annotating(client, stage_id).text
    assert "Do these two conclusions say the same thing?" in html and "data-zoom-open" in html  # the image, drawn
