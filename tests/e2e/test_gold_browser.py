"""A gold item's annotation screen, as Chromium renders it, has the structure of an ordinary item's."""

from __future__ import annotations

import sqlalchemy as sa

from app.db import transaction
from app.models import Assignment, Project, Stage
from app.services.demo import demo_quality
from app.services.quality import gold
from tests.conftest import PASSWORD, make_user
from tests.e2e.conftest import log_in, start_stage

# Every element of the page's main content with its attribute names, in document order (no text, no values).
SHAPE = """() => Array.from(document.querySelectorAll('main *')).map(
    e => e.tagName + '[' + Array.from(e.attributes).map(a => a.name).sort().join(',') + ']').join(' ')"""


def test_a_gold_screen_looks_like_any_other(page, committed, settings, storage, tmp_path):
    with transaction(committed) as s:
        demo_quality.gold_demo(s, settings, storage, tmp_path)
        stage = s.scalar(sa.select(Stage).join(Project).where(Project.name == demo_quality.GOLD_DEMO))
        stage.config = {**stage.config, "gold_share": 0.5}
        stage_id, gold_ids = stage.id, gold.gold_item_ids(s, stage.id)
    user_id = make_user(committed, "gina", "annotator", PASSWORD)
    log_in(page, "gina", PASSWORD)
    shapes: dict[bool, str] = {}
    start_stage(page, stage_id)
    for _ in range(30):
        page.wait_for_url("**/assignments/*")
        assignment_id = int(page.url.rstrip("/").split("/")[-1])
        with transaction(committed) as s:
            is_gold = s.scalar(sa.select(Assignment.item_id).where(Assignment.id == assignment_id, Assignment.annotator_id == user_id)) in gold_ids
        # The screen's own requests done (the progress bar, the next item's images): htmx marks
        # elements with classes while they run. The next screen comes without a page load.
        page.wait_for_function("() => document.querySelector('#stage-bar progress') && document.querySelector('link[rel=prefetch]')"
                               " && !document.querySelector('[class*=htmx-]')")
        shapes.setdefault(is_gold, page.evaluate(SHAPE))
        if len(shapes) == 2:
            break
        url = page.url
        page.keyboard.press("1")
        page.keyboard.press("Enter")
        page.wait_for_url(lambda u, old=url: u != old)
    assert set(shapes) == {True, False}
    assert shapes[True] == shapes[False]
    assert "gold" not in page.content().lower().replace(demo_quality.GOLD_DEMO.lower(), "")  # the demo's name aside
