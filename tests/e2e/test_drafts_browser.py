"""Nothing typed is lost: a page closed right after a change has its draft saved, a fast
choose-and-submit races no draft save, and a refused save says why on screen."""

from __future__ import annotations

import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation, Draft
from tests.conftest import PASSWORD, make_choice_project, make_user
from tests.e2e.conftest import open_stage


def test_a_change_100_ms_before_closing_is_kept(page, committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 2, name="Drafts")
    make_user(committed, "dee", "annotator", PASSWORD)
    screen = open_stage(page, "dee", stage_id)
    page.keyboard.press("3")
    assert "Unsaved" in page.locator("#draft-state").inner_text()
    page.wait_for_timeout(100)
    context = page.context
    page.close(run_before_unload=True)
    again = context.new_page()
    for _ in range(50):  # the keepalive request lands (later on a loaded machine)
        with transaction(committed) as s:
            saved = s.scalar(sa.select(Draft.payload))
        if saved is not None:
            break
        again.wait_for_timeout(100)
    assert saved == {"choice": "c"}
    again.goto(f"/stages/{stage_id}/annotate")
    again.wait_for_url("**/assignments/*")
    assert again.url == screen and again.locator("input[name=choice][value=c]").is_checked()


def test_choosing_and_submitting_at_once_races_no_draft_save(page, committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 2, name="Fast")
    make_user(committed, "fay", "annotator", PASSWORD)
    statuses, errors = [], []
    page.on("response", lambda r: statuses.append(r.status) if "/draft" in r.url else None)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    first = open_stage(page, "fay", stage_id)
    page.keyboard.press("2")
    page.wait_for_timeout(50)
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: url != first)
    page.wait_for_timeout(800)
    assert 409 not in statuses and not [e for e in errors if "409" in e]
    with transaction(committed) as s:
        assert s.scalar(sa.select(Annotation.payload)) == {"choice": "b"}


def test_a_refused_draft_save_is_shown(page, committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 2, name="Refused")
    make_user(committed, "gus", "annotator", PASSWORD)
    screen = open_stage(page, "gus", stage_id)
    other = page.context.new_page()  # the same item open in a second tab, submitted there
    other.goto(screen)
    other.keyboard.press("1")
    other.keyboard.press("Enter")
    other.wait_for_url(lambda url: url != screen)
    page.keyboard.press("2")  # the first tab's draft save is refused
    page.wait_for_selector("#draft-state .error")
    assert "submitted" in page.locator("#draft-state").inner_text().lower()


def test_back_to_a_submitted_item_and_another_answer_is_never_dropped(page, committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 2, overlap=2, name="Revise")
    make_user(committed, "ivy", "annotator", PASSWORD)
    screen = open_stage(page, "ivy", stage_id)
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: url != screen)
    page.go_back()
    page.wait_for_url(screen)
    # Asked anew, never from a cache: the screen says so and shows the answer given.
    assert "You submitted this item" in page.locator("#submitted-note").inner_text()
    assert page.locator("input[name=choice]:checked").get_attribute("value") == "a"
    page.keyboard.press("2")
    page.keyboard.press("Enter")  # a revision
    page.wait_for_url(lambda url: url != screen and not url.endswith("/submit"))
    with transaction(committed) as s:
        stored = s.execute(sa.select(Annotation.revision, Annotation.payload).order_by(Annotation.id)).all()
    assert [tuple(r) for r in stored] == [(1, {"choice": "a"}), (2, {"choice": "b"})]
