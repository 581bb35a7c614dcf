"""A reviewer settles a disagreement in real Chromium with one key."""

from __future__ import annotations

import sqlalchemy as sa

from app.db import transaction
from app.models import ItemResult
from app.services import annotation
from tests.conftest import PASSWORD, make_choice_project, make_user
from tests.e2e.conftest import log_in


def test_reviewer_accepts_the_second_annotation_by_key(page, committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 1, overlap=2, name="Disagree")
    for name, choice in (("u1", "a"), ("u2", "c")):
        user = make_user(committed, name)
        with transaction(committed) as s:
            claimed = annotation.claim(s, stage_id, user)
            annotation.submit(s, claimed.assignment_id, user, {"choice": choice}, f"k-{name}")
    make_user(committed, "rita", "reviewer", PASSWORD)
    log_in(page, "rita", PASSWORD)
    page.goto(f"/stages/{stage_id}/review")
    page.click("#first-review")
    page.wait_for_selector(".review-annotation")
    assert page.locator("dd.differs").count() == 2
    page.keyboard.press("2")
    page.wait_for_url(f"**/stages/{stage_id}/review")
    assert page.get_by_text("Nothing waits for review").count() == 1
    with transaction(committed) as s:
        assert s.scalar(sa.select(ItemResult.payload)) == {"choice": "c"}
