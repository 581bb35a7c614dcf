"""An admin creates a project in Chromium (workflow, its stages' names, guidelines with a preview and
configuration), imports items, then finds them on the items page; reloads never post again."""

from __future__ import annotations

import json

import sqlalchemy as sa

from app.db import transaction
from app.models import Project, Stage
from tests.conftest import PASSWORD, make_user, png_bytes, zip_bytes
from tests.e2e.conftest import fits, log_in

# The chosen option's label, measured in the select's font, fits inside the select (padding and arrow aside).
FITS = """el => {
  const ctx = document.createElement("canvas").getContext("2d");
  ctx.font = getComputedStyle(el).font;
  const style = getComputedStyle(el);
  const room = el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return ctx.measureText(el.selectedOptions[0].text).width <= room;
}"""


def test_admin_creates_a_project_with_guidelines_and_browses_its_items(page, committed, tmp_path):
    make_user(committed, "root", "admin", PASSWORD)
    log_in(page, "root", PASSWORD)
    page.click("#new-project")
    page.wait_for_url("**/projects/new")

    # The workflow select shows its whole label, and choosing one brings that pipeline's stages.
    select = page.locator("select[name=workflow]")
    assert select.evaluate(FITS), select.evaluate("el => el.selectedOptions[0].text")
    page.select_option("select[name=workflow]", "visargs.premises")
    page.wait_for_selector("fieldset[data-stage='2']")
    legends = page.locator("fieldset.stage-fields legend code").all_inner_texts()
    assert legends == ["visargs.premises", "visargs.structure", "visargs.grounding"]
    assert select.evaluate(FITS), select.evaluate("el => el.selectedOptions[0].text")
    page.select_option("select[name=workflow]", "generic.choice")
    page.wait_for_selector("fieldset[data-stage='1']", state="detached")

    page.fill("input[name=name]", "Shapes")
    page.fill("textarea[name=description]", "Which shape is it?")
    page.fill("input[name=stage_name_0]", "shape")
    page.fill("textarea[name=guidelines_0]", "Pick **one**. <script>window.__xss = 1</script><img src=x onerror='window.__xss = 2'>")
    page.click("button:has-text('Preview guidelines')")
    preview = page.locator("#preview-0")
    preview.locator("strong").wait_for()
    assert preview.locator("strong").inner_text() == "one"
    assert "<script>window.__xss = 1</script>" in preview.inner_text() and preview.locator("script, img").count() == 0
    assert page.evaluate("window.__xss") is None

    page.fill("input[name=choices]", "circle, square")
    page.fill("textarea[name=config_0]", '{"question": "Which shape?", "colour": "red"}')
    page.click("button:has-text('Create project')")
    alert = page.locator("[role=alert]")
    assert "not a setting of generic.choice" in page.locator("#config-error-0").inner_text() and alert.is_visible()
    assert page.input_value("input[name=name]") == "Shapes" and page.input_value("input[name=stage_name_0]") == "shape"
    assert page.input_value("textarea[name=guidelines_0]").startswith("Pick **one**.")
    page.fill("textarea[name=config_0]", '{"question": "Which shape?"}')
    page.click("button:has-text('Create project')")
    page.wait_for_url(lambda u: u.rstrip("/").split("/")[-1].isdigit())
    with transaction(committed) as s:
        project = s.scalar(sa.select(Project).where(Project.name == "Shapes"))
        stage = s.scalar(sa.select(Stage).where(Stage.project_id == project.id))
        assert (project.description, stage.name, stage.config) == ("Which shape is it?", "shape", {"question": "Which shape?", "choices": ["circle", "square"]})

    records = tmp_path / "items.jsonl"
    records.write_text("\n".join(json.dumps({"id": f"s-{i}", "image": "a.png"}) for i in range(60)))
    (tmp_path / "images.zip").write_bytes(zip_bytes({"a.png": png_bytes()}))
    page.set_input_files("input[name=file]", str(records))
    page.set_input_files("input[name=images]", str(tmp_path / "images.zip"))
    page.click("button:has-text('Import')")
    page.wait_for_selector("text=Imported 60 items")
    assert page.url.endswith(f"/projects/{project.id}#import")
    page.reload()  # a GET: nothing is imported twice, the notice is gone
    assert page.locator("text=Imported 60 items").count() == 0

    page.click("#items-link")
    page.wait_for_url(f"**/projects/{project.id}/items")
    assert page.locator("table.items tbody tr").count() == 50
    page.click("#next-page")
    assert page.locator("table.items tbody tr").count() == 10
    page.fill("input[name=q]", "s-59")
    page.click("button:has-text('Filter')")
    rows = page.locator("table.items tbody tr")
    assert rows.count() == 1
    rows.locator("a").click()
    page.wait_for_url("**/items/*/history")


def test_a_refused_project_form_puts_the_focus_on_the_field_in_error(page, committed):
    """The error of the third stage's configuration is far below Name: the cursor goes there, the
    page scrolls to it, and the message sits next to it."""
    make_user(committed, "root", "admin", PASSWORD)
    log_in(page, "root", PASSWORD)
    page.goto("/projects/new")
    page.select_option("select[name=workflow]", "visargs.premises")
    page.wait_for_selector("fieldset[data-stage='2']")
    page.fill("input[name=name]", "Arguments")
    page.fill("textarea[name=config_2]", '{"no_such_key": 1}')
    page.click("button:has-text('Create project')")
    page.wait_for_selector("#config-error-2")
    assert page.evaluate("document.activeElement.name") == "config_2"
    fits(page, "textarea[name=config_2]", "#config-error-2")
    assert "Stage 3's configuration is not valid" in page.locator("[role=alert]").inner_text()

    page.fill("textarea[name=config_2]", "")
    page.fill("input[name=overlap]", "1")
    page.fill("input[name=sample_size]", "5")  # a sample needs two or more annotators per item
    page.click("button:has-text('Create project')")
    page.wait_for_selector("#overlap-error")
    assert page.evaluate("document.activeElement.name") == "overlap"
    fits(page, "input[name=overlap]", "#overlap-error")
    with transaction(committed) as s:
        assert s.scalar(sa.select(Project.id).where(Project.name == "Arguments")) is None
