"""VisArgs in real Chromium: one poster through premises, structure and grounding, then the export record;
and each screen's keyboard budget, counted in real key presses after the screen appears (Enter included)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import sqlalchemy as sa

from app.datasets import dataset_of
from app.datasets.visargs.demo import draw_poster, visargs_records
from app.db import transaction
from app.models import Annotation, Item
from app.services.annotation import annotation, suggestions
from app.services.annotation.pipeline import results_by_stage
from app.services.imports import imports
from app.services.projects import projects
from tests.conftest import PASSWORD, make_user
from tests.e2e.conftest import Keys, fits, log_in, open_stage, shoot, start_stage

URL = "https://example.org/visargs/poster_1.png"
RECORD = {
    "id": "poster-1",
    "image": "poster.png",
    "url": URL,
    "candidate_premises": ["A dripping kitchen tap", "The words SAVE WATER; a falling water drop", "A smiling child"],
    "candidate_commonsense": ["Dripping taps waste water"],
    "candidate_conclusion": "Save water: fix dripping taps.",
}


def _project(committed, settings, storage, record=RECORD, size=(480, 360)) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp, transaction(committed) as s:
        Path(tmp, "poster.png").write_bytes(draw_poster("SAVE WATER", "circle", (40, 80, 220), seed=1, size=size))
        specs = [projects.StageSpec(workflow=w) for w in ("visargs.premises", "visargs.structure", "visargs.grounding")]
        project = projects.create_project(s, "VisArgs", specs)
        source = imports.ImageSource(settings, storage, base=Path(tmp))
        imports.import_items(s, project.id, json.dumps(record).encode(), "a.jsonl", settings=settings, storage=storage, images=source)
        return {st.workflow: st.id for st in projects.stages_of(s, project.id)}


def _screen(page, username: str, stage_id: int, focused: str) -> Keys:
    """Open the stage's next item and wait until the screen has put the focus where work starts."""
    keys = Keys(page)
    open_stage(page, username, stage_id)
    page.wait_for_selector(focused + ":focus")
    page.wait_for_function("document.readyState === 'complete'")
    return keys


def _submit(page, keys: Keys) -> None:
    url = page.url
    keys.press("Enter")
    page.wait_for_url(lambda u, old=url: u != old)
    assert not keys.errors, keys.errors


def _finish(committed, stage_id: int, payload: dict) -> None:
    """Another annotator does the stage for the item (overlap 1: it is final and moves on)."""
    user = make_user(committed, f"done-{stage_id}")
    with transaction(committed) as s:
        claimed = annotation.claim(s, stage_id, user)
        annotation.submit(s, claimed.assignment_id, user, payload, f"k-{stage_id}")


def _stored(committed, stage_id: int) -> dict:
    with transaction(committed) as s:
        return s.scalars(sa.select(Annotation.payload).where(Annotation.stage_id == stage_id).order_by(Annotation.id.desc())).first()


def _drag(page, canvas, x0, y0, x1, y1):
    # Mouse events carry whole pixels; the canvas may sit at a fractional offset.
    box = canvas.bounding_box()
    left, top = round(box["x"]), round(box["y"])
    page.mouse.move(left + x0, top + y0)
    page.mouse.down()
    page.mouse.move(left + (x0 + x1) // 2, top + (y0 + y1) // 2, steps=3)
    page.mouse.move(left + x1, top + y1, steps=3)
    page.mouse.up()


def test_one_poster_through_all_three_stages(page, committed, settings, storage):
    stages = _project(committed, settings, storage)
    make_user(committed, "va", "annotator", PASSWORD)
    log_in(page, "va", PASSWORD)

    # 1. Premises: keep two candidates, split the second, add one; the third stays out.
    start_stage(page, stages['visargs.premises'])
    page.wait_for_url("**/assignments/*")
    shoot(page, "visargs.premises")
    rows = page.locator(".premise-row")
    rows.nth(2).locator("[data-keep]").uncheck()
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
    start_stage(page, stages['visargs.structure'])
    page.wait_for_url("**/assignments/*")
    assert page.locator(".node-list .chip.vp").count() == 4
    shoot(page, "visargs.structure")
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
    start_stage(page, stages['visargs.grounding'])
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
    shoot(page, "visargs.grounding")
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


def test_premises_every_draft_kept_costs_one_key(page, committed, settings, storage):
    """Drafted premises start kept and empty spare rows do not; the first premise has the focus: Enter."""
    stages = _project(committed, settings, storage)
    make_user(committed, "va")
    keys = _screen(page, "va", stages["visargs.premises"], ".premise-row:first-child [data-text]")
    kept = page.locator(".premise-row [data-keep]")
    assert [kept.nth(i).is_checked() for i in range(kept.count())] == [True, True, True, False, False]
    assert page.locator(".premise-row:has([data-keep]:not(:checked)) [data-text]:not([value=''])").count() == 0
    _submit(page, keys)
    assert keys.count == 1
    assert _stored(committed, stages["visargs.premises"]) == {"visual_premises": RECORD["candidate_premises"], "discard": False}


def test_premises_edit_drop_and_add_by_keys(page, committed, settings, storage):
    """↓ jumps to the next premise's text with the caret at its end, Alt+K drops a premise,
    Escape leaves the text so that N adds one: 6 keys besides the words typed."""
    stages = _project(committed, settings, storage)
    make_user(committed, "va")
    keys = _screen(page, "va", stages["visargs.premises"], ".premise-row:first-child [data-text]")
    keys.press("ArrowDown")
    keys.type(" on a poster")
    keys.press("ArrowDown")
    keys.press("Alt+k")
    assert page.locator(".premise-row").nth(2).locator("[data-keep]").is_checked() is False
    keys.press("Escape")
    keys.press("n")
    keys.type("A blue background")
    _submit(page, keys)
    assert keys.count == 6
    assert _stored(committed, stages["visargs.premises"])["visual_premises"] == [
        "A dripping kitchen tap", "The words SAVE WATER; a falling water drop on a poster", "A blue background",
    ]


PREMISES_DONE = {"visual_premises": RECORD["candidate_premises"]}
CONCLUSION = RECORD["candidate_conclusion"]


def test_structure_one_step_over_every_premise_costs_two_keys(page, committed, settings, storage):
    """The first step's chips have the focus; A takes every premise no step uses yet, the step
    concludes C and says the conclusion: A, Enter."""
    stages = _project(committed, settings, storage)
    _finish(committed, stages["visargs.premises"], PREMISES_DONE)
    make_user(committed, "va")
    page.set_viewport_size({"width": 1280, "height": 800})
    keys = _screen(page, "va", stages["visargs.structure"], ".step-row:first-child input[value=VP1]")
    keys.press("a")
    assert page.locator(".step-row").first.locator("select").input_value() == "C"
    page.wait_for_selector("#tree-check.ok")
    fits(page, "#tree-check")
    _submit(page, keys)
    assert keys.count == 2 and keys.typed == 0
    assert _stored(committed, stages["visargs.structure"]) == {
        "commonsense_premises": ["Dripping taps waste water"],
        "conclusion": CONCLUSION,
        "reasoning_steps": [f"(VP1, VP2, VP3, CP1 -> C): {CONCLUSION}"],
        "discard": False,
    }


def test_structure_demo_draft_a_enter_completes_the_drafted_tree(page, committed, settings, storage):
    """The demo's draft tree concludes C from VP1 and CP1 and leaves VP2 out: the focus starts on that
    step, A adds VP2 to it, Enter stores it (a second step concluding C was refused with a 422).
    The A badge in the steps' heading does not overlap the text around it."""
    with tempfile.TemporaryDirectory() as tmp:
        record = visargs_records(Path(tmp), copies=1)[0]
    stages = _project(committed, settings, storage, record={**record, "image": "poster.png"})
    _finish(committed, stages["visargs.premises"], {"visual_premises": record["candidate_premises"]})
    make_user(committed, "va")
    keys = _screen(page, "va", stages["visargs.structure"], ".step-row:first-child input[value=VP1]")
    shoot(page, "visargs-structure-demo")
    kbd = page.locator("h3 small kbd").bounding_box()
    before, after = page.evaluate("""() => {
        const kbd = document.querySelector('h3 small kbd'), range = document.createRange();
        const glyph = (node, at) => { range.setStart(node, at); range.setEnd(node, at + 1); return range.getBoundingClientRect().toJSON(); };
        return [glyph(kbd.previousSibling, kbd.previousSibling.length - 1), glyph(kbd.nextSibling, 0)];
    }""")
    # Clear of "(" and ":" beside it, and no taller than the line (it touched both and stood out of it).
    assert before["right"] + 2 <= kbd["x"] and kbd["x"] + kbd["width"] + 2 <= after["left"], (before, kbd, after)
    assert kbd["height"] <= before["height"] + 2, (before, kbd)
    keys.press("a")
    page.wait_for_selector("#tree-check.ok")
    _submit(page, keys)
    assert keys.count == 2
    conclusion = record["candidate_conclusion"]
    assert _stored(committed, stages["visargs.structure"])["reasoning_steps"] == [f"(VP1, VP2, CP1 -> C): {conclusion}"]


def test_structure_two_steps_by_keys_with_image_and_check_in_view(page, committed, settings, storage):
    """A two-step tree: digits tick VPs, Shift+digits CPs, arrows walk the chips, Tab goes chips →
    conclusion → text → next step. 11 keys besides the words typed (the old screen took 20,
    18 of them Tabs, for one step); the image and the tree check stay in view."""
    stages = _project(committed, settings, storage, size=(800, 1000))
    _finish(committed, stages["visargs.premises"], PREMISES_DONE)
    make_user(committed, "va")
    page.set_viewport_size({"width": 1280, "height": 800})
    keys = _screen(page, "va", stages["visargs.structure"], ".step-row:first-child input[value=VP1]")
    keys.press("Space")  # VP1
    keys.press("Shift+1")  # CP1
    keys.press("Tab")
    keys.press("Tab")
    keys.type("A dripping tap wastes water")
    keys.press("Tab")  # the second step's chips
    keys.press("2")
    keys.press("3")
    keys.press("ArrowRight", times=2)  # past CP1 to IC1
    keys.press("Space")
    outputs = page.locator(".step-row select")
    assert [outputs.nth(0).input_value(), outputs.nth(1).input_value()] == ["IC1", "C"]
    page.wait_for_selector("#tree-check.ok >> text=A valid tree")
    fits(page, "#tree-check")
    check, actions = page.locator("#tree-check").bounding_box(), page.locator(".actions").bounding_box()
    assert check["y"] + check["height"] <= actions["y"]  # not under the pinned Submit either
    fits(page, ".visargs-image img")
    fits(page, "#submit-button")
    _submit(page, keys)
    assert keys.count == 11
    assert _stored(committed, stages["visargs.structure"])["reasoning_steps"] == [
        "(VP1, CP1 -> IC1): A dripping tap wastes water",
        f"(VP2, VP3, IC1 -> C): {CONCLUSION}",
    ]


def _grounding_screen(page, committed, settings, storage, premises: list[str], boxes: dict[str, list[dict]]) -> tuple[Keys, int]:
    stages = _project(committed, settings, storage)
    _finish(committed, stages["visargs.premises"], {"visual_premises": premises})
    steps = [f"({', '.join(f'VP{k}' for k in range(1, len(premises) + 1))} -> C): Save water"]
    _finish(committed, stages["visargs.structure"], {"conclusion": "Save water", "reasoning_steps": steps})
    grounding = stages["visargs.grounding"]
    with transaction(committed) as s:
        item = s.scalar(sa.select(Item.id))
        for kind, found in boxes.items():
            suggestions.store(s, item, grounding, kind, "rapidocr" if kind == "visargs.boxes" else "clip", {"boxes": found})
    make_user(committed, "va")
    page.set_viewport_size({"width": 1280, "height": 800})
    keys = _screen(page, "va", grounding, "[data-scroll]")
    page.wait_for_function("document.querySelector('[data-image]').naturalWidth > 0")
    return keys, grounding


def _markers(page) -> int:
    """How many "no box yet" the premise list shows."""
    return page.locator(".box-list").inner_text().count("no box yet")


def test_grounding_suggested_box_costs_one_key(page, committed, settings, storage):
    ocr = {"vp": 0, "startX": 20, "startY": 24, "w": 260, "h": 50}
    keys, grounding = _grounding_screen(page, committed, settings, storage, ["The words SAVE WATER"], {"visargs.boxes": [ocr]})
    assert _markers(page) == 1
    keys.press("a")
    assert _markers(page) == 0
    _submit(page, keys)
    assert keys.count == 2  # the box, then Enter
    assert _stored(committed, grounding) == {"b_box": [{"startX": 20, "startY": 24, "w": 260, "h": 50}]}


def test_grounding_suggestions_then_a_box_made_by_keys(page, committed, settings, storage):
    """Shift+A takes every suggested box and moves to the premise without one; B puts a box in the
    middle (half the width and height), Alt+arrows move it 10 px, Shift+arrows size it."""
    premises = ["The words SAVE WATER", "A blue circle", "A pale background"]
    keys, grounding = _grounding_screen(page, committed, settings, storage, premises, {
        "visargs.boxes": [{"vp": 0, "startX": 20, "startY": 24, "w": 260, "h": 50}],
        "visargs.regions": [{"vp": 1, "startX": 160, "startY": 180, "w": 160, "h": 180}],
    })
    assert _markers(page) == 3  # one per premise without a box, nothing more
    assert page.locator(".box-list .no-box:visible").count() == 3
    keys.press("Shift+A")
    assert _markers(page) == 1 and page.locator(".box-list li.current").get_attribute("data-vp") == "2"
    keys.press("b")
    assert [page.locator(f"input[name={f}_2]").input_value() for f in "xywh"] == ["120", "90", "240", "180"]
    assert _markers(page) == 0
    keys.press("Alt+ArrowLeft", times=2)
    keys.press("ArrowUp")
    keys.press("Shift+Alt+ArrowRight")
    keys.press("Shift+ArrowDown")
    for selector in ("[data-scroll]", ".box-list", "#submit-button"):
        fits(page, selector)
    _submit(page, keys)
    assert keys.count == 8
    assert _stored(committed, grounding) == {"b_box": [
        {"startX": 20, "startY": 24, "w": 260, "h": 50},
        {"startX": 160, "startY": 180, "w": 160, "h": 180},
        {"startX": 100, "startY": 89, "w": 250, "h": 181},
    ]}


def test_premises_fit_the_screen_and_z_shows_the_image_full_size(page, committed, settings, storage):
    """A tall image is capped by the window's height: the image, every row, discard and Submit are on
    screen at 1280×800. Z shows it in real pixels; Enter there submits nothing; Escape goes back."""
    stages = _project(committed, settings, storage, size=(800, 1000))
    make_user(committed, "va")
    page.set_viewport_size({"width": 1280, "height": 800})
    keys = _screen(page, "va", stages["visargs.premises"], ".premise-row:first-child [data-text]")
    for selector in (".visargs-image img", ".premise-row:last-child [data-text]", "input[name=discard]", "#submit-button", "#skip-button"):
        fits(page, selector)
    keys.press("Escape")
    keys.press("z")
    page.wait_for_selector("dialog[data-zoom-dialog][open]")
    page.wait_for_function("document.querySelector('[data-full]').getBoundingClientRect().width === 800")
    url = page.url
    keys.press("Enter")
    page.wait_for_timeout(300)
    assert page.url == url and _stored(committed, stages["visargs.premises"]) is None
    keys.press("Escape")
    assert page.locator("dialog[data-zoom-dialog][open]").count() == 0
    _submit(page, keys)
    assert _stored(committed, stages["visargs.premises"])["visual_premises"] == RECORD["candidate_premises"]


def test_equivalence_costs_two_keys_and_fits_the_screen(page, committed, settings, storage):
    with tempfile.TemporaryDirectory() as tmp, transaction(committed) as s:
        Path(tmp, "poster.png").write_bytes(draw_poster("SAVE WATER", "circle", (40, 80, 220), seed=1, size=(800, 1000)))
        project = projects.create_project(s, "Conclusions", [projects.StageSpec(workflow="visargs.equivalence")])
        record = {"id": "pair-1", "conclusion_a": "Save water.", "conclusion_b": "Fix dripping taps.", "image": "poster.png"}
        source = imports.ImageSource(settings, storage, base=Path(tmp))
        imports.import_items(s, project.id, json.dumps(record).encode(), "a.jsonl", settings=settings, storage=storage, images=source)
        stage = projects.stages_of(s, project.id)[0].id
    make_user(committed, "va")
    page.set_viewport_size({"width": 1280, "height": 800})
    keys = _screen(page, "va", stage, "input[name=equivalent][value=yes]")
    for selector in (".visargs-image img", "input[value=no]", "#submit-button"):
        fits(page, selector)
    keys.press("y")
    _submit(page, keys)
    assert keys.count == 2
    assert _stored(committed, stage) == {"equivalent": True}
