"""Active time in a real browser, with the page's clock under the test's control: input spells, an idle
spell longer than 30 s, an unfocused and a hidden page, a reload in the middle (the drafts carry the time
over); the stored active seconds are within 10 % of the scripted active time."""

from __future__ import annotations

import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation, Draft
from tests.conftest import PASSWORD, make_choice_project, make_user
from tests.e2e.conftest import log_in, start_stage

HIDE = "Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true});" \
       "document.dispatchEvent(new Event('visibilitychange'))"


def _draft_active(sessions) -> float | None:
    with transaction(sessions) as s:
        return s.scalar(sa.select(Draft.active_seconds))


def test_active_seconds_follow_a_scripted_session_within_10_percent(page, committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 2, lease=7200, name="Timed")
    make_user(committed, "tia", "annotator", PASSWORD)
    log_in(page, "tia", PASSWORD)
    page.clock.install(time="2030-01-01T08:00:00Z")
    page.clock.pause_at("2030-01-01T09:00:00Z")
    start_stage(page, stage_id)
    page.wait_for_url("**/assignments/*")
    with transaction(committed) as s:  # the item was claimed an hour ago: the wall time never caps this script
        s.execute(sa.text("UPDATE assignments SET lease_until = lease_until - interval '1 hour'"))
    assert page.evaluate("document.hasFocus() && document.visibilityState === 'visible'")
    keys, expected = ["1", "2", "3"], 0.0

    def work(seconds: float, key: str | None = None) -> None:
        page.clock.run_for(int(seconds * 1000))
        if key:
            page.keyboard.press(key)

    work(2, "1")
    expected += 2
    for n in range(9):  # typing along: a key every 5 s
        work(5, keys[n % 3])
        expected += 5
    work(100, "1")  # an idle spell: its first 30 s count
    expected += 30
    work(4)
    page.evaluate("window.dispatchEvent(new Event('blur'))")  # another window has the focus
    expected += 4
    work(200)
    page.evaluate("window.dispatchEvent(new Event('focus'))")
    work(3, "2")
    expected += 3
    work(6)
    page.evaluate(HIDE)  # the tab is hidden: its draft is saved with the time so far
    expected += 6
    for _ in range(100):
        if (saved := _draft_active(committed)) is not None and saved >= expected - 1:
            break
        page.wait_for_timeout(50)
    assert abs(saved - expected) <= 0.1 * expected, (saved, expected)
    work(300)
    page.reload()  # the same item again: it counts on from its draft
    page.wait_for_selector("input[name=active_seconds]", state="attached")
    assert float(page.get_attribute("input[name=active_seconds]", "data-base")) == saved
    work(10, "3")
    expected += 10
    work(20, "Enter")
    expected += 20
    page.wait_for_url(lambda url: True)
    for _ in range(100):
        with transaction(committed) as s:
            row = s.execute(sa.select(Annotation.active_seconds, Annotation.wall_seconds)).first()
        if row is not None:
            break
        page.wait_for_timeout(50)
    active, wall = row
    assert abs(active - expected) <= 0.1 * expected, (active, expected)
    assert wall >= 3600  # claim to submit, as the server measured it
