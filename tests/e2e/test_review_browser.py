"""A reviewer settles a disagreement in real Chromium with one key."""

from __future__ import annotations

import sqlalchemy as sa

from app.db import transaction
from app.models import ItemResult
from app.services.annotation import annotation
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


def test_the_review_screen_shows_the_image_and_the_rendered_answers_and_one_key_opens_the_next(page, committed, settings, storage, tmp_path):
    import json

    from app.datasets.wikido.demo import wikido_records
    from app.models import Item
    from app.services.imports import imports
    from app.services.projects import projects

    records = wikido_records(tmp_path, 2, seed=4)
    with transaction(committed) as s:
        project = projects.create_project(s, "WikiDO review", [projects.StageSpec(workflow="wikido.verify", overlap=2)])
        source = imports.ImageSource(settings, storage, base=tmp_path)
        body = "\n".join(json.dumps(r) for r in records).encode()
        imports.import_items(s, project.id, body, "wd.jsonl", settings=settings, storage=storage, images=source)
        source.close()
        stage_id = projects.stages_of(s, project.id)[0].id
    for name in ("u1", "u2"):
        user = make_user(committed, name)
        for n in range(2):
            with transaction(committed) as s:
                claimed = annotation.claim(s, stage_id, user)
                caption = s.get(Item, claimed.item_id).data["caption"]
                payload = {"verdict": "correct"} if name == "u1" else {"verdict": "hallucinated", "caption": " ".join(caption.split()[:3]) + "."}
                annotation.submit(s, claimed.assignment_id, user, payload, f"k-{name}-{n}")
    with transaction(committed) as s:
        first, second = s.scalars(sa.select(Item.id).where(Item.stage_id == stage_id).order_by(Item.id)).all()
    make_user(committed, "rita", "reviewer", PASSWORD)
    log_in(page, "rita", PASSWORD)
    page.goto(f"/stages/{stage_id}/review/next")
    page.wait_for_url(f"**/stages/{stage_id}/review/{first}")

    image = page.locator(".review-item img")
    assert image.count() == 1 and image.get_attribute("src").startswith("/assets/")
    page.wait_for_function("document.querySelector('.review-item img').naturalWidth > 0")
    assert page.locator(".review-item").inner_text().count("Model caption") == 1
    cards = page.locator(".review-annotation")
    assert cards.count() == 2
    assert "Correct" in cards.nth(0).inner_text() and cards.nth(0).locator("del").count() == 0
    assert "Hallucinated" in cards.nth(1).inner_text() and cards.nth(1).locator("del").count() >= 1
    assert page.locator(".review-annotation .differs").count() >= 2
    assert page.locator("details.review-json[open]").count() == 0 and page.locator("pre").count() == 0

    page.keyboard.press("2")
    page.wait_for_url(f"**/stages/{stage_id}/review/{second}")
    page.wait_for_selector(".review-item img")
    with transaction(committed) as s:
        final = s.scalar(sa.select(ItemResult.payload).where(ItemResult.item_id == first))
    assert final["verdict"] == "hallucinated"
