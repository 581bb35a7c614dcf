"""An admin splits a finished project and exports it in Chromium; the page follows the job to the end."""

from __future__ import annotations

import hashlib
import json

from app.db import transaction
from app.services import export
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
