"""The drafts page in Chromium: reached from the project page, two versions compared with their
chart, and a refused new version that keeps what was typed with the cursor in the field at fault."""

from __future__ import annotations

import pytest

from app.db import transaction
from tests import factories
from tests.conftest import PASSWORD
from tests.drafting.test_eval import two_versions
from tests.e2e.conftest import log_in, shoot

pytestmark = pytest.mark.committed


def test_an_admin_compares_versions_and_a_refused_version_focuses_its_template(page, committed, settings, storage, tmp_path, monkeypatch):
    with transaction(committed) as s:
        sc = two_versions(s, settings, storage, tmp_path, monkeypatch)
        factories.user(s, "boss", "admin")
    log_in(page, "boss", PASSWORD)
    page.goto(f"/projects/{sc.project_id}")
    page.click("a[data-drafts-link]")
    page.wait_for_url(f"**/stages/{sc.stage_id}/drafts")
    assert page.locator("table.draft-evaluation tbody tr").count() == 2
    assert page.locator("svg[data-draft-chart] rect").count() == 4
    shoot(page, "drafts-page")

    page.click("#kind-generic\\.test-choice summary")  # "New version", folded while versions exist
    form = page.locator("form.new-version")
    template = form.locator("textarea[name=template]")
    template.fill("Describe {nope} in {question}")
    form.locator("input[name=note]").fill("keeps this")
    form.locator("button[type=submit]").click()
    page.wait_for_selector("textarea[name=template][aria-invalid=true]")
    assert page.evaluate("document.activeElement.name") == "template"
    assert page.locator("textarea[name=template]").input_value() == "Describe {nope} in {question}"
    assert page.locator("form.new-version input[name=note]").input_value() == "keeps this"
    assert "{nope}" in page.locator("#new-generic\\.test-choice-template-error").inner_text()
