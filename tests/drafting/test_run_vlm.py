"""Drafting with a real model: a tiny random vision-language model served by a real `transformers
serve` process, and the same model through the local backend. Its answers are random text, so
each one must end as a counted draft failure with its raw text, never as a suggestion; the server's
token count shows that the image went with the request."""

from __future__ import annotations

import sqlalchemy as sa

from app.db import transaction
from app.drafting import run
from app.drafting.backends import DraftImage, DraftRequest, LocalBackend, json_instruction
from app.drafting.config import LocalDrafter
from app.models import DraftFailure, JobRun, Suggestion
from app.services.annotation import suggestions
from app.services.drafting import prompts
from app.worker import jobs, runtime
from tests.conftest import png_bytes
from tests.drafting.conftest import choice_stage, new_prompt, with_drafters
from tests.drafting.kinds import SCHEMA
from tests.drafting.tinyvlm import IMAGE_TOKENS

REASONS = ("not valid JSON: ", "empty answer", "does not follow the schema: ", "refused by test.choice: ")


def failures(sessions, prompt_id: int) -> dict[int, DraftFailure]:
    with transaction(sessions) as s:
        rows = {f.item_id: f for f in s.scalars(sa.select(DraftFailure).where(DraftFailure.prompt_id == prompt_id))}
        s.expunge_all()
    return rows


def test_drafts_through_transformers_serve_carry_the_image_and_random_answers_are_counted_failures(
    committed, settings, storage, vlm_server, tiny_vlm, draft_kinds, tmp_path
):
    cfg = with_drafters(settings, tmp_path, tiny={"backend": "openai", "base_url": vlm_server, "model": str(tiny_vlm), "max_in_flight": 4})
    stage_id, ids = choice_stage(committed, cfg, storage, 3)
    with_image, text_only = new_prompt(committed, stage_id, "tiny"), new_prompt(committed, stage_id, "tiny", kind="test.text_only")
    for prompt_id in (with_image, text_only):
        with transaction(committed) as s:
            prompts.start_run(s, cfg, prompt_id, "all")
    runtime.configure(cfg)
    jobs.make_app(cfg).run_worker(queues=["draft"], wait=False, install_signal_handlers=False)

    imaged, plain = failures(committed, with_image), failures(committed, text_only)
    assert sorted(imaged) == sorted(plain) == ids
    for item_id in ids:
        failure = imaged[item_id]
        assert failure.reason.startswith(REASONS), failure.reason
        assert failure.raw or failure.reason.startswith("empty answer")  # the model's text, kept as it came
        assert failure.model == str(tiny_vlm) and failure.latency_ms is not None
        assert 1 <= failure.completion_tokens <= 8  # the kind's max_tokens
        # The same prompt with and without the item's image: the server counted its patch tokens.
        assert failure.prompt_tokens - plain[item_id].prompt_tokens == IMAGE_TOKENS
    with transaction(committed) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Suggestion)) == 0
        assert all(suggestions.for_item(s, i, stage_id) == {} for i in ids)
        assert prompts.counts(s, prompts.get(s, with_image)) == prompts.RunCounts(items=3, drafted=0, failed=3)
        labels = sorted(s.scalars(sa.select(JobRun.label).where(JobRun.status == "succeeded")))
    assert labels == [f"prompt {p} · 3 items · 0 drafted, 3 invalid, 0 skipped" for p in sorted((with_image, text_only))]
    # The local backend reads the same model and chat template, and cannot constrain decoding: the
    # prompt asks for the schema (one token a byte with this tokenizer), all else is the same.
    local = with_drafters(settings, tmp_path, tiny={"backend": "local", "model_dir": tiny_vlm, "batch_size": 2})
    runtime.configure(local)
    local_prompt = new_prompt(committed, stage_id, "tiny")
    assert run.draft(local_prompt, ids) == run.Outcome(drafted=0, invalid=3, skipped=0)
    by_local = failures(committed, local_prompt)
    asks_for_json = len(json_instruction(SCHEMA).encode())
    assert {i: f.prompt_tokens - asks_for_json for i, f in by_local.items()} == {i: f.prompt_tokens for i, f in imaged.items()}
    assert all(f.model == "tiny-vlm" and f.reason.startswith(REASONS) for f in by_local.values())


def test_the_local_backend_batches_on_the_cpu_and_answers_each_request_in_order(tiny_vlm):
    drafter = LocalBackend("tiny", LocalDrafter(backend="local", model_dir=tiny_vlm, batch_size=2))
    image = DraftImage("image/png", png_bytes())
    asks = [
        DraftRequest(user=f"Question {i}", system="Be brief." if i % 2 else "", images=(image,) if i != 2 else (), max_tokens=6, seed=1)
        for i in range(5)
    ]
    replies = drafter.complete(asks)
    assert drafter.local.device == "cpu" and str(drafter.local.model.dtype) == "torch.float32"
    assert len(replies) == 5 and all(r.model == "tiny-vlm" and 1 <= r.completion_tokens <= 6 for r in replies)
    # Each reply is its own request's: asked alone (no padding), a request counts the same prompt tokens.
    alone = [drafter.complete([a])[0] for a in (asks[0], asks[2])]
    assert [r.prompt_tokens for r in alone] == [replies[0].prompt_tokens, replies[2].prompt_tokens]
    assert replies[0].prompt_tokens - replies[2].prompt_tokens == IMAGE_TOKENS  # same text length, one image more
