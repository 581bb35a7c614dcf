"""WikiDO in real Chromium: Correct, Hallucinated with struck spans, and Wrong, by keyboard only; the
key presses each answer takes (counted) and what is stored; the model's underlines; the image's
full-size view."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation, Item
from app.services.annotation import suggestions
from app.services.imports import imports
from app.services.projects import projects
from app.services.quality.figures import figures
from tests.conftest import PASSWORD, make_user, png_bytes
from tests.e2e.conftest import Keys, log_in_by_keyboard, open_stage, shoot, start_stage

CAPTION_1 = "A red square number 1, painted by an artist in 1913 near the sea."
RECORDS = [
    {"image_id": "0", "orig_cap": "A red square.", "caption": "A red square on white.", "image": "0.png", "topic": "art"},
    {"image_id": "1", "orig_cap": "A red square.", "caption": CAPTION_1, "image": "1.png", "topic": "art"},
    {"image_id": "2", "orig_cap": "A red square.", "caption": "A bowl of soup.", "image": "2.png", "topic": "food"},
]
# Words: A(1) square(2) painted(3) by(4) a(5) famous(6) artist(7) on(8) a(9) white(10) wall(11); "painted
# by a famous artist" (words 3-7, tokens 2-6) is made up.
PAINTED = "A square painted by a famous artist on a white wall."
TRUE = "A square on a white wall."


def _project(committed, settings, storage, records=RECORDS, spans=None, sizes=None) -> tuple[int, int]:
    with tempfile.TemporaryDirectory() as tmp, transaction(committed) as s:
        for i, record in enumerate(records):
            Path(tmp, record["image"]).write_bytes(png_bytes((200, 20, 20), size=(sizes or {}).get(i, (60 + i, 60))))
        project = projects.create_project(s, "WikiDO", [projects.StageSpec(workflow="wikido.verify")])
        body = "\n".join(json.dumps(r) for r in records).encode()
        source = imports.ImageSource(settings, storage, base=Path(tmp))
        imports.import_items(s, project.id, body, "val.jsonl", settings=settings, storage=storage, images=source)
        stage_id = projects.stages_of(s, project.id)[0].id
        if spans is not None:
            for item_id in s.scalars(sa.select(Item.id).where(Item.project_id == project.id)):
                suggestions.store(s, item_id, stage_id, "wikido.unsupported", "minilm", {"spans": spans}, model_version="0.1")
        return project.id, stage_id


def _stored(committed) -> dict[str, dict]:
    with transaction(committed) as s:
        return dict(s.execute(sa.select(Item.external_id, Annotation.payload).join(Annotation, Annotation.item_id == Item.id)).all())


def _press(page, key: str, times: int = 1) -> None:
    for _ in range(times):
        page.keyboard.press(key)


def test_three_verdicts_by_keyboard(page, committed, settings, storage, tmp_path):
    project_id, stage_id = _project(committed, settings, storage)
    make_user(committed, "wd", "annotator", PASSWORD)
    log_in_by_keyboard(page, "wd", PASSWORD)
    start_stage(page, stage_id)

    for _ in range(3):
        page.wait_for_url("**/assignments/*")
        ident = page.locator(".annotate-head code").first.inner_text()
        corrector = page.locator("[data-corrector]")
        if ident == "0":
            page.keyboard.press("c")
            assert not corrector.is_visible()
        elif ident == "1":
            page.keyboard.press("h")
            assert corrector.is_visible()
            assert page.locator('.tok[data-i="2"]').get_attribute("data-n") == "3"  # words are numbered, punctuation not
            # Tokens: A red square number 1 , painted by an artist in 1913 near the sea .
            _press(page, "ArrowRight", 5)
            page.keyboard.press("x")  # strikes ","
            _press(page, "ArrowRight", 6)
            page.keyboard.press("Shift+X")  # ... through "1913"
            page.keyboard.press("ArrowRight")
            page.keyboard.press("x")  # "near"
            _press(page, "ArrowRight", 3)
            page.keyboard.press("x")  # "." by mistake
            page.keyboard.press("z")  # undone
            _press(page, "ArrowLeft", 1)
            page.keyboard.press("Shift+X")  # "near the sea"
            assert page.locator(".tok.struck").count() == 10
            assert page.locator("#caption").input_value() == "A red square number 1."
            assert page.locator("[data-preview]").inner_text() == "10 words struck."
        else:
            page.keyboard.press("w")
        url = page.url
        page.keyboard.press("Enter")
        page.wait_for_url(lambda u, old=url: u != old)

    with transaction(committed) as s:
        stored = dict(s.execute(sa.select(Item.external_id, Annotation.payload).join(Annotation, Annotation.item_id == Item.id)).all())
        statuses = dict(s.execute(sa.select(Item.external_id, Item.status)).all())
        (fig,) = figures(s, project_id)
    assert stored["0"] == {"verdict": "correct", "caption": None}
    assert stored["2"] == {"verdict": "wrong", "caption": None}
    assert stored["1"]["caption"] == "A red square number 1."
    ops = stored["1"]["edits"]["ops"]
    assert [op["op"] for op in ops] == ["delete"]  # the two struck spans touch: one deletion of 10 tokens
    assert stored["1"]["edits"]["deleted"] == 10
    assert statuses == {"0": "done", "1": "done", "2": "discarded"}
    assert {r.value: r.counts for r in dict(fig.groups)["topic"]} == {"art": {"correct": 1, "hallucinated": 1}, "food": {"wrong": 1}}

    page.goto(f"/projects/{project_id}")
    assert page.locator('svg[data-figure="topic"] rect[data-answer="hallucinated"]').count() == 1
    assert page.locator('svg[data-figure="means"] rect[data-category="deletion"]').get_attribute("data-mean") == "10.00"


def test_correct_and_wrong_take_two_keys(page, committed, settings, storage):
    _, stage_id = _project(committed, settings, storage, records=[RECORDS[0], RECORDS[2]])
    make_user(committed, "two", "annotator", PASSWORD)
    screen = open_stage(page, "two", stage_id)
    assert page.evaluate("() => document.activeElement.value") == "correct"  # the screen starts on the verdicts
    answers = {"0": "c", "2": "w"}
    for _ in answers:
        ident = page.locator(".annotate-head code").first.inner_text()
        keys = Keys(page)
        keys.press(answers[ident], "Enter")
        page.wait_for_url(lambda u, old=screen: u != old)
        screen = page.url
        assert keys.count == 2
    assert _stored(committed) == {"0": {"verdict": "correct", "caption": None}, "2": {"verdict": "wrong", "caption": None}}


def test_the_models_underline_accepted_in_two_keys(page, committed, settings, storage):
    record = {"image_id": "p", "orig_cap": "A square on a white wall.", "caption": PAINTED, "image": "0.png", "topic": "art"}
    _, stage_id = _project(committed, settings, storage, records=[record], spans=[[2, 7]])
    make_user(committed, "acc", "annotator", PASSWORD)
    screen = open_stage(page, "acc", stage_id)
    # Before any verdict: the suggestion is on screen, drawn as one (dotted), not as a spell-check mark.
    marked = page.locator(".tok.unsupported")
    assert [marked.nth(k).inner_text() for k in range(marked.count())] == ["painted", "by", "a", "famous", "artist"]
    assert all(marked.nth(k).is_visible() for k in range(marked.count()))
    assert marked.first.evaluate("e => getComputedStyle(e).textDecorationStyle") == "dotted"
    assert not page.locator("[data-corrector]").is_visible()
    shoot(page, "wikido.verify")
    keys = Keys(page)
    keys.press("a")  # strikes the underlined words, choosing Hallucinated
    assert page.locator("input[name=verdict][value=hallucinated]").is_checked()
    assert page.locator(".tok.struck").count() == 5
    keys.press("Enter")
    page.wait_for_url(lambda u: u != screen)
    assert keys.count == 2
    (stored,) = _stored(committed).values()
    assert stored["verdict"] == "hallucinated" and stored["caption"] == TRUE
    assert stored["edits"]["kind"] == "deletion" and stored["edits"]["deleted"] == 5


def test_one_span_struck_by_hand_in_four_keys(page, committed, settings, storage):
    record = {"image_id": "q", "orig_cap": "A square on a white wall.", "caption": PAINTED, "image": "0.png", "topic": "art"}
    _, stage_id = _project(committed, settings, storage, records=[record])
    make_user(committed, "hand", "annotator", PASSWORD)
    screen = open_stage(page, "hand", stage_id)
    keys = Keys(page)
    # Hallucinated; jump to word 3; Shift+7 strikes words 3 to 7; submit.
    keys.press("h", "3", "Shift+7")
    assert [t.inner_text() for t in page.locator(".tok.struck").all()] == ["painted", "by", "a", "famous", "artist"]
    assert page.locator("#caption").input_value() == TRUE
    keys.press("Enter")
    page.wait_for_url(lambda u: u != screen)
    assert keys.count == 4  # the budget is 5
    (stored,) = _stored(committed).values()
    assert stored["caption"] == TRUE and stored["edits"]["deleted"] == 5


def test_image_is_height_capped_and_opens_full_size(page, committed, settings, storage):
    record = {"image_id": "t", "orig_cap": "A tall red bar.", "caption": "A tall red bar.", "image": "0.png", "topic": "art"}
    _, stage_id = _project(committed, settings, storage, records=[record], sizes={0: (500, 1400)})
    make_user(committed, "tall", "annotator", PASSWORD)
    page.set_viewport_size({"width": 1280, "height": 800})
    screen = open_stage(page, "tall", stage_id)
    page.wait_for_function("() => document.querySelector('.wikido-image img').complete")
    box = page.locator(".wikido-image img").bounding_box()
    assert box["y"] + box["height"] <= 800
    keys = Keys(page)
    keys.press("f")
    page.wait_for_function("() => { const i = document.querySelector('dialog[data-full-view] img'); return i && i.complete && i.naturalWidth && i.style.width; }")
    size = page.evaluate("() => { const i = document.querySelector('dialog[data-full-view] img'); const r = i.getBoundingClientRect(); return [i.naturalWidth, r.width, r.height]; }")
    assert size == [500, 500, 1400]  # real pixels: taller than the window, so the view scrolls
    keys.press("-")
    assert page.evaluate("() => Math.round(document.querySelector('dialog[data-full-view] img').getBoundingClientRect().width)") == 333
    keys.press("Escape")
    assert not page.locator("dialog[data-full-view]").evaluate("d => d.open")
    keys.press("c", "Enter")
    page.wait_for_url(lambda u: u != screen)
    assert list(_stored(committed).values()) == [{"verdict": "correct", "caption": None}]
