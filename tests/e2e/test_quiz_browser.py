"""The qualification quiz in Chromium: the quiz's gold items come in the normal annotation screen, and
the answer that fails the last try leads to a page that says so and why (score, score needed, tries)."""

from __future__ import annotations

import json

from app.db import transaction
from app.models import Stage
from app.services.quality import gold
from tests.conftest import PASSWORD, make_choice_project, make_user
from tests.e2e.conftest import log_in, start_stage


def test_failing_the_quiz_says_why_in_the_normal_screen(page, committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 8)
    with transaction(committed) as s:
        gold.import_answers(s, stage_id, "\n".join(json.dumps({"id": f"it-{i}", "answer": {"choice": "a"}}) for i in range(4, 8)).encode(),
                            actor_id=None)
        stage = s.get(Stage, stage_id)
        stage.config = {**stage.config, "quiz_items": 2, "quiz_pass": 2, "quiz_tries": 1}
    make_user(committed, "quinn", "annotator", PASSWORD)
    log_in(page, "quinn", PASSWORD)
    start_stage(page, stage_id)
    for n in range(2):  # the quiz's two items, each in the ordinary screen, answered "b" (wrong) by keyboard
        page.wait_for_url("**/assignments/*")
        page.wait_for_selector("#annotation-form")
        assert f"Qualification quiz: item {n + 1} of 2, try 1 of 1. A score of 2 or more" in page.locator("#quiz-note").inner_text()
        url = page.url
        page.keyboard.press("2")
        page.keyboard.press("Enter")
        if n == 0:
            page.wait_for_url(lambda u, old=url: u != old)
    # The refusal comes in place of the next screen (the screen's script swaps the answer in).
    page.wait_for_selector("article.error-page")
    text = page.locator("article.error-page [role=alert]").inner_text()
    assert "You did not pass this stage's qualification quiz" in text
    assert "scored 0 of 2, at least 2 needed, and you used 1 of 1 try" in text
    assert "tries used: 1 of 1" in page.content()
    # Opening the stage again says the same, and gives no item.
    start_stage(page, stage_id)
    assert "/assignments/" not in page.url
    assert "scored 0 of 2" in page.locator("article.error-page [role=alert]").inner_text()
