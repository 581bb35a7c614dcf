"""ColorSwap in real Chromium: filter three pairs by keyboard only, then re-caption a rule-based pair."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation, Item, ItemResult
from app.services import imports, projects
from tests.conftest import PASSWORD, colorswap_records, make_user
from tests.e2e.conftest import log_in_by_keyboard


def _project(committed, settings, storage) -> tuple[int, int]:
    # pair-2 has twelve candidates, so choosing image 11 takes two digits.
    records, files = colorswap_records(3, candidates=[4, 4, 12])
    with tempfile.TemporaryDirectory() as tmp, transaction(committed) as s:
        for name, data in files.items():
            Path(tmp, name).parent.mkdir(parents=True, exist_ok=True)
            Path(tmp, name).write_bytes(data)
        project = projects.create_project(
            s, "ColorSwap", [projects.StageSpec(workflow="colorswap.filter"), projects.StageSpec(workflow="colorswap.recaption")]
        )
        body = "\n".join(json.dumps(r) for r in records).encode()
        source = imports.ImageSource(settings, storage, base=Path(tmp))
        imports.import_items(s, project.id, body, "pairs.jsonl", settings=settings, storage=storage, images=source)
        stages = projects.stages_of(s, project.id)
        return stages[0].id, stages[1].id


def _checked(page, n: int) -> str | None:
    box = page.locator(f"input[name=choice_{n}]:checked")
    return box.get_attribute("value") if box.count() else None


def _focused(page) -> str:
    return page.locator(".caption-target.focused").get_attribute("data-caption")


def test_filter_by_keyboard_then_recaption(page, committed, settings, storage, tmp_path):
    filter_id, recaption_id = _project(committed, settings, storage)
    make_user(committed, "cs", "annotator", PASSWORD)
    log_in_by_keyboard(page, "cs", PASSWORD)
    page.goto(f"/stages/{filter_id}/annotate")

    done = set()
    for _ in range(3):
        page.wait_for_url("**/assignments/*")
        page.wait_for_selector(".caption-target.focused")
        pair = page.locator(".annotate-head code").first.inner_text()
        assert _focused(page) == "1"
        if pair == "pair-0":
            page.keyboard.press("3")
            assert (_checked(page, 1), _focused(page)) == ("2", "2")
            page.keyboard.press("1")
            assert _checked(page, 2) == "0"
            assert page.locator('[data-choice-label="1"]').inner_text() == "— image 3"
        elif pair == "pair-1":
            page.keyboard.press("2")
            page.keyboard.press("4")
            page.keyboard.press("z")  # undo caption 2's choice
            assert (_checked(page, 1), _checked(page, 2), _focused(page)) == ("1", None, "2")
            page.keyboard.press("Tab")
            assert _focused(page) == "1"
            page.keyboard.press("n")  # no image fits caption 1: the pair is discarded
            page.keyboard.press("2")
            assert (_checked(page, 1), _checked(page, 2)) == ("none", "1")
        else:
            page.keyboard.press("1")
            page.keyboard.press("1")  # image 11
            page.wait_for_function("document.querySelector('input[name=choice_1]:checked') !== null")
            assert _checked(page, 1) == "10"
            page.keyboard.press("5")
            page.keyboard.press("z")
            page.keyboard.press("Tab")
            page.keyboard.press("2")  # replaces image 11 for caption 1
            page.keyboard.press("7")
            assert (_checked(page, 1), _checked(page, 2)) == ("1", "6")
            page.screenshot(path=os.environ.get("VLCURATE_SCREENSHOT_COLORSWAP", str(tmp_path / "filter.png")), full_page=True)
        url = page.url
        page.keyboard.press("Enter")
        page.wait_for_url(lambda u, old=url: u != old)
        done.add(pair)
    assert done == {"pair-0", "pair-1", "pair-2"}
    assert page.get_by_text("Nothing left").count() or "/stages/" in page.url

    with transaction(committed) as s:
        stored = {
            ext: payload
            for ext, payload in s.execute(sa.select(Item.external_id, Annotation.payload).join(Annotation, Annotation.item_id == Item.id))
        }
        statuses = dict(s.execute(sa.select(Item.external_id, Item.status)).all())
    assert stored == {
        "pair-0": {"choice_1": 2, "choice_2": 0},
        "pair-1": {"choice_1": None, "choice_2": 1},
        "pair-2": {"choice_1": 1, "choice_2": 6},
    }
    # pair-0 and pair-2 are rule-based and kept; pair-1 is discarded.
    assert statuses == {"pair-0": "active", "pair-1": "discarded", "pair-2": "active"}

    page.goto(f"/stages/{recaption_id}/annotate")
    page.wait_for_url("**/assignments/*")
    pair = page.locator(".annotate-head code").first.inner_text()
    assert page.locator(".chosen-image img").count() == 2
    n = pair.split("-")[1]
    first, second = page.locator("#caption_1"), page.locator("#caption_2")
    first.focus()
    page.keyboard.press("Control+a")
    page.keyboard.type(f"a fluffy red cat {n} in a grey jacket")
    second.focus()
    page.keyboard.press("Control+a")
    page.keyboard.type(f"a fluffy grey dog {n} in a red jacket")
    page.wait_for_selector("#swap-check.bad >> text=more than colour words")
    url = page.url
    page.keyboard.press("Enter")
    page.wait_for_selector("[role=alert] >> text=more than colour words")
    assert second.input_value() == f"a fluffy grey dog {n} in a red jacket"  # what was typed is kept
    second.focus()
    page.keyboard.press("Control+a")
    page.keyboard.type(f"a fluffy grey cat {n} in a red jacket")
    page.wait_for_selector("#swap-check.ok >> text=A swap pair")
    assert page.locator("#swap-check .move").count() == 2
    page.keyboard.press("Enter")
    page.wait_for_url(lambda u, old=url: u != old and not u.endswith("/submit"))

    with transaction(committed) as s:
        item = s.scalar(sa.select(Item).where(Item.external_id == pair))
        final = s.scalars(sa.select(ItemResult.payload).where(ItemResult.item_id == item.id).order_by(ItemResult.id)).all()
    assert item.status == "done"
    assert final[-1] == {"caption_1": f"a fluffy red cat {n} in a grey jacket", "caption_2": f"a fluffy grey cat {n} in a red jacket"}


def test_one_image_for_both_captions_says_why_at_once(page, committed, settings, storage):
    filter_id, _ = _project(committed, settings, storage)
    make_user(committed, "cs2", "annotator", PASSWORD)
    log_in_by_keyboard(page, "cs2", PASSWORD)
    page.goto(f"/stages/{filter_id}/annotate")
    page.wait_for_url("**/assignments/*")
    page.wait_for_selector(".caption-target.focused")
    screen = page.url
    page.keyboard.press("1")
    page.keyboard.press("1")  # the same image for caption 2
    page.wait_for_timeout(600)  # more than a second digit could take
    clash = page.locator("[data-clash]")
    assert clash.is_visible() and "cannot fit both captions" in clash.inner_text()
    page.keyboard.press("Enter")  # held on the screen: nothing is sent
    page.wait_for_timeout(400)
    assert page.url == screen
    with transaction(committed) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Annotation)) == 0
    page.keyboard.press("z")  # undo caption 2's choice: the message goes
    assert not clash.is_visible()
