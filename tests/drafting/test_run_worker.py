"""`vlcurate worker --queues draft`: a worker process that takes only drafting, says which drafters
it can call (never a key), and drafts a prompt run through them."""

from __future__ import annotations

import subprocess
import sys
import time

import sqlalchemy as sa

from app.db import transaction
from app.models import JobRun, Suggestion
from app.services.drafting import prompts
from tests.conftest import free_port
from tests.drafting.conftest import KEY, choice_stage, new_prompt, with_drafters

# The worker process declares the tests' draft kind on the generic dataset, then runs the CLI.
WORKER = (
    "import sys; from app.datasets.generic.dataset import Generic; from tests.drafting.kinds import CHOICE_KIND; "
    "Generic.drafts = (CHOICE_KIND,); from app.cli import main; sys.argv[0] = 'vlcurate'; main()"
)


def worker_env(settings, **extra) -> dict:
    import os

    return {
        **os.environ, "DATABASE_URL": settings.database_url, "VLCURATE_DATA_DIR": str(settings.data_dir),
        "VLCURATE_SECRET_KEY": settings.secret_key.get_secret_value(), "VLCURATE_DRAFTERS_FILE": str(settings.drafters_file),
        **extra,
    }


def test_a_draft_only_worker_lists_its_drafters_and_drafts(committed, settings, storage, fresh_stub, draft_kinds, tmp_path):
    down = f"http://127.0.0.1:{free_port()}/v1"
    cfg = with_drafters(
        settings, tmp_path,
        stub={"backend": "openai", "base_url": fresh_stub.url, "model": "stub-vlm", "api_key_env": "STUB_KEY", "backoff_seconds": 0.01},
        spare={"backend": "openai", "base_url": down.replace("http://", f"http://user:{KEY}@"), "model": "m"},
    )
    stage_id, ids = choice_stage(committed, cfg, storage, 3)
    prompt_id = new_prompt(committed, stage_id, "stub")
    fresh_stub.set(reply='{"choice": "b", "reason": "blue"}', fail_first=2, fail_status=429, retry_after="0")
    with transaction(committed) as s:
        prompts.start_run(s, cfg, prompt_id, "all")
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, "worker", "--queues", "draft"], env=worker_env(cfg, STUB_KEY=KEY),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and worker.poll() is None:
            with transaction(committed) as s:
                if s.scalar(sa.select(JobRun.status).where(JobRun.task == "draft")) in ("succeeded", "failed"):
                    break
            time.sleep(0.2)
    finally:
        worker.terminate()
        output = worker.communicate(timeout=30)[0]
    assert "Worker on queues draft;" in output, output
    assert f"drafter stub: openai {fresh_stub.url} model stub-vlm, 16 in flight, key from $STUB_KEY" in output
    assert f"drafter spare: openai {down} model m, 16 in flight" in output  # the URL's credentials are not shown
    assert "HTTP 429" in output and KEY not in output
    with transaction(committed) as s:
        assert s.scalar(sa.select(JobRun.label).where(JobRun.task == "draft")).endswith("3 drafted, 0 invalid, 0 skipped")
        assert sorted(s.scalars(sa.select(Suggestion.item_id).where(Suggestion.prompt_id == prompt_id))) == ids


def test_an_unknown_queue_is_refused(settings):
    out = subprocess.run(
        [sys.executable, "-c", WORKER, "worker", "--queues", "draft,drafts"], env=worker_env(settings.model_copy(update={"drafters_file": "-"})),
        capture_output=True, text=True, timeout=60,
    )
    said = " ".join(out.stdout.split())  # the console wraps long lines
    assert out.returncode == 2 and "Unknown queue drafts; the queues are suggest, draft, maintenance, export, webhook." in said
