"""The agreement issue end to end: three annotators verify 30 WikiDO items through the HTTP API with
planted disagreements; the dashboard shows the reference figures; a reviewer settles the three ties
in Chromium (two accepted by key, one corrected in the WikiDO editor); the finals are right."""

from __future__ import annotations

import httpx
import pytest
import sqlalchemy as sa
from sklearn.metrics import cohen_kappa_score

from app.db import transaction
from app.models import Item, ItemResult
from app.worker import jobs, runtime
from tests.conftest import PASSWORD, make_token, make_user
from tests.e2e.conftest import log_in
from tests.web.test_agreement_api import annotate_thirty, payload, verdict

FIXED = "A stone church in Paris, built in 1850."


def test_three_annotators_a_dashboard_and_a_reviewer_in_the_browser(page, live_server, committed, settings):
    api = httpx.Client(base_url=live_server, timeout=30)
    stage_id, _ = annotate_thirty(api, committed)

    # The worker job stores the report the dashboard shows; the API gives the same stored figures.
    runtime.configure(settings)
    jobs.compute_agreement(stage_id, samples=200)  # what the worker's job runs
    make_user(committed, "rita", "reviewer", PASSWORD)
    rita = {"Authorization": f"Bearer {make_token(committed, make_user(committed, 'rita2', 'reviewer'))}"}
    stored = api.get(f"/api/v1/stages/{stage_id}/agreement?stored=true", headers=rita).json()
    labels = [[verdict(i, k) for i in range(30)] for k in range(3)]
    kappa_01 = cohen_kappa_score(labels[0], labels[1])
    assert stored["facets"]["verdict"]["pairwise"]["r0 / r1"]["Cohen's kappa"] == pytest.approx(kappa_01, abs=1e-9)

    log_in(page, "rita", PASSWORD)
    page.goto(f"/stages/{stage_id}/agreement")
    cell = page.locator('[data-facet="verdict"] rect').nth(1)  # r0 / r1
    assert float(cell.get_attribute("data-value")) == round(kappa_01, 3)

    page.goto(f"/stages/{stage_id}/review")
    queued = page.locator("[data-item]").evaluate_all("rows => rows.map(r => r.dataset.item)")
    assert sorted(queued, key=int) == ["0", "7", "28"]
    decided = {}
    for external in queued:
        page.goto(f"/stages/{stage_id}/review")
        page.click(f'[data-item="{external}"] a')
        page.wait_for_selector(".review-annotation")
        screen_url = page.url
        if external == "7":
            # r2 struck only "golden dragon"; the reviewer strikes ", with a ... roof" in the WikiDO editor.
            page.locator('.review-annotation[data-annotator="r2"] a', has_text="Edit from this one").click()
            page.wait_for_selector("[data-wikido]")
            assert page.input_value("#caption") == payload(7, 2)["caption"]
            page.click('.tok[data-i="9"]')
            page.click('.tok[data-i="16"]', modifiers=["Shift"])
            assert page.input_value("#caption") == FIXED
            page.fill("input[name=comment]", "strike the whole clause")
            page.locator("#caption").blur()
            page.keyboard.press("Enter")
            decided[external] = {"verdict": "hallucinated", "caption": FIXED}
        else:
            key = {"0": "2", "28": "3"}[external]  # r1's "hallucinated" on item 0, r2's reading of item 28
            page.keyboard.press(key)
            decided[external] = payload(int(external), int(key) - 1)
        # The decision opens the next item the annotators disagree on; after the last, the queue.
        page.wait_for_url(lambda url: url != screen_url and "/edit" not in url)
    page.goto(f"/stages/{stage_id}/review")
    assert page.get_by_text("Nothing waits for review").count() == 1

    with transaction(committed) as s:
        finals = {
            i.external_id: (r.payload, r.source, i.status)
            for r, i in s.execute(sa.select(ItemResult, Item).join(Item, Item.id == ItemResult.item_id))
        }
    assert len(finals) == 30
    for i in range(30):
        final, source, status = finals[str(i)]
        if str(i) in decided:
            want = decided[str(i)]
            assert source == "review" and final["verdict"] == want["verdict"] and final.get("caption") == want.get("caption")
        else:
            votes = [verdict(i, k) for k in range(3)]
            majority = max(set(votes), key=votes.count)
            assert source == "auto" and final["verdict"] == majority
            if majority == "hallucinated":
                assert final["caption"] == FIXED  # the closest correction: r0 and r1 struck the same words
        assert status == ("discarded" if final["verdict"] == "wrong" else "done")
    assert finals["7"][0]["edits"]["kind"] == "deletion"  # the server computed the reviewer's edits
