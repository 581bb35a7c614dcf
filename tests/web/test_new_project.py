"""The new-project form: description, stage names, guidelines with a preview, each stage's checked
configuration; errors keep what was typed."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from app.db import transaction
from app.models import Project, Stage
from tests import factories
from tests.conftest import csrf_from, login, png_bytes, start_annotating, zip_bytes


@pytest.fixture
def admin(app):
    with transaction(app.state.sessions) as s:
        factories.user(s, "boss", "admin")
    login_as = "boss"
    return login_as


def _token(client) -> str:
    return csrf_from(client.get("/projects/new").text)


def test_a_project_with_description_stage_names_guidelines_and_configs(client, app, admin):
    login(client, admin)
    r = client.post("/projects", data={
        "csrf_token": _token(client), "name": "Swaps", "description": "Colour swaps, second round",
        "workflow": "colorswap.filter", "overlap": "2", "sample_size": "",
        "stage_name_0": "pick images", "guidelines_0": "Pick the **best** image.", "config_0": '{"suggestion_margin": 0.05}',
        "stage_name_1": "rewrite", "guidelines_1": "Keep it natural.", "config_1": '{"sources": ["rule-based", "handmade"]}',
    }, follow_redirects=False)
    assert r.status_code == 303 and re.fullmatch(r"/projects/\d+", r.headers["location"])
    with transaction(app.state.sessions) as s:
        project = s.scalar(sa.select(Project).where(Project.name == "Swaps"))
        stages = s.scalars(sa.select(Stage).where(Stage.project_id == project.id).order_by(Stage.position)).all()
        assert project.description == "Colour swaps, second round"
        assert [(st.name, st.workflow, st.overlap) for st in stages] == [("pick images", "colorswap.filter", 2), ("rewrite", "colorswap.recaption", 2)]
        assert [st.guidelines for st in stages] == ["Pick the **best** image.", "Keep it natural."]
        assert [st.config for st in stages] == [{"suggestion_margin": 0.05}, {"sources": ["rule-based", "handmade"]}]
    page = client.get(r.headers["location"]).text
    assert "Colour swaps, second round" in page and "Pick the <strong>best</strong> image." in page


def test_the_generic_choices_field_fills_the_first_stage_config(client, app, admin):
    login(client, admin)
    r = client.post("/projects", data={"csrf_token": _token(client), "name": "Birds", "workflow": "generic.choice",
                                       "choices": "yes, no", "config_0": '{"question": "A bird?"}'}, follow_redirects=False)
    assert r.status_code == 303
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.select(Stage.config).join(Project).where(Project.name == "Birds")) == {"question": "A bird?", "choices": ["yes", "no"]}


@pytest.mark.parametrize("config, message", [
    ('{"suggestion_margin": 0.05,}', "Not valid JSON"),
    ('{"suggestion_margn": 0.05}', "&#39;suggestion_margn&#39; is not a setting of colorswap.filter"),
    ('{"suggestion_margin": "wide"}', "&#39;suggestion_margin&#39;: Input should be a valid number"),
    ('[1, 2]', "is a JSON object"),
])
def test_a_bad_config_is_refused_and_everything_typed_is_kept(client, app, admin, config, message):
    login(client, admin)
    form = {"csrf_token": _token(client), "name": "Kept", "description": "all <b>of</b> it", "workflow": "colorswap.filter",
            "overlap": "3", "sample_size": "10", "stage_name_0": "pick", "guidelines_0": "Look *twice*.", "config_0": config,
            "stage_name_1": "write", "guidelines_1": "Short.", "config_1": '{"missing_source": "handmade"}'}
    r = client.post("/projects", data=form, follow_redirects=False)
    assert r.status_code == 422 and message in r.text
    assert 'role="alert"' in r.text and 'aria-invalid="true"' in r.text
    for value in ('value="Kept"', "all &lt;b&gt;of&lt;/b&gt; it</textarea>", 'value="3"', 'value="10"', 'value="pick"',
                  "Look *twice*.</textarea>", 'value="write"', "Short.</textarea>", "{&#34;missing_source&#34;: &#34;handmade&#34;}</textarea>"):
        assert value in r.text, value
    assert config.replace('"', "&#34;") + "</textarea>" in r.text
    assert '<option value="colorswap.filter" selected>' in r.text
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.select(Project.id).where(Project.name == "Kept")) is None


def test_project_errors_keep_the_stage_fields(client, app, admin):
    login(client, admin)
    form = {"csrf_token": _token(client), "name": " ", "workflow": "wikido.verify", "stage_name_0": "verify", "guidelines_0": "G"}
    r = client.post("/projects", data=form)
    assert r.status_code == 422 and "A project needs a name." in r.text and 'value="verify"' in r.text


def test_the_workflow_select_brings_that_pipeline_s_stages_keeping_what_was_typed(client, admin):
    login(client, admin)
    r = client.get("/projects/new", params={"workflow": "visargs.premises", "stage_name_0": "draft", "config_0": '{"accept_candidates": true}'},
                   headers={"HX-Request": "true", "HX-Target": "stages"})
    assert r.status_code == 200 and r.text.lstrip().startswith('<div id="stages">') and "<html" not in r.text
    assert re.findall(r'<code>([\w.]+)</code></legend>', r.text) == ["visargs.premises", "visargs.structure", "visargs.grounding"]
    assert 'value="draft"' in r.text and "{&#34;accept_candidates&#34;: true}</textarea>" in r.text
    assert "<code>accept_candidates</code>" in r.text  # the settings this workflow reads are listed


def test_guidelines_preview_renders_markdown_and_never_markup(client, admin):
    login(client, admin)
    text = "# Rules\n\n**Bold** and <script>alert(1)</script> <img src=x onerror=alert(2)> [link](javascript:alert(3))"
    r = client.post("/projects/preview", data={"guidelines_0": text}, headers={"HX-Request": "true", "X-CSRF-Token": _token(client)})
    assert r.status_code == 200 and "<html" not in r.text
    assert "<h1>Rules</h1>" in r.text and "<strong>Bold</strong>" in r.text
    assert "<script" not in r.text and "<img" not in r.text and 'href="javascript' not in r.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text


def test_guidelines_markup_is_shown_as_text_on_the_annotation_screen(client, app, admin):
    login(client, admin)
    r = client.post("/projects", data={"csrf_token": _token(client), "name": "Marked", "workflow": "generic.choice", "choices": "a, b",
                                       "guidelines_0": "*Careful* <script>window.x=1</script> <b>bold</b>"}, follow_redirects=False)
    url = r.headers["location"]
    records = b'{"id": "1", "image": "a.png"}'
    assert client.post(f"{url}/import", data={"csrf_token": _token(client)},
                       files={"file": ("r.jsonl", records), "images": ("i.zip", zip_bytes({"a.png": png_bytes()}))},
                       follow_redirects=False).status_code == 303
    with transaction(app.state.sessions) as s:
        stage_id = s.scalar(sa.select(Stage.id).join(Project).where(Project.name == "Marked"))
    screen = start_annotating(client, stage_id)
    assert screen.status_code == 200 and "<em>Careful</em>" in screen.text
    assert "<script>window.x=1</script>" not in screen.text and "&lt;script&gt;window.x=1&lt;/script&gt;" in screen.text
    assert "<b>bold</b>" not in screen.text


def test_only_admins_open_the_form(client, app):
    with transaction(app.state.sessions) as s:
        factories.user(s, "rev", "reviewer")
    login(client, "rev")
    assert client.get("/projects/new").status_code == 403
    assert 'href="/projects/new"' not in client.get("/").text


def test_the_api_checks_stage_configurations_too(client, api):
    bad = client.post("/api/v1/projects", headers=api["admin"], json={
        "name": "typo", "stages": [{"workflow": "voldoger.verify", "config": {"route": "flippd"}}]})
    assert bad.status_code == 422 and "Stage 1 (voldoger.verify)" in bad.text and "route" in bad.text
    ok = client.post("/api/v1/projects", headers=api["admin"], json={
        "name": "fine", "stages": [{"workflow": "voldoger.verify", "config": {"route": "flipped"}}]})
    assert ok.status_code == 201, ok.text


def test_one_configuration_for_a_pipeline_is_shared_out_by_the_keys_each_stage_reads():
    from app.services.projects.projects import stage_specs_for

    specs = stage_specs_for("colorswap.filter", config={"suggestion_margin": 0.1, "sources": ["handmade"], "extra_colour_words": ["teal"],
                                                        "colour": 1}, config_for_all=True)
    assert [s.config for s in specs] == [{"suggestion_margin": 0.1, "extra_colour_words": ["teal"], "colour": 1},
                                         {"sources": ["handmade"], "extra_colour_words": ["teal"]}]
