"""An admin splits a finished project and exports it in Chromium; the page follows the job to the end."""

from __future__ import annotations

import hashlib
import json

from app.db import transaction
from app.services.exports import export
from tests.conftest import PASSWORD, make_user
from tests.e2e.conftest import log_in
from tests.services.test_splits import finished_project


def test_admin_saves_splits_exports_and_downloads(page, live_server, committed, settings, storage, tmp_path):
    project_id = finished_project(committed, settings, storage, tmp_path, 40, name="Finished")
    make_user(committed, "root", "admin", PASSWORD)
    log_in(page, "root", PASSWORD)
    page.goto(f"/projects/{project_id}")
    page.click("#export-link")
    assert page.locator("#split-form").get_attribute("open") is not None  # finished items, no split yet: the form is open
    page.select_option("select[name=method]", "ratios")
    page.fill("input[name=sizes]", "train=0.5, test=0.4")  # ratios must add up to 1
    page.click("button:has-text('Save and count')")
    assert "add up to 0.9" in page.locator("[role=alert]").inner_text()
    assert page.input_value("input[name=sizes]") == "train=0.5, test=0.4"  # kept
    page.fill("input[name=sizes]", "train=0.5, test=0.5")
    page.fill("input[name=held_field]", "topic")
    page.fill("input[name=held_values]", "food")
    page.click("button:has-text('Save and count')")
    assert "Saved split version 1" in page.locator("#notice").inner_text()
    counts = {el.get_attribute("data-split"): el.inner_text() for el in page.locator('tr[data-version="1"] .split-count').all()}
    assert list(counts) == ["train", "test", "test_ood"] and counts["test_ood"] == "test_ood 7"

    page.select_option("select[name=format]", "jsonl")
    page.click("#start-export")
    row = page.locator("tr[data-export]")
    assert "queued" in row.inner_text()
    with transaction(committed) as s:
        export_id = export.exports_of(s, project_id)[0].id
    export.run_export(committed, storage, settings, export_id)  # what the worker's job runs
    page.wait_for_selector(f'tr[data-export="{export_id}"].status-done')  # the page polls until the job is done
    manifest = json.loads(page.request.get(f"/exports/{export_id}/files/manifest.json").body())
    assert manifest["split_order"] == ["train", "test", "test_ood"]
    body = page.request.get(f"/exports/{export_id}/files/test_ood.jsonl").body()
    assert hashlib.sha256(body).hexdigest() == manifest["files"]["test_ood.jsonl"]["sha256"]
    assert {json.loads(line)["record"]["topic"] for line in body.decode().splitlines()} == {"food"}


def test_the_leaks_section_follows_the_job_until_its_report_is_there(page, live_server, committed, settings, storage, tmp_path, engine):
    import threading

    import sqlalchemy as sa

    from app.models import Asset, ImageHash
    from tests.services.test_leaks import planted_project
    from tests.worker.test_queued_requests import run_worker

    with transaction(committed) as s:
        project_id, _ = planted_project(s, settings, storage, tmp_path, distinct=20)
        s.execute(sa.delete(ImageHash))  # images stored before hashes were kept: the job hashes them
    make_user(committed, "root", "admin", PASSWORD)
    log_in(page, "root", PASSWORD)
    page.goto(f"/projects/{project_id}/export")
    page.click("#find-leaks")
    assert "is queued" in page.locator("#leak-job").inner_text()
    # An uncommitted hash of one image holds the job's first batch of hashes: it stops mid-step.
    with engine.connect() as blocker:
        blocker.execute(sa.insert(ImageHash).values(sha256=blocker.scalar(sa.select(sa.func.min(Asset.sha256))), phash=0))
        worker = threading.Thread(target=run_worker, args=(settings, ["maintenance"]))
        worker.start()
        try:
            page.wait_for_selector("#leak-job progress", timeout=60_000)  # the section refreshed itself
            assert "hashing images" in page.locator("#leak-job").inner_text()
        finally:
            blocker.rollback()
            worker.join(120)
    page.wait_for_selector("[data-leak-group]", timeout=30_000)  # and again, once the report is stored
    assert page.locator("#leak-job").count() == 0 and "leaked groups" in page.locator("#leak-summary").inner_text()
