"""VisArgs in real Chromium: one poster through premises, structure and grounding, then the export record."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import sqlalchemy as sa

from app.datasets import dataset_of
from app.datasets.visargs.demo import draw_poster
from app.db import transaction
from app.models import Item
from app.services import imports, projects
from app.services.pipeline import results_by_stage
from tests.conftest import PASSWORD, make_user
from tests.e2e.conftest import log_in

URL = "https://example.org/visargs/poster_1.png"
RECORD = {
    "id": "poster-1",
    "image": "poster.png",
    "url": URL,
    "candidate_premises": ["A dripping kitchen tap", "The words SAVE WATER; a falling water drop", "A smiling child"],
    "candidate_commonsense": ["Dripping taps waste water"],
    "candidate_conclusion": "Save water: fix dripping taps.",
}


def _project(committed, settings, storage) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp, transaction(committed) as s:
        Path(tmp, "poster.png").write_bytes(draw_poster("SAVE WATER", "circle", (40, 80, 220), seed=1))
        specs = [projects.StageSpec(workflow=w) for w in ("visargs.premises", "visargs.structure", "visargs.grounding")]
        project = projects.create_project(s, "VisArgs", specs)
        source = imports.ImageSource(settings, storage, base=Path(tmp))
        imports.import_items(s, project.id, json.dumps(RECORD).encode(), "a.jsonl", settings=settings, storage=storage, images=source)
        return {st.workflow: st.id for st in projects.stages_of(s, project.id)}


def _drag(page, canvas, x0, y0, x1, y1):
    # Mouse events carry whole pixels; the canvas may sit at a fractional offset.
    box = canvas.bounding_box()
    left, top = round(box["x"]), round(box["y"])
    page.mouse.move(left + x0, top + y0)
    page.mouse.down()
    page.mouse.move(left + (x0 + x1) // 2, top + (y0 + y1) // 2, steps=3)
    page.mouse.move(left + x1, top + y1, steps=3)
    page.mouse.up()


def test_one_poster_through_all_three_stages(page, committed, settings, storage, tmp_path):
    stages = _project(committed, settings, storage)
    make_user(committed, "va", "annotator", PASSWORD)
    log_in(page, "va", PASSWORD)

    # 1. Premises: keep two candidates, split the second, add one; the third stays out.
    page.goto(f"/stages/{stages['visargs.premises']}/annotate")
    page.wait_for_url("**/assignments/*")
    rows = page.locator(".premise-row")
    rows.nth(0).locator("[data-keep]").check()
    second = rows.nth(1).locator("[data-text]")
    second.click()
    second.press("Home")
    for _ in range(len("The words SAVE WATER;")):
        second.press("ArrowRight")
    second.press("Control+Enter")
    assert page.locator(".premise-row [data-text]").nth(1).input_value() == "The words SAVE WATER"
    assert page.locator(".premise-row [data-text]").nth(2).input_value() == "a falling water drop"
    page.get_by_role("button", name="Add a premise").click()
    page.keyboard.type("A blue background")
    url = page.url
    page.keyboard.press("Enter")
    page.wait_for_url(lambda u, old=url: u != old)

    # 2. Structure: two steps over the four premises and the commonsense one; checked live.
    page.goto(f"/stages/{stages['visargs.structure']}/annotate")
    page.wait_for_url("**/assignments/*")
    assert page.locator(".node-list .chip.vp").count() == 4
    steps = page.locator(".step-row")
    for chip in ("VP1", "VP3", "CP1"):
        steps.nth(0).locator(f"input[value={chip}]").check()
    steps.nth(0).locator("select").select_option("IC1")
    steps.nth(0).locator("input[type=text]").fill("A dripping tap wastes water drop by drop")
    page.wait_for_selector("#tree-check >> text=No step concludes C")
    for chip in ("IC1", "VP2", "VP4"):
        steps.nth(1).locator(f"input[value={chip}]").check()
    steps.nth(1).locator("select").select_option("C")
    steps.nth(1).locator("input[type=text]").fill("Save water")
    page.wait_for_selector("#tree-check.ok >> text=A valid tree")
    assert page.locator(".arg-tree > li > .chip").first.inner_text() == "C"
    url = page.url
    page.keyboard.press("Enter")
    page.wait_for_url(lambda u, old=url: u != old)

    # 3. Grounding: four boxes with the mouse, one nudged with the keyboard.
    page.goto(f"/stages/{stages['visargs.grounding']}/annotate")
    page.wait_for_url("**/assignments/*")
    canvas = page.locator("[data-canvas]")
    page.wait_for_function("document.querySelector('[data-image]').naturalWidth > 0")
    assert page.locator("[data-zoom-label]").inner_text() == "100%"
    drags = [(20, 30, 120, 130), (150, 20, 300, 80), (40, 200, 90, 260), (300, 150, 460, 340)]
    for n, (x0, y0, x1, y1) in enumerate(drags, 1):
        page.mouse.click(5, 5)  # focus leaves any field, so digits pick the premise
        page.keyboard.press(str(n))
        _drag(page, canvas, x0, y0, x1, y1)
    page.keyboard.press("3")
    for key in ("ArrowRight", "ArrowRight", "ArrowRight", "ArrowDown"):
        page.keyboard.press(key)
    assert page.locator("input[name=x_2]").input_value() == "43"
    page.screenshot(path=os.environ.get("VLCURATE_SCREENSHOT_VISARGS", str(tmp_path / "grounding.png")), full_page=True)
    url = page.url
    page.keyboard.press("Enter")
    page.wait_for_url(lambda u, old=url: u != old)

    with transaction(committed) as s:
        item = s.scalar(sa.select(Item).where(Item.external_id == "poster-1"))
        record = dataset_of("visargs.grounding").export_record(item.data, results_by_stage(s, item.id))
        status = item.status
    assert status == "done"
    assert json.dumps(record) == json.dumps(  # the release's key orders, record and boxes
        {
            "url": URL,
            "visual_premises": ["A dripping kitchen tap", "The words SAVE WATER", "a falling water drop", "A blue background"],
            "conclusion": "Save water: fix dripping taps.",
            "b_box": [
                {"h": 100, "startX": 20, "startY": 30, "w": 100},
                {"h": 60, "startX": 150, "startY": 20, "w": 150},
                {"h": 60, "startX": 43, "startY": 201, "w": 50},
                {"h": 190, "startX": 300, "startY": 150, "w": 160},
            ],
            "commonsense_premises": ["Dripping taps waste water"],
            "reasoning_steps": [
                "(VP1, VP3, CP1 -> IC1): A dripping tap wastes water drop by drop",
                "(VP2, VP4, IC1 -> C): Save water",
            ],
        }
    )
