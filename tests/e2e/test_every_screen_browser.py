"""Every annotation screen of every registered workflow, in Chromium: it opens with no script error,
Enter on a focused Skip skips and on a focused header link navigates, and neither stores an answer."""

from __future__ import annotations

import sqlalchemy as sa

from app.datasets import all_workflows
from app.db import transaction
from app.models import Annotation
from tests.conftest import PASSWORD, make_user
from tests.e2e.conftest import log_in, start_stage
from tests.staged import item_at


def test_enter_on_skip_or_a_link_stores_nothing_on_every_screen(page, committed, settings, storage, tmp_path):
    workflows = sorted(t.name for t in all_workflows())
    stages = {}
    for name in workflows:
        folder = tmp_path / name
        folder.mkdir()
        stages[name] = item_at(committed, settings, storage, folder, name, review=False)[0]
    user_id = make_user(committed, "every", "annotator", PASSWORD)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(page, "every", PASSWORD)

    for name in workflows:
        stage_id = stages[name]
        start_stage(page, stage_id)
        page.wait_for_url("**/assignments/*")
        page.wait_for_load_state("load")
        page.focus("#skip-button")
        with page.expect_response(lambda r: r.request.method == "POST" and r.url.rsplit("/", 1)[1] in ("skip", "submit")) as answered:
            page.keyboard.press("Enter")
        # Skipped: the stage's only item comes straight back, as the queue hands skipped items back last.
        # The skip is answered with the item's screen again, which names its own address.
        assert answered.value.url.endswith("/skip") and answered.value.status == 200, (name, answered.value.url)
        page.wait_for_url(answered.value.url.removesuffix("/skip"))

        page.locator("header a", has_text="Projects").first.focus()
        page.keyboard.press("Enter")
        page.wait_for_url(lambda url: "/assignments/" not in url)
        assert not errors, (name, errors)
    with transaction(committed) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Annotation).where(Annotation.annotator_id == user_id)) == 0
