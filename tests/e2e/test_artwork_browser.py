"""ExpArt in real Chromium by keyboard only: keep a section, drop a References section as the rule
suggests, then judge the kept section's explanation (strike words, score); payloads and exports checked."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import sqlalchemy as sa

from app.db import transaction
from app.models import Annotation, Item, Stage
from app.services.exports import export
from app.services.imports import imports
from app.services.projects import projects
from tests.conftest import PASSWORD, make_user, png_bytes
from tests.e2e.conftest import fits, log_in_by_keyboard, shoot, start_stage

RECORDS = [
    {"id": "0001_01", "title": "Mona Lisa", "image": "0.png", "section": "History", "subsection": "Theft",
     "text": "It was stolen from the Louvre in 1911. It returned to Paris in 1913.", "entities": ["Louvre", "Paris"],
     "model": "llava", "explanation": "It was stolen from the Louvre by thieves in Rome."},
    {"id": "0001_02", "title": "Mona Lisa", "image": "0.png", "section": "References",
     "text": "Vasari, Lives of the Artists.", "entities": ["Vasari"]},
]


def _project(committed, settings, storage) -> tuple[int, int]:
    with tempfile.TemporaryDirectory() as tmp, transaction(committed) as s:
        Path(tmp, "0.png").write_bytes(png_bytes((120, 80, 40), size=(64, 64)))
        project = projects.create_project(s, "ExpArt", projects.stage_specs_for("artwork.sections"))
        body = "\n".join(json.dumps(r) for r in RECORDS).encode()
        imports.import_items(s, project.id, body, "dev.jsonl", settings=settings, storage=storage,
                             images=imports.ImageSource(settings, storage, base=Path(tmp)))
        return project.id, projects.stages_of(s, project.id)[0].id


def test_sections_and_an_explanation_by_keyboard(page, committed, settings, storage, app):
    project_id, stage_id = _project(committed, settings, storage)
    make_user(committed, "art", "annotator", PASSWORD)
    log_in_by_keyboard(page, "art", PASSWORD)
    start_stage(page, stage_id)

    for _ in range(2):
        page.wait_for_url("**/assignments/*")
        ident = page.locator(".annotate-head code").first.inner_text()
        if ident == "0001_02":
            fits(page, "[data-rule]", "#submit-button")
            shoot(page, "artwork.sections")
            assert page.locator("[data-rule]").is_visible()
            assert page.locator("input[name=reason][value=not_about_artwork]").is_checked()
        else:
            assert page.locator("[data-path] li").all_inner_texts() == ["History", "Theft"]
            page.keyboard.press("3")  # a reason chooses Drop ...
            assert page.locator("input[name=decision][value=drop]").is_checked()
            page.keyboard.press("k")  # ... and Keep clears it
            assert not page.locator("input[name=reason]:checked").count()
        url = page.url
        page.keyboard.press("Enter")
        page.wait_for_url(lambda u, old=url: u != old)

    with transaction(committed) as s:
        explain_id = s.scalar(sa.select(Stage.id).where(Stage.project_id == project_id, Stage.workflow == "artwork.explanation"))
    start_stage(page, explain_id)
    page.wait_for_url("**/assignments/*")
    fits(page, "[data-path]", "[data-struck-count]", "#submit-button")
    assert page.locator(".tok.ent.shared").all_inner_texts() == ["Louvre"]
    assert page.locator(".tok.ent").count() == 1
    # Tokens: It was stolen from the Louvre by thieves in Rome .
    for _ in range(6):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("x")  # "by"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("x")  # "thieves"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("x")  # "Rome"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("x")  # "." by mistake
    page.keyboard.press("z")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Shift+X")  # "in" through "Rome"
    page.keyboard.press("2")
    assert page.locator("[data-struck-count]").inner_text() == "4 words struck."
    shoot(page, "artwork.explanation")
    url = page.url
    page.keyboard.press("Enter")
    page.wait_for_url(lambda u, old=url: u != old)

    with transaction(committed) as s:
        rows = s.execute(sa.select(Item.external_id, Stage.workflow, Annotation.payload)
                         .join(Annotation, Annotation.item_id == Item.id).join(Stage, Stage.id == Annotation.stage_id)).all()
        statuses = dict(s.execute(sa.select(Item.external_id, Item.status)).all())
    stored = {(i, w): p for i, w, p in rows}
    assert stored[("0001_01", "artwork.sections")] == {"decision": "keep", "reason": None}
    assert stored[("0001_02", "artwork.sections")] == {"decision": "drop", "reason": "not_about_artwork"}
    assert stored[("0001_01", "artwork.explanation")] == {"score": 2, "struck": [[6, 10]]}
    assert statuses == {"0001_01": "done", "0001_02": "discarded"}

    with transaction(committed) as s:
        run = export.create_export(s, project_id, "published", settings=settings, use_splits=False).id
    export.run_export(committed, storage, settings, run)
    with transaction(committed) as s:
        text = export.find_file(s, run, "all.jsonl").read_text()
        log = [json.loads(x) for x in export.find_file(s, run, "judgements.jsonl").read_text().splitlines()]
    (record,) = [json.loads(x) for x in text.splitlines()]
    assert list(record)[: len(RECORDS[0])] == list(RECORDS[0])
    assert record["instruction"] == "Explain the Theft regarding the History of this artwork, Mona Lisa."
    assert record["instruction_without_title"] == "Explain the Theft regarding the History of this artwork."
    judged = {x["id"]: x for x in log}
    assert judged["0001_01"]["struck_words"] == ["by", "thieves", "in", "Rome"] and judged["0001_01"]["score"] == 2
    assert judged["0001_02"]["decision"] == "drop" and "model" not in judged["0001_02"]
