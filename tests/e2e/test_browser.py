"""Browser tests: real Chromium (Playwright) against a real uvicorn process."""

from __future__ import annotations

import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation, Item, Project
from app.services.demo.demo import load_demo
from tests.conftest import PASSWORD, make_user
from tests.e2e.conftest import fits, log_in, shoot


def _progress(page) -> int:
    return int(page.locator(".annotate-head progress").get_attribute("value"))


def test_log_in_and_annotate_three_items_by_keyboard(page, committed, settings, storage):
    with transaction(committed) as s:
        load_demo(s, settings, storage)
        project = s.scalar(sa.select(Project).where(Project.name == "Demo: shapes"))
        first = s.scalar(sa.select(Item).where(Item.project_id == project.id).order_by(Item.id).limit(1))
        first.data = {**first.data, "question": "Is <script>window.__xss = 1</script> shown as text?"}
        project_id = project.id
    make_user(committed, "kbd", "annotator", PASSWORD)

    page.goto("/")
    assert page.url.endswith("/login?next=/")
    page.keyboard.type("kbd")
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url("**/")
    page.get_by_role("link", name="Demo: shapes", exact=True).click()
    page.wait_for_url(f"**/projects/{project_id}")
    page.get_by_role("button", name="Start annotating").first.click()
    page.wait_for_url("**/assignments/*")

    legend = page.locator("legend.question")
    assert legend.inner_text() == "Is <script>window.__xss = 1</script> shown as text?"
    assert page.evaluate("window.__xss") is None
    fits(page, ".item-image img", "legend.question", "#submit-button")
    shoot(page, "generic.choice")

    seen = []
    for n in range(3):
        before = _progress(page)
        url = page.url
        seen.append(url)
        page.keyboard.press(str(n % 3 + 1))
        assert page.locator("input[name=choice]:checked").get_attribute("data-key") == str(n % 3 + 1)
        page.keyboard.press("Enter")
        page.wait_for_url(lambda u, old=url: u != old and "/assignments/" in u)
        assert _progress(page) == before + 1
    assert len(set(seen)) == 3

    with transaction(committed) as s:
        choices = s.scalars(sa.select(Annotation.payload).order_by(Annotation.id)).all()
    assert [c["choice"] for c in choices] == ["circle", "square", "triangle"]


def test_skip_key_and_autosaved_draft(page, committed, settings, storage):
    with transaction(committed) as s:
        load_demo(s, settings, storage)
    make_user(committed, "kbd2", "annotator", PASSWORD)
    log_in(page, "kbd2", PASSWORD)
    page.get_by_role("button", name="Start annotating").first.click()
    page.wait_for_url("**/assignments/*")
    url = page.url
    page.keyboard.press("3")
    page.wait_for_selector("#draft-state >> text=Draft saved")
    page.goto(url)  # a reload (or a reopened tab) keeps the choice
    assert page.locator("input[name=choice]:checked").get_attribute("value") == "triangle"
    page.keyboard.press("s")
    page.wait_for_url(lambda u: u != url and "/assignments/" in u)
