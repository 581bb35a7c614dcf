"""Running a prompt version over a stage on the real job queue, against a real fault-injecting
OpenAI-compatible server: valid answers become suggestions the screen reads, invalid ones are
counted draft failures (never shown), a failing server fails the job with nothing half-stored,
re-runs skip what is drafted, and the API key goes nowhere but the request's header."""

from __future__ import annotations

import base64
import json
import logging
import re

import sqlalchemy as sa

from app.db import transaction
from app.drafting import run
from app.models import Base, DraftFailure, JobRun, Suggestion
from app.services.annotation import suggestions
from app.services.drafting import prompts
from app.worker import jobs, runtime
from tests.conftest import free_port, png_bytes
from tests.drafting.conftest import KEY, choice_stage, new_prompt, with_drafters
from tests.drafting.kinds import SCHEMA


def answer(choice: str, reason: str = "it is red") -> str:
    return f'{{"choice": "{choice}", "reason": "{reason}"}}'


def run_jobs(settings) -> None:
    """One in-process worker on the draft queue, until the queue is empty."""
    runtime.configure(settings)
    jobs.make_app(settings).run_worker(queues=["draft"], wait=False, install_signal_handlers=False)


def stored(sessions, prompt_id: int) -> tuple[dict[int, Suggestion], dict[int, DraftFailure]]:
    with transaction(sessions) as s:
        made = {x.item_id: x for x in s.scalars(sa.select(Suggestion).where(Suggestion.prompt_id == prompt_id))}
        failed = {f.item_id: f for f in s.scalars(sa.select(DraftFailure).where(DraftFailure.prompt_id == prompt_id))}
        s.expunge_all()
    return made, failed


def stub_settings(settings, tmp_path, stub, monkeypatch, **options):
    monkeypatch.setenv("STUB_KEY", KEY)
    table = {"backend": "openai", "base_url": stub.url, "model": "stub-vlm", "api_key_env": "STUB_KEY", "backoff_seconds": 0.01}
    return with_drafters(settings, tmp_path, stub=table | options)


def test_a_run_stores_valid_drafts_as_suggestions_and_invalid_ones_as_counted_failures(
    committed, settings, storage, fresh_stub, draft_kinds, tmp_path, monkeypatch
):
    cfg = stub_settings(settings, tmp_path, fresh_stub, monkeypatch, max_in_flight=4)
    stage_id, ids = choice_stage(committed, cfg, storage, 6)
    fresh_stub.set(replies=[
        ["Q0\n", answer("a")],
        ["Q1\n", "I think it is a"],  # not JSON
        ["Q2\n", '{"choice": 3, "reason": "x"}'],  # JSON, not of the schema
        ["Q3\n", answer("z")],  # refused by the kind: not a choice
        ["Q4\n", "```json\n" + answer("b") + "\n```"],  # fenced, as chat models write it
        ["Q5\n", '{"choice": "c", "reason": "\\u0000"}'],  # a NUL cannot be stored
    ])
    prompt_id = new_prompt(committed, stage_id, "stub", settings={"seed": 3})
    with transaction(committed) as s:
        started = prompts.start_run(s, cfg, prompt_id, "all")
    assert (started.items, started.batches) == (6, 1)
    run_jobs(cfg)

    made, failed = stored(committed, prompt_id)
    assert {ids.index(i): (m.payload, m.kind, m.model, m.model_version) for i, m in made.items()} == {
        0: ({"choice": "a", "reason": "it is red"}, "generic.draft_choice", "stub-vlm", "test.choice v1"),
        4: ({"choice": "b", "reason": "it is red"}, "generic.draft_choice", "stub-vlm", "test.choice v1"),
    }
    assert {ids.index(i): (f.reason, f.raw) for i, f in failed.items()} == {
        1: ("not valid JSON: Expecting value at line 1 column 1", "I think it is a"),
        2: ("does not follow the schema: 3 is not of type 'string' (at /choice)", '{"choice": 3, "reason": "x"}'),
        3: ("refused by test.choice: 'z' is none of the choices", answer("z")),
        5: ("not storable JSON: a NUL character (\\u0000), which cannot be stored", '{"choice": "c", "reason": "\\u0000"}'),
    }
    seen = {r["body"]["messages"][1]["content"][0]["text"]: r for r in fresh_stub.requests()}
    text = "Question: Q0\nChoose one of: a, b, c."
    drafted = made[ids[0]]
    assert (drafted.prompt_tokens, drafted.completion_tokens) == (len(text) + 100, len(answer("a")))
    assert drafted.latency_ms is not None and failed[ids[1]].latency_ms is not None
    body = seen[text]["body"]
    assert body["messages"][0] == {"role": "system", "content": "You answer questions about images."}
    assert body["messages"][1]["content"][1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(png_bytes()).decode()
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert (body["max_tokens"], body["temperature"], body["seed"]) == (8, 0, 3)
    with transaction(committed) as s:
        # The screen reads the newest suggestion of each kind: a drafted one, never a failure.
        assert suggestions.for_item(s, ids[0], stage_id)["generic.draft_choice"].payload["choice"] == "a"
        assert suggestions.for_item(s, ids[1], stage_id) == {}
        assert prompts.counts(s, prompts.get(s, prompt_id)) == prompts.RunCounts(items=6, drafted=2, failed=4)
        job = s.scalars(sa.select(JobRun).where(JobRun.task == "draft")).one()
    assert (job.status, job.done, job.label) == ("succeeded", 6, f"prompt {prompt_id} · 6 items · 2 drafted, 4 invalid, 0 skipped")


def test_a_rerun_skips_valid_drafts_and_tries_the_failed_ones_again(committed, settings, storage, fresh_stub, draft_kinds, tmp_path, monkeypatch):
    cfg = stub_settings(settings, tmp_path, fresh_stub, monkeypatch)
    stage_id, ids = choice_stage(committed, cfg, storage, 4)
    prompt_id = new_prompt(committed, stage_id, "stub")
    runtime.configure(cfg)
    fresh_stub.set(reply=answer("a"), replies=[["Q1\n", "nope"], ["Q3\n", "nope"]])
    assert run.draft(prompt_id, ids) == run.Outcome(drafted=2, invalid=2, skipped=0)
    first, _ = stored(committed, prompt_id)
    # The same batch again (a retried job, a second run): only the failed items are asked again.
    fresh_stub.set(reply=answer("b"), replies=[["Q3\n", "still nope"]])
    assert run.draft(prompt_id, ids) == run.Outcome(drafted=1, invalid=1, skipped=2)
    assert sorted(r["body"]["messages"][1]["content"][0]["text"][10:12] for r in fresh_stub.requests()) == ["Q1", "Q3"]
    made, failed = stored(committed, prompt_id)
    assert {i: m.id for i, m in made.items() if i in first} == {i: m.id for i, m in first.items()}  # untouched
    assert {ids.index(i): m.payload["choice"] for i, m in made.items()} == {0: "a", 1: "b", 2: "a"}
    assert {ids.index(i): f.raw for i, f in failed.items()} == {1: "nope", 3: "still nope"}  # one row each, the newest
    with transaction(committed) as s:
        assert prompts.counts(s, prompts.get(s, prompt_id)) == prompts.RunCounts(items=4, drafted=3, failed=1)
        assert prompts.chosen_items(s, prompts.get(s, prompt_id), "missing") == [ids[3]]
    # A second version is a new prompt: it drafts every item again, beside the first version's drafts.
    second = new_prompt(committed, stage_id, "stub", template="Q: {question}")
    assert run.draft(second, ids).drafted == 4
    with transaction(committed) as s:
        versions = s.execute(sa.select(Suggestion.model_version, sa.func.count()).group_by(Suggestion.model_version)).all()
    assert sorted(versions) == [("test.choice v1", 3), ("test.choice v2", 4)]


def test_an_item_without_its_stored_image_is_a_failed_draft_and_never_asked(
    committed, settings, storage, fresh_stub, draft_kinds, tmp_path, monkeypatch
):
    """The model would draft blind: the item is counted as a failed draft with the reason, no request is sent."""
    from app.models import Item

    cfg = stub_settings(settings, tmp_path, fresh_stub, monkeypatch)
    stage_id, ids = choice_stage(committed, cfg, storage, 3)
    with transaction(committed) as s:
        s.execute(sa.update(Item).where(Item.id == ids[1]).values(assets={}))  # its image named by URL, say
    prompt_id = new_prompt(committed, stage_id, "stub")
    runtime.configure(cfg)
    fresh_stub.set(reply=answer("a"))
    assert run.draft(prompt_id, ids) == run.Outcome(drafted=2, invalid=1, skipped=0)
    assert sorted(r["body"]["messages"][1]["content"][0]["text"][10:12] for r in fresh_stub.requests()) == ["Q0", "Q2"]
    made, failed = stored(committed, prompt_id)
    assert sorted(made) == [ids[0], ids[2]] and list(failed) == [ids[1]]
    assert failed[ids[1]].reason.startswith("the item lacks a stored image the kind sends (/image;")
    assert (failed[ids[1]].raw, failed[ids[1]].latency_ms) == ("", None)


def test_a_server_failing_one_request_fails_the_job_and_stores_nothing_of_the_batch(
    committed, settings, storage, fresh_stub, draft_kinds, tmp_path, monkeypatch
):
    cfg = stub_settings(settings, tmp_path, fresh_stub, monkeypatch, retries=2)
    stage_id, ids = choice_stage(committed, cfg, storage, 5)
    prompt_id = new_prompt(committed, stage_id, "stub")
    fresh_stub.set(reply=answer("a"), replies=[["Q1\n", "nope"]], fail_when="Q3\n", fail_status=500)
    with transaction(committed) as s:
        prompts.start_run(s, cfg, prompt_id, "all")
    run_jobs(cfg)
    made, failed = stored(committed, prompt_id)
    assert made == {} and failed == {}  # the four answers that came back are not half-stored
    with transaction(committed) as s:
        job = s.scalars(sa.select(JobRun).where(JobRun.task == "draft")).one()
        status = s.scalar(sa.text("SELECT status::text FROM procrastinate_jobs WHERE task_name = 'vlcurate:draft'"))
    assert (job.status, status) == ("failed", "failed")
    assert job.error == f"Drafter 'stub' at {fresh_stub.url} failed 3 times; last: HTTP 500 stub says 500."


def test_a_server_that_is_down_or_too_slow_fails_the_job_with_what_happened(
    committed, settings, storage, fresh_stub, draft_kinds, tmp_path, monkeypatch
):
    down = f"http://127.0.0.1:{free_port()}/v1"
    cfg = with_drafters(
        settings, tmp_path,
        down={"backend": "openai", "base_url": down, "model": "m", "retries": 1, "backoff_seconds": 0.01},
        slow={"backend": "openai", "base_url": fresh_stub.url, "model": "m", "retries": 0, "timeout_seconds": 0.3},
    )
    stage_id, ids = choice_stage(committed, cfg, storage, 2)
    runtime.configure(cfg)
    fresh_stub.set(latency=3, reply=answer("a"))
    for drafter, error in [
        ("down", rf"Drafter 'down' at {re.escape(down)} failed 2 times; last: ConnectError"),
        ("slow", rf"Drafter 'slow' at {re.escape(fresh_stub.url)} failed: no answer within 0\.3 s"),
        ("gone", r"names drafter 'gone', which this worker does not configure \(configured: down, slow\)"),
    ]:
        prompt_id = new_prompt(committed, stage_id, drafter)
        try:
            run.draft(prompt_id, ids)
        except runtime.JobFailed as exc:
            assert re.search(error, str(exc)), str(exc)
        else:
            raise AssertionError(f"{drafter}: the job did not fail")
        assert stored(committed, prompt_id) == ({}, {})


def test_429_then_success_drafts_every_item(committed, settings, storage, fresh_stub, draft_kinds, tmp_path, monkeypatch):
    cfg = stub_settings(settings, tmp_path, fresh_stub, monkeypatch, max_in_flight=2)
    stage_id, ids = choice_stage(committed, cfg, storage, 3)
    prompt_id = new_prompt(committed, stage_id, "stub")
    fresh_stub.set(reply=answer("c"), fail_first=3, fail_status=429, retry_after="0")
    runtime.configure(cfg)
    assert run.draft(prompt_id, ids) == run.Outcome(3, 0, 0)
    assert len(fresh_stub.requests()) == 6


def test_the_api_key_is_never_in_logs_the_database_or_job_arguments(
    committed, settings, storage, fresh_stub, draft_kinds, tmp_path, monkeypatch, caplog, engine
):
    cfg = stub_settings(settings, tmp_path, fresh_stub, monkeypatch)
    stage_id, ids = choice_stage(committed, cfg, storage, 3)
    good, bad = new_prompt(committed, stage_id, "stub"), new_prompt(committed, stage_id, "stub", template="Again: {question}")
    caplog.set_level(logging.DEBUG)
    fresh_stub.set(reply=answer("a"), replies=[["Q1\n", "not json"]], fail_first=2, fail_status=429, retry_after="0", echo_auth=True)
    with transaction(committed) as s:
        prompts.start_run(s, cfg, good, "all")
    run_jobs(cfg)
    # A server that quotes the key back in its refusal: the job's error has it blanked.
    fresh_stub.set(fail_first=-1, fail_status=403, echo_auth=True)
    with transaction(committed) as s:
        prompts.start_run(s, cfg, bad, "all")
    run_jobs(cfg)
    assert all(r["headers"]["authorization"] == f"Bearer {KEY}" for r in fresh_stub.requests())
    with transaction(committed) as s:
        runs = {r.label.split(" · ")[0]: r for r in s.scalars(sa.select(JobRun))}
    assert runs[f"prompt {good}"].status == "succeeded" and runs[f"prompt {bad}"].status == "failed"
    assert "refused the request: HTTP 403 stub says 403 to Bearer [key]" in runs[f"prompt {bad}"].error
    assert "HTTP Request: POST" in caplog.text and "try 2 of 5" in caplog.text  # httpx and the retries did log
    assert KEY not in caplog.text
    tables = [t.name for t in Base.metadata.sorted_tables] + ["procrastinate_jobs", "procrastinate_events"]
    with engine.connect() as conn:
        for table in tables:
            hits = conn.scalar(sa.text(f'SELECT count(*) FROM "{table}" t WHERE t::text LIKE :key'), {"key": f"%{KEY}%"})
            assert hits == 0, table
        args = conn.scalars(sa.text("SELECT args::text FROM procrastinate_jobs WHERE task_name = 'vlcurate:draft'")).all()
    assert len(args) == 2 and all(set(json.loads(a)) == {"prompt_id", "item_ids"} for a in args)
