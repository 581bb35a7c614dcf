"""Drafting through a live server: the Python client and `vlcurate draft` (remote and on the
database) list kinds, save versions, queue runs and follow them, and read the evaluation, equal to
the agreement module computed directly, with its per-item rows as Parquet."""

from __future__ import annotations

import json
import re
import threading
from contextlib import contextmanager

import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from app.cli import app as cli
from app.db import transaction
from app.settings import get_settings
from tests import factories
from tests.drafting.test_eval import expected_kappa, two_versions
from vlcurate import Client, Invalid, VlcurateError

KIND = "generic.test-choice"
runner = CliRunner()
pytestmark = pytest.mark.committed


@pytest.fixture
def drafted(committed, settings, storage, tmp_path, monkeypatch):
    with transaction(committed) as s:
        sc = two_versions(s, settings, storage, tmp_path, monkeypatch)
        token = factories.token(s, factories.user(s, "draft-admin", "admin"))
    return sc, token


@contextmanager
def worker_stand_in(sessions, outcome: str = "succeeded", error: str | None = None):
    """Finishes each queued draft job as a worker would report it (the job body is the drafting
    backends' to test): succeeded, or failed with `error`."""
    stop = threading.Event()

    def run():
        while not stop.wait(0.05):
            with transaction(sessions) as s:
                ids = s.scalars(sa.text("UPDATE procrastinate_jobs SET status = :o WHERE task_name = 'vlcurate:draft' AND status = 'todo' "
                                        "RETURNING id"), {"o": outcome}).all()
                for job_id in ids:
                    s.execute(sa.text("INSERT INTO job_runs (job_id, task, status, error) VALUES (:id, 'draft', :o, :e)"),
                              {"id": job_id, "o": outcome, "e": error})

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)


def test_the_client_makes_versions_runs_them_and_reads_the_evaluation(live_server, committed, drafted, tmp_path):
    sc, token = drafted
    v1, v2 = sc.prompts
    with Client(live_server, token) as api:
        assert [k.name for k in api.draft_kinds(sc.stage_id)] == [KIND]
        v3 = api.draft_prompt(sc.stage_id, KIND, "test-drafter", template="{question}? ({choices})", max_tokens=8, note="terse")
        assert (v3.version, v3.template, v3.settings, v3.note) == (3, "{question}? ({choices})", {"max_tokens": 8, "temperature": 0.0}, "terse")
        assert [p.version for p in api.draft_prompts(sc.stage_id)] == [1, 2, 3]
        with pytest.raises(Invalid, match="names {nope}"):
            api.draft_prompt(sc.stage_id, KIND, "test-drafter", template="{nope}")

        started = api.draft(v3.id, scope="sample", sample=5, seed=1)
        assert (started.items, started.batches, len(started.job_ids)) == (5, 1, 1)
        assert api.prompt(v3.id, run=started.run_id).run.waiting == 1
        # Asked before a worker runs: one that has taken the batch would let it be queued again.
        assert api.draft(v3.id, scope="sample", sample=5, seed=1).job_ids == []  # the same batch waits already
        with worker_stand_in(committed):
            done = api.draft(v2.id, scope="all", wait=True, poll=0.05, timeout=20)
        assert (done.id, done.run.jobs, done.run.succeeded, done.run.done, done.run.active) == (v2.id, 2, 2, 52, False)
        with worker_stand_in(committed, "failed", "drafter vllm (http://gpu:8000/v1) answered 500 after 4 retries"):
            with pytest.raises(VlcurateError, match="1 of 1 draft jobs of prompt .* failed: drafter vllm"):
                api.draft(v1.id, scope="sample", sample=3, wait=True, poll=0.05, timeout=20)
        with pytest.raises(VlcurateError, match=r"still has 2 jobs waiting or running after 0.2 s \(0/52 items\)"):
            api.draft(v3.id, scope="all", wait=True, poll=0.05, timeout=0.2)

        found = api.draft_evaluation(sc.stage_id, [v1.id, done], parquet=tmp_path / "eval.parquet")  # ids or PromptOut rows
    for version, prompt in zip(found.versions, (v1, v2), strict=True):
        estimate, ci = expected_kappa(sc.pairs[prompt.id])
        kappa = version.figures[0]
        assert (kappa.estimate, kappa.low, kappa.high) == pytest.approx((estimate, ci.low, ci.high), abs=1e-12)
    rows = pq.read_table(tmp_path / "eval.parquet").to_pylist()
    assert len(rows) == 96 and {r["prompt_id"] for r in rows} == {v1.id, v2.id}


def test_the_draft_commands_through_the_server(live_server, committed, drafted, tmp_path, monkeypatch):
    sc, token = drafted
    v1, v2 = sc.prompts
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")  # only the API can answer
    monkeypatch.setenv("VLCURATE_SERVER", live_server)
    monkeypatch.setenv("VLCURATE_TOKEN", token)
    kinds = runner.invoke(cli, ["draft", "kinds", str(sc.stage_id)])
    assert kinds.exit_code == 0, kinds.output
    assert f"{KIND}: Pick the answer" in kinds.output and "template fields: {question}, {choices}" in kinds.output
    assert re.search(rf"│ {v1.id} +│ 1 +│ test-drafter +│ 48 +│ 4 +│ 52 ", kinds.output), kinds.output
    (tmp_path / "t.txt").write_text("Look: {question}\nPick one of {choices}.")
    made = runner.invoke(cli, ["draft", "prompt", str(sc.stage_id), KIND, "--drafter", "test-drafter", "--template-file",
                               str(tmp_path / "t.txt"), "--temperature", "0.3", "--note", "from a file"])
    assert made.exit_code == 0, made.output
    v3 = int(made.output.strip().splitlines()[-1])
    assert f"Saved {KIND} version 3" in made.output
    ran = runner.invoke(cli, ["draft", "run", str(v3), "--scope", "sample", "--sample", "3", "--no-wait"])
    assert ran.exit_code == 0 and "Queued 1 draft jobs for 3 items" in ran.output, ran.output
    with worker_stand_in(committed):
        followed = runner.invoke(cli, ["draft", "run", str(v1.id), "--scope", "all"])
    assert followed.exit_code == 0 and "Drafted: 48 of 52 items have a valid draft of version 1; 4 failed." in followed.output, followed.output
    refused = runner.invoke(cli, ["draft", "prompt", str(sc.stage_id), "nope.kind", "--drafter", "d"])
    assert refused.exit_code == 1 and "Draft kind 'nope.kind' does not draft" in refused.output

    evaluated = runner.invoke(cli, ["draft", "eval", str(sc.stage_id), "--prompts", f"{v1.id},{v2.id}", "--parquet", str(tmp_path / "e.parquet")])
    assert evaluated.exit_code == 0, evaluated.output
    estimate, ci = expected_kappa(sc.pairs[v2.id])
    assert f"{estimate:.3f}" in evaluated.output and f"[{ci.low:.3f}, {ci.high:.3f}]" in evaluated.output
    assert pq.read_table(tmp_path / "e.parquet").num_rows == 96


def test_the_draft_commands_on_the_database(committed, drafted, settings, tmp_path, monkeypatch):
    sc, _ = drafted
    v1, v2 = sc.prompts
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    monkeypatch.setenv("VLCURATE_DATA_DIR", str(settings.data_dir))
    monkeypatch.delenv("VLCURATE_SERVER", raising=False)
    get_settings.cache_clear()
    try:
        listed = runner.invoke(cli, ["draft", "kinds", str(sc.stage_id), "--json"])
        assert listed.exit_code == 0, listed.output
        assert [v["version"] for v in json.loads(listed.output)["versions"]] == [1, 2]
        made = runner.invoke(cli, ["draft", "prompt", str(sc.stage_id), KIND, "--drafter", "local-vlm", "--max-tokens", "4"])
        assert made.exit_code == 0, made.output
        v3 = int(made.output.strip().splitlines()[-1])
        with worker_stand_in(committed, "failed", "drafter local-vlm: no model in /models/none"):
            failed = runner.invoke(cli, ["draft", "run", str(v3), "--scope", "sample", "--sample", "2"])
        assert failed.exit_code == 1 and "1 of 1 draft jobs failed: drafter local-vlm: no model in /models/none" in failed.output
        evaluated = runner.invoke(cli, ["draft", "eval", str(sc.stage_id), "--prompts", f"{v1.id},{v2.id}", "--json", "--samples", "200"])
        assert evaluated.exit_code == 0, evaluated.output
        found = json.loads(evaluated.output)
        for version in found["versions"]:
            estimate, ci = expected_kappa(sc.pairs[version["prompt_id"]], samples=200)
            assert version["figures"][0]["estimate"] == pytest.approx(estimate, abs=1e-12)
            assert (version["figures"][0]["low"], version["figures"][0]["high"]) == pytest.approx((ci.low, ci.high), abs=1e-12)
        bad = runner.invoke(cli, ["draft", "eval", str(sc.stage_id), "--prompts", "1,x"])
        assert bad.exit_code == 1 and "not 'x'" in bad.output
    finally:
        get_settings.cache_clear()
