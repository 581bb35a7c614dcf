"""The first keys of every screen: focus starts on the item, a skip link and the key help are the
first Tab stops, and the two-key screens (a generic choice, a conclusion equivalence) take two."""

from __future__ import annotations

import json

import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation
from app.services.imports import imports
from app.services.projects import projects
from tests.conftest import PASSWORD, make_choice_project, make_user
from tests.e2e.conftest import Keys, fits, open_stage, shoot


def _payloads(committed) -> list[dict]:
    with transaction(committed) as s:
        return list(s.scalars(sa.select(Annotation.payload).order_by(Annotation.id)))


def _active(page) -> str:
    return page.evaluate("""() => { const a = document.activeElement;
        return a.tagName.toLowerCase() + (a.name ? '[name=' + a.name + ']' : '') + (a.id ? '#' + a.id : '') +
               (a.dataset && a.dataset.skip !== undefined ? '[data-skip]' : ''); }""")


def test_a_choice_in_two_keys_and_the_first_tab_stops(page, committed, settings, storage):
    _, stage_id = make_choice_project(committed, settings, storage, 3, name="Keys")
    make_user(committed, "kai", "annotator", PASSWORD)
    first = open_stage(page, "kai", stage_id)
    assert _active(page) == "input[name=choice]"  # the screen starts on its first control

    keys = Keys(page)
    keys.press("2", "Enter")
    page.wait_for_url(lambda url: url != first and "/assignments/" in url)
    assert keys.count == 2 and _payloads(committed) == [{"choice": "b"}]

    second = page.url
    # From the top of the page: the skip link, the key help, then the header.
    page.evaluate("() => { const b = document.body; b.tabIndex = -1; b.focus(); b.removeAttribute('tabindex'); }")
    page.keyboard.press("Tab")
    assert _active(page) == "a[data-skip]" and page.locator("[data-skip]").is_visible()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('.key-help') !== null")
    assert "Enter submits" not in page.locator(".key-help").inner_text()  # closed, one line
    page.keyboard.press("Enter")  # Enter on the key help opens it and submits nothing
    assert "Enter submits" in page.locator(".key-help").inner_text() and page.url == second
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('header') !== null")
    # The skip link leads back to the item: a digit and Enter answer it.
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")
    assert _active(page) == "input[name=choice]"
    page.keyboard.press("3")
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: url != second)
    assert _payloads(committed) == [{"choice": "b"}, {"choice": "c"}]


def test_an_equivalence_in_two_keys(page, committed, settings, storage):
    records = [{"id": f"pair-{n}", "conclusion_a": f"Smoking harms <b>{n}</b>", "conclusion_b": "Smoking is bad"} for n in range(2)]
    with transaction(committed) as s:
        project = projects.create_project(s, "Same?", [projects.StageSpec(workflow="visargs.equivalence")])
        body = "\n".join(json.dumps(r) for r in records).encode()
        imports.import_items(s, project.id, body, "pairs.jsonl", settings=settings, storage=storage)
        stage_id = projects.stages_of(s, project.id)[0].id
    make_user(committed, "eve", "annotator", PASSWORD)
    first = open_stage(page, "eve", stage_id)
    assert page.locator("blockquote").first.inner_text().startswith("Smoking harms <b>")
    fits(page, "blockquote", "#submit-button")
    shoot(page, "visargs.equivalence")
    keys = Keys(page)
    keys.press("n", "Enter")
    page.wait_for_url(lambda url: url != first and "/assignments/" in url)
    assert keys.count == 2 and _payloads(committed) == [{"equivalent": False}]
