"""Every dataset's draft kind, end to end: an item imported with its images into a stage that runs the
kind's workflow (the earlier stages finished by people), the kind's default prompt version, a run on the
job queue through a real OpenAI-compatible server, and the stage's screen.

- Against the fault-injecting stub answering the kind's valid answer (`test_kinds.DEMO_ANSWERS`): the
  request carries each image the kind names, byte for byte, and the kind's schema as strict
  `response_format`; the draft is a suggestion naming its prompt version, the server's model and
  tokens; the annotator's screen shows it.
- Against `transformers serve` on the tiny random model: every answer is a counted draft failure
  with its reason and raw text (the model writes random bytes), never a suggestion on a screen.
- Every kind's schema is one OpenAI's strict structured output takes; a schema it would refuse is
  asked as `json_object` with the schema in the prompt, and still checked whole.
"""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import replace

import pytest
import sqlalchemy as sa

from app.datasets import draft_kinds
from app.datasets.draft import DraftKind
from app.datasets.generic.dataset import Generic
from app.datasets.suggest import ItemInput
from app.db import transaction
from app.drafting import run
from app.drafting.backends import json_instruction
from app.drafting.strict import strict_schema_problems
from app.models import Asset, DraftFailure, Item, JobRun, Suggestion
from app.services.annotation import suggestions
from app.services.annotation.pipeline import results_by_stage
from app.services.drafting import prompts
from app.worker import runtime
from tests.conftest import login, make_user, start_annotating
from tests.drafting.conftest import choice_stage, new_prompt, with_drafters
from tests.drafting.kinds import CHOICE_KIND, SCHEMA
from tests.drafting.test_kinds import DEMO_ANSWERS
from tests.drafting.test_run import run_jobs
from tests.drafting.tinyvlm import IMAGE_TOKENS
from tests.staged import item_at

KINDS = draft_kinds()
REASONS = ("not valid JSON: ", "empty answer", "does not follow the schema: ", "not storable JSON: ")


def staged(committed, settings, storage, folder, kind: DraftKind) -> tuple[int, int]:
    """The first demo record of the kind's dataset, imported with its images into a project up to the
    kind's stage, the stages before finished by two annotators; it waits for annotators there."""
    folder.mkdir()
    stage_id, item_id, _ = item_at(committed, settings, storage, folder, kind.workflows[0], review=False)
    return stage_id, item_id


def item_input(session, storage, item_id: int, kind: DraftKind) -> ItemInput:
    """The item as a kind reads it: its record, the stored bytes of each image the kind sends, and
    the finals of the stages before."""
    item = session.get(Item, item_id)
    shas = {p: item.assets[p] for p in kind.images}
    keys = dict(session.execute(sa.select(Asset.sha256, Asset.storage_key).where(Asset.sha256.in_(shas.values()))).all())
    images = {p: storage.get(keys[sha]) for p, sha in shas.items()}
    return ItemInput(item_id, item.data, images, results_by_stage(session, item_id))


def screen_of(client, stage_id: int) -> str:
    """The stage's annotate screen, as a fresh annotator claims its item."""
    page = start_annotating(client, stage_id, follow_redirects=True)
    assert page.status_code == 200 and 'data-url="/assignments/' in page.text, page.text[:300]  # an item was claimed
    return page.text


def stub_drafter(settings, folder, stub):
    return with_drafters(settings, folder, stub={"backend": "openai", "base_url": stub.url, "model": "qwen2.5-vl-7b", "backoff_seconds": 0.01})


# -- 1. every kind through the stub, onto its screen ------------------------------------------------


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_drafts_through_a_server_onto_its_screen(name, committed, settings, storage, client, fresh_stub, tmp_path):
    kind = KINDS[name]
    cfg = stub_drafter(settings, tmp_path, fresh_stub)
    stage_id, item_id = staged(committed, cfg, storage, tmp_path / "items", kind)
    prompt_id = new_prompt(committed, stage_id, "stub", kind=name)
    answer = json.dumps(DEMO_ANSWERS[name])
    schema_name = name.replace(".", "_")  # a response_format name takes letters, digits, _ and -
    fresh_stub.set(by_schema={schema_name: answer})  # any other request gets "{}", which no kind takes
    with transaction(committed) as s:
        assert prompts.start_run(s, cfg, prompt_id, "all").items == 1
    run_jobs(cfg)

    [request] = fresh_stub.requests()
    body = request["body"]
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": schema_name, "schema": kind.schema, "strict": True}}
    assert body["model"] == "qwen2.5-vl-7b" and body["max_tokens"] == kind.settings["max_tokens"]
    assert body["messages"][0] == {"role": "system", "content": kind.system}
    text, *images = body["messages"][1]["content"]
    with transaction(committed) as s:
        item = item_input(s, storage, item_id, kind)
        made = s.scalars(sa.select(Suggestion).where(Suggestion.item_id == item_id)).one()
        shown = suggestions.for_item(s, item_id, stage_id)
        assert prompts.counts(s, prompts.get(s, prompt_id)) == prompts.RunCounts(items=1, drafted=1, failed=0)
    assert text == {"type": "text", "text": kind.template.format_map(kind.fields(item))}
    # Each image the kind names went with the request, in the kind's order, as the bytes stored.
    assert len(images) == len(kind.images)
    for part, pointer in zip(images, kind.images):
        head, _, data = part["image_url"]["url"].partition(",")
        assert head.startswith("data:image/") and head.endswith(";base64")
        assert base64.b64decode(data) == item.images[pointer], pointer

    assert (made.kind, made.prompt_id, made.model, made.model_version) == (kind.suggestion_kind, prompt_id, "stub-vlm", f"{name} v1")
    assert made.payload == kind.to_payload(DEMO_ANSWERS[name], item)  # with the item's images and earlier finals
    # The stub counts a character a token and 100 tokens an image.
    assert (made.prompt_tokens, made.completion_tokens) == (len(text["text"]) + 100 * len(kind.images), len(answer))
    assert made.latency_ms is not None
    assert shown[kind.suggestion_kind].id == made.id

    make_user(committed, "ann")
    login(client, "ann")
    assert f"stub-vlm {name} v1" in screen_of(client, stage_id)


# -- 2. every kind through transformers serve on a random model --------------------------------------


def test_every_kind_through_transformers_serve_is_checked_and_random_answers_are_never_shown(
    committed, settings, storage, client, vlm_server, tiny_vlm, tmp_path
):
    cfg = with_drafters(settings, tmp_path, tiny={"backend": "openai", "base_url": vlm_server, "model": str(tiny_vlm), "max_in_flight": 8})
    stages: dict[str, tuple[int, int]] = {}  # workflow: (stage, item); WikiDO's two kinds draft the same item
    drafted: dict[str, tuple[int, int, int]] = {}  # kind: (stage, item, prompt)
    for name, kind in sorted(KINDS.items()):
        workflow = kind.workflows[0]
        if workflow not in stages:
            stages[workflow] = staged(committed, cfg, storage, tmp_path / workflow, kind)
        stage_id, item_id = stages[workflow]
        # 24 tokens an answer keep a CPU run short; the kind's own settings otherwise.
        prompt_id = new_prompt(committed, stage_id, "tiny", kind=name, settings={**kind.settings, "max_tokens": 24, "seed": 0})
        with transaction(committed) as s:
            prompts.start_run(s, cfg, prompt_id, "all")
        drafted[name] = (stage_id, item_id, prompt_id)
    run_jobs(cfg)

    with transaction(committed) as s:
        failures = {f.prompt_id: f for f in s.scalars(sa.select(DraftFailure))}
        made = s.scalars(sa.select(Suggestion).where(Suggestion.prompt_id.is_not(None))).all()
        jobs_run = s.execute(sa.select(JobRun.status, JobRun.label).where(JobRun.task == "draft")).all()
        counts = {name: prompts.counts(s, prompts.get(s, p)) for name, (_, _, p) in drafted.items()}
        texts = {name: kind.template.format_map(kind.fields(item_input(s, storage, drafted[name][1], kind))) for name, kind in KINDS.items()}
        s.expunge_all()
    assert len(jobs_run) == len(KINDS) and all(status == "succeeded" for status, _ in jobs_run), jobs_run
    # Every answer was checked and is either a valid draft or a counted failure; random bytes are never valid.
    assert made == []
    assert counts == {name: prompts.RunCounts(items=1, drafted=0, failed=1) for name in KINDS}
    overhead = {}
    for name, (_, item_id, prompt_id) in drafted.items():
        failure = failures[prompt_id]
        assert failure.item_id == item_id and failure.reason.startswith(REASONS), (name, failure.reason)
        assert failure.raw or failure.reason.startswith("empty answer"), name  # the model's text, as it came
        assert failure.model == str(tiny_vlm) and failure.latency_ms is not None and 1 <= failure.completion_tokens <= 24
        # A token a byte: what the prompt counts beyond its text and system is the chat template's frame
        # and each image's patch tokens.
        text_bytes = len(texts[name].encode()) + len(KINDS[name].system.encode())
        overhead[name] = failure.prompt_tokens - text_bytes - IMAGE_TOKENS * len(KINDS[name].images)
    assert len(set(overhead.values())) == 1, overhead  # the same frame for every kind: each image arrived
    assert any(not KINDS[n].images for n in overhead) and any(len(KINDS[n].images) == 2 for n in overhead)

    make_user(committed, "ann")
    login(client, "ann")
    for workflow, (stage_id, item_id) in stages.items():
        with transaction(committed) as s:
            assert suggestions.for_item(s, item_id, stage_id) == {}
        screen = screen_of(client, stage_id)
        assert "data-suggestion" not in screen and not any(f"{name} v1" in screen for name in KINDS), workflow


# -- 3. strict structured output ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_schema_is_one_strict_structured_output_takes(name):
    assert strict_schema_problems(KINDS[name].schema) == []


def test_strict_schema_problems_name_what_strict_mode_refuses_and_where():
    item = {"type": "object", "properties": {"at": {"type": "string", "format": "date"}}, "required": ["at"], "additionalProperties": False}
    accepted = {
        "type": "object",
        "properties": {
            "label": {"type": "string", "enum": ["a", "b"]},
            "note": {"type": ["string", "null"], "pattern": "^[a-z]+$"},
            "score": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
            "rows": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"$ref": "#/$defs/row"}},
            "either": {"anyOf": [{"type": "integer"}, item]},
        },
        "required": ["label", "note", "score", "rows", "either"],
        "additionalProperties": False,
        "$defs": {"row": item},
    }
    assert strict_schema_problems(accepted) == [] and strict_schema_problems(SCHEMA) == []
    refused = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 9},
            "tags": {"type": "array", "uniqueItems": True, "items": {"type": "object", "properties": {"t": {"type": "string"}}}},
            "when": {"type": "string", "format": "uri", "default": ""},
            "kind": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "link": {"$ref": "#/definitions/x"},
        },
        "required": ["name", "tags", "when", "kind"],
    }
    assert strict_schema_problems(refused) == [
        "/: an object must set additionalProperties to false",
        "/: every property must be required; not required: link",
        "/properties/name: minLength is not supported",
        "/properties/name: maxLength is not supported",
        "/properties/tags: uniqueItems is not supported",
        "/properties/tags/items: an object must set additionalProperties to false",
        "/properties/tags/items: every property must be required; not required: t",
        "/properties/when: default is not supported",
        "/properties/when: format 'uri' is not supported",
        "/properties/kind: oneOf is not supported",
        "/properties/link: $ref '#/definitions/x' does not name the schema or one of its $defs",
    ]
    assert strict_schema_problems({"anyOf": [item]})[0] == '/: the root must be an object schema (type "object", no anyOf)'
    deep = item
    for _ in range(10):
        deep = {"type": "object", "properties": {"in": deep}, "required": ["in"], "additionalProperties": False}
    assert strict_schema_problems(deep) == ["/properties/in" * 10 + ": objects nested deeper than 10 levels"]


def test_a_schema_strict_mode_refuses_is_asked_as_json_object_and_still_checked_whole(
    committed, settings, storage, fresh_stub, tmp_path, monkeypatch, caplog
):
    loose = {**SCHEMA, "properties": {**SCHEMA["properties"], "reason": {"type": "string", "minLength": 3}}}
    monkeypatch.setattr(Generic, "drafts", (replace(CHOICE_KIND, schema=loose),))
    cfg = stub_drafter(settings, tmp_path, fresh_stub)
    stage_id, ids = choice_stage(committed, cfg, storage, 2)
    prompt_id = new_prompt(committed, stage_id, "stub")
    fresh_stub.set(replies=[["Q0\n", '{"choice": "a", "reason": "red"}'], ["Q1\n", '{"choice": "b", "reason": ""}']])
    runtime.configure(cfg)
    caplog.set_level(logging.WARNING, logger="app.drafting.backends")
    assert run.draft(prompt_id, ids) == run.Outcome(drafted=1, invalid=1, skipped=0)

    requests = fresh_stub.requests()
    assert len(requests) == 2
    for r in requests:
        assert r["body"]["response_format"] == {"type": "json_object"}
        assert r["body"]["messages"][1]["content"][0]["text"].endswith(json_instruction(loose))
    with transaction(committed) as s:
        failure = s.scalars(sa.select(DraftFailure).where(DraftFailure.prompt_id == prompt_id)).one()
    assert (failure.item_id, failure.reason) == (ids[1], "does not follow the schema: '' is too short (at /reason)")
    warnings = [r.getMessage() for r in caplog.records if "strict structured output" in r.getMessage()]
    assert warnings == [
        "drafter stub: the test.choice schema is not one strict structured output takes (/properties/reason: minLength is "
        "not supported); asking json_object with the schema in the prompt"
    ]
