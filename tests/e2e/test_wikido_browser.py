"""WikiDO in real Chromium: Correct, Hallucinated with two struck spans, and Wrong, by keyboard only."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation, Item
from app.services import imports, projects
from app.services.figures import figures
from tests.conftest import PASSWORD, make_user, png_bytes
from tests.e2e.conftest import log_in_by_keyboard

CAPTION_1 = "A red square number 1, painted by an artist in 1913 near the sea."


def _project(committed, settings, storage) -> tuple[int, int]:
    records = [
        {"image_id": "0", "orig_cap": "A red square.", "caption": "A red square on white.", "image": "0.png", "topic": "art"},
        {"image_id": "1", "orig_cap": "A red square.", "caption": CAPTION_1, "image": "1.png", "topic": "art"},
        {"image_id": "2", "orig_cap": "A red square.", "caption": "A bowl of soup.", "image": "2.png", "topic": "food"},
    ]
    with tempfile.TemporaryDirectory() as tmp, transaction(committed) as s:
        for i in range(3):
            Path(tmp, f"{i}.png").write_bytes(png_bytes((200, 20, 20), size=(60 + i, 60)))
        project = projects.create_project(s, "WikiDO", [projects.StageSpec(workflow="wikido.verify")])
        body = "\n".join(json.dumps(r) for r in records).encode()
        source = imports.ImageSource(settings, storage, base=Path(tmp))
        imports.import_items(s, project.id, body, "val.jsonl", settings=settings, storage=storage, images=source)
        return project.id, projects.stages_of(s, project.id)[0].id


def _press(page, key: str, times: int = 1) -> None:
    for _ in range(times):
        page.keyboard.press(key)


def test_three_verdicts_by_keyboard(page, committed, settings, storage, tmp_path):
    project_id, stage_id = _project(committed, settings, storage)
    make_user(committed, "wd", "annotator", PASSWORD)
    log_in_by_keyboard(page, "wd", PASSWORD)
    page.goto(f"/stages/{stage_id}/annotate")

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
            page.screenshot(path=os.environ.get("VLCURATE_SCREENSHOT_WIKIDO", str(tmp_path / "wikido.png")), full_page=True)
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
