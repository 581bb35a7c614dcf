"""Drafted suggestions in real Chromium: a model's answer made into a suggestion by its draft kind and stored
under a prompt version, then taken on the screen with the screen's own keys. What is stored is the draft as
the kind shapes it into an answer (`as_answer`), and the outcome is recorded against the drafted suggestion."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import sqlalchemy as sa

from app.datasets import draft_kinds
from app.datasets.suggest import ItemInput
from app.datasets.visargs.demo import draw_poster
from app.db import transaction
from app.models import Annotation, Item, Suggestion, SuggestionOutcome
from app.services.annotation import suggestions
from app.services.drafting import prompts
from app.services.imports import imports
from app.services.projects import projects
from tests.conftest import make_user, png_bytes
from tests.e2e.conftest import Keys, open_stage

MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"
PAINTED = {"image_id": "p", "orig_cap": "A square on a white wall.", "caption": "A square painted by a famous artist on a white wall.",
           "image": "p.png", "topic": "art"}
POSTER = {
    "id": "poster-1",
    "image": "poster.png",
    "candidate_premises": ["A dripping kitchen tap", "A smiling child"],
    "candidate_conclusion": "Save water: fix dripping taps.",
}


def _project(committed, settings, storage, workflows: list[str], record: dict, image: bytes) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp, transaction(committed) as s:
        Path(tmp, record["image"]).write_bytes(image)
        project = projects.create_project(s, "Drafted", [projects.StageSpec(workflow=w) for w in workflows])
        source = imports.ImageSource(settings, storage, base=Path(tmp))
        imports.import_items(s, project.id, json.dumps(record).encode(), "a.jsonl", settings=settings, storage=storage, images=source)
        return {st.workflow: st.id for st in projects.stages_of(s, project.id)}


def _draft(committed, stage_id: int, kind_name: str, model_answer: dict) -> tuple[dict, dict]:
    """A prompt version of the kind for the stage, and the model's answer stored as its suggestion, as the
    drafting job stores one; returns the payload and the answer the kind makes of it."""
    kind = draft_kinds()[kind_name]
    with transaction(committed) as s:
        prompt = prompts.new_version(s, stage_id, kind.name, drafter="vllm")
        item = s.scalar(sa.select(Item).where(Item.stage_id == stage_id))
        draft = ItemInput(item.id, item.data, {}, {})
        payload = kind.to_payload(model_answer, draft)
        suggestions.store(s, item.id, stage_id, kind.suggestion_kind, MODEL, payload,
                          model_version=f"{kind.name} v{prompt.version}", prompt_id=prompt.id)
        return payload, kind.as_answer(payload, draft)


def _answer_and_outcome(committed, stage_id: int) -> tuple[dict, list[tuple[str, str, int | None]]]:
    with transaction(committed) as s:
        annotation = s.scalar(sa.select(Annotation).where(Annotation.stage_id == stage_id))
        outcomes = s.execute(
            sa.select(SuggestionOutcome.kind, SuggestionOutcome.outcome, Suggestion.prompt_id)
            .join(Suggestion, Suggestion.id == SuggestionOutcome.suggestion_id)
            .where(SuggestionOutcome.annotation_id == annotation.id)
        ).all()
        return annotation.payload, [tuple(o) for o in outcomes]


def _submit(page, keys: Keys, *pressed: str) -> None:
    url = page.url
    keys.press(*pressed)
    page.wait_for_url(lambda u, old=url: u != old)
    assert not keys.errors, keys.errors


def test_wikido_drafted_underline_taken_with_one_key(page, committed, settings, storage):
    stages = _project(committed, settings, storage, ["wikido.verify"], PAINTED, png_bytes())
    stage_id = stages["wikido.verify"]
    payload, answer = _draft(committed, stage_id, "wikido.unsupported", {"phrases": ["Painted by a famous artist"], "unrelated": False})
    assert payload == {"spans": [[2, 7]]}
    make_user(committed, "wd")
    open_stage(page, "wd", stage_id)
    marked = page.locator(".tok.unsupported")
    assert [marked.nth(k).inner_text() for k in range(marked.count())] == ["painted", "by", "a", "famous", "artist"]
    assert page.locator("[data-suggestion] code").inner_text() == f"{MODEL} wikido.unsupported v1"
    keys = Keys(page)
    _submit(page, keys, "a", "Enter")
    assert keys.count == 2
    stored, outcomes = _answer_and_outcome(committed, stage_id)
    assert stored == answer and stored["caption"] == "A square on a white wall."
    prompt_id = outcomes[0][2]
    assert outcomes == [("wikido.unsupported", "accepted", prompt_id)] and prompt_id is not None


def test_wikido_drafted_caption_fills_the_field_and_h_enter_stores_it(page, committed, settings, storage):
    stages = _project(committed, settings, storage, ["wikido.verify"], PAINTED, png_bytes())
    stage_id = stages["wikido.verify"]
    payload, answer = _draft(committed, stage_id, "wikido.caption", {"caption": "A red square hangs on a white wall."})
    make_user(committed, "wc")
    open_stage(page, "wc", stage_id)
    assert f"{MODEL} wikido.caption v1" in page.locator("[data-caption-suggestion]").inner_text()
    keys = Keys(page)
    keys.press("h")
    assert page.locator("#caption").input_value() == payload["caption"]
    assert "rewritten caption" in page.locator("[data-preview]").inner_text()
    _submit(page, keys, "Enter")
    stored, outcomes = _answer_and_outcome(committed, stage_id)
    assert stored == answer and stored["caption"] == payload["caption"]
    assert [o[:2] for o in outcomes] == [("wikido.caption", "accepted")]


def test_visargs_drafted_premises_kept_with_one_key(page, committed, settings, storage):
    workflows = ["visargs.premises", "visargs.structure", "visargs.grounding"]
    stages = _project(committed, settings, storage, workflows, POSTER, draw_poster("SAVE WATER", "circle", (40, 80, 220), seed=1))
    stage_id = stages["visargs.premises"]
    drafted = ["A tap dripping into a sink", "The words SAVE WATER", "A falling water drop"]
    payload, answer = _draft(committed, stage_id, "visargs.visual_premises", {"visual_premises": drafted})
    make_user(committed, "va")
    open_stage(page, "va", stage_id)
    page.wait_for_selector(".premise-row:first-child [data-text]:focus")
    page.wait_for_function("document.readyState === 'complete'")
    kept = page.locator(".premise-row:has([data-keep]:checked) [data-text]")
    assert [kept.nth(i).input_value() for i in range(kept.count())] == drafted  # the draft, not the record's candidates
    assert page.locator("[data-suggestion] code").inner_text() == f"{MODEL} visargs.visual_premises v1"
    keys = Keys(page)
    _submit(page, keys, "Enter")
    assert keys.count == 1
    stored, outcomes = _answer_and_outcome(committed, stage_id)
    assert stored == answer == {"visual_premises": drafted, "discard": False}
    assert [o[:2] for o in outcomes] == [("visargs.visual_premises", "accepted")]


def test_wikido_underline_wins_over_a_drafted_caption_nobody_typed_in(page, committed, settings, storage):
    """Both drafts on one screen: the rewritten caption fills the field, and A still strikes the underlined words."""
    stages = _project(committed, settings, storage, ["wikido.verify"], PAINTED, png_bytes())
    stage_id = stages["wikido.verify"]
    _draft(committed, stage_id, "wikido.caption", {"caption": "A red square hangs on a white wall."})
    _, answer = _draft(committed, stage_id, "wikido.unsupported", {"phrases": ["painted by a famous artist"], "unrelated": False})
    make_user(committed, "wb")
    open_stage(page, "wb", stage_id)
    keys = Keys(page)
    keys.press("a")
    assert page.locator("#caption").input_value() == "A square on a white wall."
    assert page.locator(".tok.struck").count() == 5
    _submit(page, keys, "Enter")
    stored, outcomes = _answer_and_outcome(committed, stage_id)
    assert stored == answer
    assert sorted(o[:2] for o in outcomes) == [("wikido.caption", "edited"), ("wikido.unsupported", "accepted")]
