"""VOLDOGER in real Chromium: three stylised rows checked by keyboard only — a VQA answer the LLM
flipped put back to the original with an edited question, a VE label accepted after zooming in,
a captioning drawing discarded — then the stored payloads and the published files."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import sqlalchemy as sa

from app.datasets.voldoger.release import join
from app.db import transaction
from app.models import Annotation, Item
from app.services.exports import export
from app.services.imports import imports
from app.services.projects import projects
from tests.conftest import PASSWORD, make_user, png_bytes
from tests.datasets.voldoger.release_rows import (
    CAP_ORIGINAL,
    CAP_STYLISED,
    VE_ORIGINAL,
    VE_STYLISED,
    VQA_ORIGINAL,
    VQA_STYLISED,
)
from tests.e2e.conftest import fits, log_in_by_keyboard, shoot, start_stage


def _records() -> list[dict]:
    return (join(VQA_ORIGINAL[:1], VQA_STYLISED[:1], "vqa", "oil") + join(VE_ORIGINAL, VE_STYLISED, "ve", "oil")[1:2]
            + join(CAP_ORIGINAL, CAP_STYLISED, "cap", "oil")[:1])


def _project(committed, settings, storage) -> tuple[int, int]:
    records = _records()
    with tempfile.TemporaryDirectory() as tmp, transaction(committed) as s:
        for k, r in enumerate(records):
            for ref in (r["original_image"], r["stylised_image"]):
                Path(tmp, ref).parent.mkdir(parents=True, exist_ok=True)
                Path(tmp, ref).write_bytes(png_bytes((200, 40 * k, 20 if ref.startswith("oil") else 200), size=(80 + k, 60)))
        project = projects.create_project(s, "VOLDOGER", [projects.StageSpec(workflow="voldoger.verify")])
        body = "\n".join(json.dumps(r) for r in records).encode()
        source = imports.ImageSource(settings, storage, base=Path(tmp))
        imports.import_items(s, project.id, body, "oil.jsonl", settings=settings, storage=storage, images=source)
        return project.id, projects.stages_of(s, project.id)[0].id


def test_three_rows_by_keyboard(page, committed, settings, storage, tmp_path):
    project_id, stage_id = _project(committed, settings, storage)
    make_user(committed, "vd", "annotator", PASSWORD)
    log_in_by_keyboard(page, "vd", PASSWORD)
    start_stage(page, stage_id)

    for _ in range(3):
        page.wait_for_url("**/assignments/*")
        ident = page.locator(".annotate-head code").first.inner_text()
        page.wait_for_selector("[data-voldoger][data-ready]")
        if ident.startswith("vqa"):
            fits(page, "[data-original-img]", "[data-stylised-img]", "[data-flipped]", "#vd-note", "#submit-button")
            shoot(page, "voldoger.verify")
            assert page.locator("[data-flipped]").is_visible()
            assert page.locator('input[name=label][value="no"]').is_checked()  # the LLM's answer, pre-filled
            page.keyboard.press("k")
            page.keyboard.press("o")  # the original answer holds
            assert page.locator('input[name=label][value="yes"]').is_checked()
            page.keyboard.press("e")  # edit the question: the field takes the focus, text selected
            page.keyboard.type("Is the ball red?")
            page.keyboard.press("Enter")  # a newline in the text field, not a submit
            assert "/assignments/" in page.url and page.locator("#paraphrase-text").input_value() == "Is the ball red?\n"
            page.keyboard.press("Backspace")
            page.keyboard.press("Escape")
        elif ident.startswith("ve"):
            # A swapped-in screen's image may still be loading: its width is 0 until then.
            page.wait_for_function("() => { const i = document.querySelector('[data-stylised-img]'); return i.complete && i.naturalWidth > 0; }")
            page.keyboard.press("+")
            page.keyboard.press("+")
            assert page.locator("[data-zoom-level]").inner_text() == "225%"
            width = page.locator("[data-stylised-img]").bounding_box()["width"]
            page.keyboard.press("0")
            assert page.locator("[data-zoom-level]").inner_text() == "100%"
            assert page.locator("[data-stylised-img]").bounding_box()["width"] < width / 2
            page.keyboard.press("k")
            page.keyboard.press("1")  # entailment, by digit
            page.keyboard.press("l")  # no: the LLM's contradiction
            assert page.locator('input[name=label][value="2"]').is_checked()
            page.keyboard.press("p")
        else:
            page.keyboard.press("d")
        url = page.url
        page.keyboard.press("Enter")
        page.wait_for_url(lambda u, old=url: u != old)

    with transaction(committed) as s:
        stored = {ext.split("-")[0]: p for ext, p in s.execute(sa.select(Item.external_id, Annotation.payload).join(Annotation, Annotation.item_id == Item.id))}
        statuses = {ext.split("-")[0]: st for ext, st in s.execute(sa.select(Item.external_id, Item.status))}
    assert stored == {
        "vqa": {"image": "keep", "label": "yes", "paraphrase": "edit", "text": "Is the ball red?", "note": ""},
        "ve": {"image": "keep", "label": "2", "paraphrase": "keep", "text": None, "note": ""},
        "cap": {"image": "discard", "label": None, "paraphrase": None, "text": None, "note": ""},
    }
    assert statuses == {"vqa": "done", "ve": "done", "cap": "discarded"}

    with transaction(committed) as s:
        run_id = export.create_export(s, project_id, "published", settings=settings, use_splits=False, target=str(tmp_path / "out")).id
    export.run_export(committed, storage, settings, run_id)
    rows = json.loads((tmp_path / "out" / "all.json").read_text())
    # The VQA answer put back and its question edited; the VE row as the LLM wrote it; the discarded drawing left out.
    assert rows == [{**VQA_STYLISED[0], "question": "Is the ball red?", "answer": "yes"}, VE_STYLISED[1]]
    assert (tmp_path / "out" / "all.json").read_text() == json.dumps(rows, indent=4)
    entries = [json.loads(line) for line in (tmp_path / "out" / "check_log.jsonl").read_text().splitlines()]
    assert entries == [
        {"image_id": "100034.jpg", "question": "Is the ball coloured red? ", "ori_answer": "yes", "style_answer": "no", "flag": False, "comment": ""},
        {"image_id": "3215589470.jpg", "question": VE_STYLISED[1]["hypothesis"], "ori_answer": 1, "style_answer": 2, "flag": True, "comment": ""},
    ]

    page.goto(f"/projects/{project_id}")
    assert page.locator("text=LLM label changes people accepted").count() >= 1
