"""In Chromium: an assignment in a stage's control arm shows no suggestion on any screen that shows one
otherwise (the screen equals the same item's screen with nothing drafted), and a probe on a gold item
shows the planted wrong draft, whose correction is recorded as caught."""

from __future__ import annotations


import pytest
import sqlalchemy as sa

from app.bias import arms
from app.datasets import all_workflows, draft_kinds
from app.db import transaction
from app.models import Annotation, Assignment, Item, Stage
from app.services.annotation import suggestions
from tests.bias.world import stage as voldoger_stage
from tests.conftest import PASSWORD, make_user
from tests.drafting.test_every_kind import item_input
from tests.drafting.test_kinds import DEMO_ANSWERS
from tests.e2e.conftest import log_in, start_stage
from tests.staged import _demo, item_at

MODEL = "bias-vlm"
# What a screen shows, once its scripts ran: its visible text and every answer control's value and
# state (the form's hidden fields aside: they change with every page).
SNAPSHOT = """() => {
  const body = document.querySelector('.screen-body');
  const controls = Array.from(body.querySelectorAll('input, textarea, select')).filter(el => el.type !== 'hidden')
    .map(el => [el.name, el.type, el.value, el.checked]);
  return JSON.stringify([body.innerText, controls]);
}"""


def drafts_for(s, storage, task_name: str, item_id: int) -> list[tuple[str, dict]]:
    """A suggestion of every kind the task's screen reads that can be made here: each draft kind's
    answer from the drafting tests, and the demo's own suggestions for the item."""
    out = [(k.suggestion_kind, k.to_payload(DEMO_ANSWERS[k.name], item_input(s, storage, item_id, k)))
           for k in draft_kinds().values() if task_name in k.workflows]
    demo, item = _demo(task_name), s.get(Item, item_id)
    if demo is not None and demo.suggestions is not None:
        stage_name = next(st.name for st in demo.stages if st.workflow == task_name)
        record = dict(item.data)
        out += [(d.kind, d.payload) for d in demo.suggestions([record]) if d.stage == stage_name and d.kind not in dict(out)]
    return out


def control_seed(share: float, assignment_id: int) -> int:
    """A seed that puts the assignment in the control arm."""
    return next(seed for seed in range(10_000) if arms.arm({"draft_control_share": share, "draft_control_seed": seed}, assignment_id)
                == arms.CONTROL)


def set_config(sessions, stage_id: int, **values) -> None:
    with transaction(sessions) as s:
        row = s.get(Stage, stage_id)
        row.config = {**row.config, **values}


def test_the_control_arm_shows_no_suggestion_on_any_screen(page, committed, settings, storage, tmp_path):
    tasks = sorted(t.name for t in all_workflows() if t.suggestion_kinds)
    user_id = make_user(committed, "armed", "annotator", PASSWORD)
    log_in(page, "armed", PASSWORD)
    for name in tasks:
        folder = tmp_path / name
        folder.mkdir()
        stage_id, item_id, _ = item_at(committed, settings, storage, folder, name, review=False)
        start_stage(page, stage_id)
        page.wait_for_url("**/assignments/*")
        page.wait_for_load_state("load")
        bare = page.evaluate(SNAPSHOT)
        with transaction(committed) as s:
            made = drafts_for(s, storage, name, item_id)
            assert made, name
            for kind, payload in made:
                suggestions.store(s, item_id, stage_id, kind, MODEL, payload, model_version="v1")
            assignment_id = s.scalar(sa.select(Assignment.id).where(Assignment.item_id == item_id, Assignment.annotator_id == user_id))
        page.reload()
        page.wait_for_load_state("load")
        shown = page.evaluate(SNAPSHOT)
        assert shown != bare, name  # the screen shows what was drafted
        set_config(committed, stage_id, draft_control_share=0.5, draft_control_seed=control_seed(0.5, assignment_id))
        page.reload()
        page.wait_for_load_state("load")
        assert page.evaluate(SNAPSHOT) == bare, name  # nothing of it in the control arm
        assert MODEL not in page.content(), name


@pytest.mark.parametrize("correct", [True, False])
def test_a_probe_shows_the_planted_draft_and_a_correction_is_caught(page, committed, settings, storage, tmp_path, correct):
    with transaction(committed) as s:
        stage_id, truths, _ = voldoger_stage(s, settings, storage, tmp_path, n=0, n_gold=1, overlap=1, gold_share=0.5,
                                              probe_share=1.0)
        [(item_id, truth)] = truths.items()
    make_user(committed, "prober", "annotator", PASSWORD)
    log_in(page, "prober", PASSWORD)
    start_stage(page, stage_id)
    page.wait_for_url("**/assignments/*")
    wrong = {"yes": "no", "no": "yes"}[truth]
    note = page.locator("[data-check]")
    assert f"label {wrong}" in " ".join(note.inner_text().split())  # the planted label, preselected
    assert page.locator(f'input[name="label"][value="{wrong}"]').is_checked()
    page.locator("body").click(position={"x": 5, "y": 5})
    if correct:
        page.keyboard.press({"yes": "1", "no": "2"}[truth])
        assert page.locator(f'input[name="label"][value="{truth}"]').is_checked()
    page.locator("#submit-button").click()
    page.wait_for_url(lambda url: "/assignments/" not in url or url.endswith("/done"), timeout=15000)
    with transaction(committed) as s:
        row = s.scalars(sa.select(Annotation).where(Annotation.item_id == item_id)).one()
        assert (row.arm, row.probe_caught, row.payload["label"]) == ("probe", correct, truth if correct else wrong)
        assert row.active_seconds is not None and 0 <= row.active_seconds <= row.seconds_spent


@pytest.mark.parametrize("correct", [True, False])
def test_a_filter_probe_preselects_the_wrong_images_and_a_correction_is_caught(page, committed, settings, storage, tmp_path, correct):
    from tests.bias.test_filter_probe import filter_stage

    with transaction(committed) as s:
        stage_id, truths = filter_stage(s, settings, storage, tmp_path, n=0, n_gold=1)
        [(item_id, truth)] = truths.items()
    make_user(committed, "filter-prober", "annotator", PASSWORD)
    log_in(page, "filter-prober", PASSWORD)
    start_stage(page, stage_id)
    page.wait_for_url("**/assignments/*")
    # The planted scores preselect the gold images the wrong way round: image 2 for caption 1, image 1 for caption 2.
    assert "image 2 for caption 1, image 1 for caption 2" in " ".join(page.locator(".screen-body").inner_text().split())
    assert page.get_by_label("Image 2 for caption 1", exact=True).is_checked()
    assert page.get_by_label("Image 1 for caption 2", exact=True).is_checked()
    if correct:
        page.get_by_label("Image 1 for caption 1", exact=True).check(force=True)
        page.get_by_label("Image 2 for caption 2", exact=True).check(force=True)
    page.locator("#submit-button").click()
    page.wait_for_url(lambda url: "/assignments/" not in url or url.endswith("/done"), timeout=15000)
    with transaction(committed) as s:
        row = s.scalars(sa.select(Annotation).where(Annotation.item_id == item_id)).one()
        expected = truth if correct else {"choice_1": 1, "choice_2": 0}
        assert (row.arm, row.probe_caught, row.payload) == ("probe", correct, expected)
