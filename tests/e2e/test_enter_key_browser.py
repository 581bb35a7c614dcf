"""Enter does what the focused control says: a focused Skip skips, a link navigates, a review
decision is taken only by its own control — Enter from nowhere on the review screen stores nothing."""

from __future__ import annotations

import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation, Assignment, Item, ItemResult
from tests.conftest import PASSWORD, make_choice_project, make_user
from tests.e2e.conftest import disagree, log_in, open_stage, start_stage


def _annotations(committed) -> int:
    with transaction(committed) as s:
        return s.scalar(sa.select(sa.func.count()).select_from(Annotation))


def test_enter_on_a_focused_skip_or_link_stores_nothing(page, committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 3, name="Keys")
    make_user(committed, "kim", "annotator", PASSWORD)
    first = open_stage(page, "kim", stage_id)
    page.keyboard.press("2")  # an answer is chosen ...
    page.focus("#skip-button")
    page.keyboard.press("Enter")  # ... but Enter on Skip skips
    page.wait_for_url(lambda url: url != first)
    assert _annotations(committed) == 0
    with transaction(committed) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Assignment).where(Assignment.status == "skipped")) == 1

    page.keyboard.press("1")
    page.locator("header a", has_text="Projects").first.focus()
    page.keyboard.press("Enter")  # a focused link navigates
    page.wait_for_url(lambda url: "/assignments/" not in url)
    assert _annotations(committed) == 0

    start_stage(page, stage_id)
    page.wait_for_url("**/assignments/*")
    page.keyboard.press("1")
    page.keyboard.press("Enter")  # from the answer: submits
    page.wait_for_function("() => !document.querySelector('#annotation-form') || location.pathname.includes('/assignments/')")
    page.wait_for_timeout(300)
    assert _annotations(committed) == 1


def test_review_enter_takes_only_the_focused_decision(page, committed, settings, storage):
    project_id, stage_id = make_choice_project(committed, settings, storage, 2, overlap=2, name="Disagree twice")
    disagree(committed, stage_id, {"u1": "a", "u2": "c"}, items=2)
    make_user(committed, "rita", "reviewer", PASSWORD)
    log_in(page, "rita", PASSWORD)
    page.goto(f"/stages/{stage_id}/review")
    page.click("#first-review")
    page.wait_for_selector(".review-annotation")
    screen = page.url
    page.locator("body").click(position={"x": 5, "y": 5})  # focus nowhere in particular
    page.keyboard.press("Enter")
    page.wait_for_timeout(500)
    assert page.url == screen
    with transaction(committed) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(ItemResult)) == 0

    page.fill("#comment", "Read the question again")
    page.keyboard.press("Enter")  # Enter in the comment decides nothing either
    page.wait_for_timeout(500)
    with transaction(committed) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(ItemResult)) == 0

    page.focus("button[name=accept] >> nth=1")  # "Accept this 2"
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: url != screen)
    with transaction(committed) as s:
        assert s.scalar(sa.select(ItemResult.payload)) == {"choice": "c"}

    page.goto(f"/stages/{stage_id}/review")
    page.click("#first-review")
    page.wait_for_selector(".review-annotation")
    page.fill("#comment", "Look at the image again")
    page.focus("#send-back")
    page.keyboard.press("Enter")  # sends back: nothing finalized
    page.wait_for_timeout(800)
    with transaction(committed) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(ItemResult)) == 1
        statuses = set(s.scalars(sa.select(Item.status).where(Item.project_id == project_id)))
    assert "active" in statuses  # the second item went back to its annotators


def test_a_decision_opens_the_next_item_and_a_failed_send_back_focuses_the_comment(page, committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 2, overlap=2, name="Next please")
    disagree(committed, stage_id, {"v1": "a", "v2": "b"}, items=2)
    make_user(committed, "rey", "reviewer", PASSWORD)
    log_in(page, "rey", PASSWORD)
    page.locator("[data-review-queue]", has_text="Review 2").click()  # the home page leads to the queue
    page.wait_for_selector(".review-annotation")
    first = page.url
    page.keyboard.press("b")  # send back without a comment: refused, the comment field has the focus
    page.wait_for_selector("[role=alert]")
    assert page.evaluate("document.activeElement.id") == "comment"
    assert page.locator("details.review-json").get_attribute("open") is None
    page.keyboard.press("Escape")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("1")  # accept: the next item opens at once
    page.wait_for_url(lambda url: url != first and not url.endswith("/review/" + first.rsplit("/", 1)[-1]) and "/review/" in url)
    page.wait_for_selector(".review-annotation")
    page.keyboard.press("2")
    page.wait_for_url(f"**/stages/{stage_id}/review")
    assert page.get_by_text("Nothing waits for review").count() == 1
