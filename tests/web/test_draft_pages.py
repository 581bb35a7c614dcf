"""The drafts page of a stage and the drafting API: versions, a refused form, runs queued as jobs
with their progress, failed drafts shown escaped, and the evaluation of two versions equal to the
agreement module computed directly, as the page shows it, the API answers it and Parquet holds it."""

from __future__ import annotations

import html
import io
import re

import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from app.datasets import draft_kinds, get_workflow
from app.db import transaction
from app.models import Prompt, Stage, Suggestion
from tests import factories
from tests.conftest import csrf_from, login
from tests.drafting.test_eval import expected_kappa, two_versions

KIND = "generic.test-choice"


@pytest.fixture
def staged(app, client, settings, storage, tmp_path, monkeypatch):
    """Two prompt versions over 50 finished items (tests/drafting/test_eval.py), an admin logged in,
    and the admin's API token."""
    with transaction(app.state.sessions) as s:
        sc = two_versions(s, settings, storage, tmp_path, monkeypatch)
        boss = factories.user(s, "boss", "admin")
        tokens = {"admin": {"Authorization": f"Bearer {factories.token(s, boss)}"}}
    login(client, "boss")
    return sc, tokens


def stage_name(app, stage_id: int) -> str:
    with transaction(app.state.sessions) as s:
        return s.get(Stage, stage_id).name


def evaluation_rows(page: str) -> dict[int, str]:
    table = page.split('class="draft-evaluation"', 1)[1].split("</table>", 1)[0]
    return {int(pid): row for pid, row in re.findall(r'<tr data-prompt="(\d+)">(.*?)</tr>', table, re.S)}


def shown_figure(row: str, name: str) -> tuple[str, str, str]:
    escaped = re.escape(name.replace("'", "&#39;"))  # as Jinja escapes it
    found = re.search(rf'data-figure="{escaped}"><span class="estimate">([-\d.]+)</span>'
                      rf' <small class="muted">\[([-\d.]+), ([-\d.]+)\]</small>', row)
    assert found, row
    return found.groups()


def test_the_evaluation_shows_each_versions_agreement_as_the_agreement_module_computes_it(client, staged):
    sc, tokens = staged
    v1, v2 = sc.prompts
    page = client.get(f"/stages/{sc.stage_id}/drafts?a={v1.id}&b={v2.id}")
    assert page.status_code == 200
    rows = evaluation_rows(page.text)
    assert list(rows) == [v1.id, v2.id]
    api = client.get(f"/api/v1/stages/{sc.stage_id}/drafts/evaluation", params={"prompts": f"{v1.id},{v2.id}"}, headers=tokens["admin"])
    assert api.status_code == 200, api.text
    answered = {v["prompt_id"]: v for v in api.json()["versions"]}
    for prompt in sc.prompts:
        estimate, ci = expected_kappa(sc.pairs[prompt.id])  # the page's and the API's defaults: 1,000 samples, seed 0
        assert shown_figure(rows[prompt.id], "Cohen's kappa") == (f"{estimate:.3f}", f"{ci.low:.3f}", f"{ci.high:.3f}")
        kappa = answered[prompt.id]["figures"][0]
        assert kappa["name"] == "Cohen's kappa" and kappa["items"] == len(sc.pairs[prompt.id])
        assert (kappa["estimate"], kappa["low"], kappa["high"]) == pytest.approx((estimate, ci.low, ci.high), abs=1e-12)
    assert answered[v1.id]["valid_share"] == pytest.approx(48 / 52) and answered[v2.id]["valid"] == 52
    assert "data-draft-chart" in page.text and page.text.count('<g data-bar="') == 4  # kappa and share, two versions each
    # The page's default: the two newest versions of the kind.
    assert list(evaluation_rows(client.get(f"/stages/{sc.stage_id}/drafts").text)) == [v2.id, v1.id]


def test_parquet_from_the_page_and_the_api_round_trips(client, staged):
    sc, tokens = staged
    v1, v2 = sc.prompts
    page = client.get(f"/stages/{sc.stage_id}/drafts?a={v1.id}&b={v2.id}").text
    link = html.unescape(re.search(r'href="([^"]+)" id="evaluation-parquet"', page)[1])
    for got in (client.get(link), client.get(f"/api/v1/stages/{sc.stage_id}/drafts/evaluation.parquet?prompts={v1.id},{v2.id}",
                                             headers=tokens["admin"])):
        assert got.status_code == 200 and got.headers["content-type"] == "application/vnd.apache.parquet"
        rows = pq.read_table(io.BytesIO(got.content)).to_pylist()
        assert len(rows) == 46 + 50
        by_version = {(r["version"], r["item_id"]): r for r in rows}
        assert sum(r["score"] for r in rows if r["version"] == 1) == sum(d == f for d, f in sc.pairs[v1.id])
        assert all(k[0] in (1, 2) for k in by_version)


def test_roles_and_csrf(app, client, staged):
    sc, tokens = staged
    with transaction(app.state.sessions) as s:
        for role in ("annotator", "reviewer"):
            tokens[role] = {"Authorization": f"Bearer {factories.token(s, factories.user(s, f'page-{role}', role))}"}
    page = client.get(f"/stages/{sc.stage_id}/drafts")
    token = csrf_from(page.text)
    assert 'data-drafts-link' in client.get(f"/projects/{sc.project_id}").text
    no_token = client.post(f"/stages/{sc.stage_id}/prompts", data={"draft_kind": KIND, "drafter": "x"}, follow_redirects=False)
    assert no_token.status_code == 403
    for role in ("annotator", "reviewer"):
        client.post("/logout", data={"csrf_token": token})
        login(client, f"page-{role}")
        assert client.get(f"/stages/{sc.stage_id}/drafts").status_code == 403
        assert 'data-drafts-link' not in client.get(f"/projects/{sc.project_id}").text
        refused = client.post(f"/stages/{sc.stage_id}/prompts", data={"csrf_token": csrf_from(client.get("/").text), "draft_kind": KIND,
                                                                         "drafter": "x"}, follow_redirects=False)
        assert refused.status_code == 403
        api = client.get(f"/api/v1/stages/{sc.stage_id}/prompts", headers=tokens[role])
        assert api.status_code == 403
    with transaction(app.state.sessions) as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(Prompt)) == 2
    assert client.get("/stages/999999/drafts").status_code == 403  # a reviewer is refused before any lookup


def test_a_new_version_increments_and_a_refused_form_keeps_what_was_typed(app, client, staged, tmp_path):
    sc, _ = staged
    url = f"/stages/{sc.stage_id}/drafts"
    token = csrf_from(client.get(url).text)
    typed = {"csrf_token": token, "draft_kind": KIND, "drafter": "test-drafter", "template": "Say {nope} about {question}",
             "system": "Be brief.", "max_tokens": "12", "temperature": "0.2", "seed": "", "note": "a typo'd field"}
    refused = client.post(f"/stages/{sc.stage_id}/prompts", data=typed, follow_redirects=False)
    assert refused.status_code == 422
    textarea = re.search(r'<textarea name="template"[^>]*>([^<]*)</textarea>', refused.text)
    assert textarea[1] == "Say {nope} about {question}" and "autofocus" in textarea[0] and 'aria-invalid="true"' in textarea[0]
    assert "{nope}" in refused.text and 'value="a typo&#39;d field"' in refused.text and 'name="max_tokens" value="12"' in refused.text
    assert refused.text.count("autofocus") == 1

    saved = client.post(f"/stages/{sc.stage_id}/prompts", data={**typed, "template": "Answer {question} with one of {choices}."},
                        follow_redirects=False)
    assert saved.status_code == 303 and saved.headers["location"] == f"{url}#kind-{KIND}"
    page = client.get(url).text
    assert f"Saved {KIND} version 3" in page
    with transaction(app.state.sessions) as s:
        v3 = s.scalar(sa.select(Prompt).where(Prompt.version == 3))
        assert (v3.template, v3.system, v3.settings, v3.note) == ("Answer {question} with one of {choices}.", "Be brief.",
                                                                 {"max_tokens": 12, "temperature": 0.2}, "a typo'd field")
    # The next form starts from the newest version.
    assert "Answer {question} with one of {choices}.</textarea>" in page

    bad_number = client.post(f"/stages/{sc.stage_id}/prompts", data={**typed, "template": "{question}", "temperature": "hot"})
    assert bad_number.status_code == 422 and re.search(r'name="temperature" value="hot"[^>]*autofocus', bad_number.text)

    # With a drafters file, a version names one of its drafters.
    drafters = tmp_path / "drafters.toml"
    drafters.write_text('[drafters.vllm]\nbackend = "openai"\nbase_url = "http://gpu:8000/v1"\nmodel = "m"\n')
    app.state.settings = app.state.settings.model_copy(update={"drafters_file": drafters})
    page = client.get(url).text
    assert '<option value="vllm"' in page
    unknown = client.post(f"/stages/{sc.stage_id}/prompts", data={**typed, "template": "{question}"})
    assert unknown.status_code == 422 and "No drafter named &#39;test-drafter&#39;" in unknown.text
    assert re.search(r'<select name="drafter" autofocus', unknown.text)
    assert client.post(f"/stages/{sc.stage_id}/prompts", data={**typed, "template": "{question}", "drafter": "vllm"},
                       follow_redirects=False).status_code == 303


def test_failed_drafts_are_listed_escaped_and_cut(app, client, staged):
    sc, _ = staged
    v1 = sc.prompts[0]
    with transaction(app.state.sessions) as s:
        item = factories.item_ids(s, sc.project_id)[0]
        s.execute(sa.delete(Suggestion).where(Suggestion.prompt_id == v1.id, Suggestion.item_id == item))
        factories.failed_draft(s, v1, item, "schema: 'choice' is a required property", raw="<script>alert(1)</script>" + "x" * 600)
    page = client.get(f"/stages/{sc.stage_id}/drafts").text
    listing = page.split(f'<table class="draft-failures" data-prompt="{v1.id}">', 1)[1].split("</table>", 1)[0]
    assert listing.count("<tr>") == 1 + 5  # the header and five failures (four from the run, one here)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in listing and "<script>alert" not in listing
    assert "x" * 375 in listing and "x" * 376 not in listing and "x" * 600 not in listing and "…" in listing
    assert "schema: &#39;choice&#39; is a required property" in listing


def test_the_api_lists_kinds_and_makes_versions(client, staged):
    sc, tokens = staged
    admin = tokens["admin"]
    kinds = client.get(f"/api/v1/stages/{sc.stage_id}/draft-kinds", headers=admin).json()
    assert [k["name"] for k in kinds] == [KIND] and kinds[0]["placeholders"] == ["question", "choices"]
    made = client.post(f"/api/v1/stages/{sc.stage_id}/prompts", headers=admin, json={"draft_kind": KIND, "drafter": "d", "max_tokens": 8})
    assert made.status_code == 201, made.text
    assert made.json()["version"] == 3 and made.json()["settings"] == {"max_tokens": 8, "temperature": 0.0}
    assert made.json()["template"] == factories.choice_draft_kind().template
    refused = client.post(f"/api/v1/stages/{sc.stage_id}/prompts", headers=admin, json={"draft_kind": "wikido.caption", "drafter": "d"})
    assert refused.status_code == 422 and "does not draft for a generic.choice stage" in refused.json()["detail"]
    listed = client.get(f"/api/v1/stages/{sc.stage_id}/prompts", headers=admin).json()
    assert [(p["version"], p["counts"]["drafted"], p["counts"]["failed"]) for p in listed] == [(1, 48, 4), (2, 52, 0), (3, 0, 0)]
    one = client.get(f"/api/v1/prompts/{sc.prompts[0].id}", headers=admin).json()
    assert one["counts"] == {"items": 52, "drafted": 48, "failed": 4} and one["run"] == {"run_id": None, "jobs": 0, "waiting": 0, "running": 0, "succeeded": 0, "failed": 0, "items": 0,
                                                                                   "done": 0, "active": False, "errors": []}
    bad = client.get(f"/api/v1/stages/{sc.stage_id}/drafts/evaluation?prompts=1;2", headers=admin)
    assert bad.status_code == 422 and "whole numbers" in bad.json()["detail"]


@pytest.mark.committed
def test_the_run_form_queues_draft_jobs_and_shows_their_progress(app, client, settings, storage, tmp_path, monkeypatch):
    with transaction(app.state.sessions) as s:
        sc = two_versions(s, settings, storage, tmp_path, monkeypatch)
        factories.user(s, "boss", "admin")
        admin = factories.bearer(s, "api-admin", "admin")
    login(client, "boss")
    url = f"/stages/{sc.stage_id}/drafts"
    token = csrf_from(client.get(url).text)
    v1 = sc.prompts[0]
    refused = client.post(f"{url}/run", data={"csrf_token": token, "prompt_id": str(v1.id), "scope": "sample", "sample": "many"})
    assert refused.status_code == 422 and re.search(r'name="sample" value="many"[^>]*autofocus', refused.text)

    ran = client.post(f"{url}/run", data={"csrf_token": token, "prompt_id": str(v1.id), "scope": "all", "seed": "0"}, follow_redirects=False)
    assert ran.status_code == 303
    page = client.get(url).text
    assert "Queued 2 draft jobs for 52 items" in page  # in batches of 32
    with transaction(app.state.sessions) as s:
        jobs = s.execute(sa.text("SELECT id, args FROM procrastinate_jobs WHERE task_name = 'vlcurate:draft' ORDER BY id")).all()
    assert [(a["prompt_id"], len(a["item_ids"])) for _, a in jobs] == [(v1.id, 32), (v1.id, 20)]
    row = re.search(rf'<tr id="prompt-{v1.id}".*?</tr>', page, re.S)[0]
    assert 'value="0" max="52"' in row and "2 waiting" in row and 'hx-trigger="every 2s"' in page
    jobs_page = client.get("/admin/jobs").text  # named by their prompt version, project and stage
    assert f"{KIND} v1 · 32 items" in jobs_page and f"{KIND} v1 · 20 items" in jobs_page and f"› {stage_name(app, sc.stage_id)}" in jobs_page

    # The worker finishes the first batch and fails the second: the poll shows it.
    with transaction(app.state.sessions) as s:
        s.execute(sa.text("UPDATE procrastinate_jobs SET status = 'succeeded' WHERE id = :id"), {"id": jobs[0].id})
        s.execute(sa.text("UPDATE procrastinate_jobs SET status = 'doing' WHERE id = :id"), {"id": jobs[1].id})
    poll = client.get(url, headers={"HX-Request": "true", "HX-Target": "runs"}).text
    assert poll.lstrip().startswith('<section id="runs"') and 'value="32" max="52"' in poll and "1 running" in poll
    with transaction(app.state.sessions) as s:
        s.execute(sa.text("UPDATE procrastinate_jobs SET status = 'failed' WHERE id = :id"), {"id": jobs[1].id})
        s.execute(sa.text("INSERT INTO job_runs (job_id, task, status, error) VALUES (:id, 'draft', 'failed', :e)"),
                  {"id": jobs[1].id, "e": "drafter vllm (http://gpu:8000/v1) did not answer"})
    poll = client.get(url, headers={"HX-Request": "true", "HX-Target": "runs"}).text
    assert "every 2s" not in poll and "1 job failed: drafter vllm (http://gpu:8000/v1) did not answer" in poll

    again = client.post(f"/api/v1/prompts/{sc.prompts[1].id}/runs", headers=admin, json={"scope": "sample", "sample": 10, "seed": 4})
    assert again.status_code == 202 and again.json()["items"] == 10 and len(again.json()["job_ids"]) == 1
    status = client.get(f"/api/v1/prompts/{sc.prompts[1].id}", headers=admin, params={"run": again.json()["run_id"]}).json()
    assert status["run"] == {"run_id": again.json()["run_id"], "jobs": 1, "waiting": 1, "running": 0, "succeeded": 0, "failed": 0, "items": 10, "done": 0,
                             "active": True, "errors": []}


def test_every_datasets_kinds_save_their_default_prompt_from_the_page(app, client, tmp_path):
    """For a stage of every workflow a dataset drafts for, the page's new-version form, sent as it is
    prefilled (the kind's default prompt, the first configured drafter), saves version 1."""
    drafters = tmp_path / "drafters.toml"
    drafters.write_text('[drafters.local]\nbackend = "local"\nmodel_dir = "/models/tiny"\n')
    app.state.settings = app.state.settings.model_copy(update={"drafters_file": drafters})
    workflows = sorted({w for k in draft_kinds().values() for w in k.workflows})
    with transaction(app.state.sessions) as s:
        factories.user(s, "boss", "admin")
        stages = {}
        for w in workflows:
            before = get_workflow(w).requires  # a workflow that builds on another comes after it
            _, stage_ids = factories.project(s, [before, w] if before else [w])
            stages[w] = stage_ids[-1]
    login(client, "boss")
    saved = 0
    for workflow, stage_id in stages.items():
        page = client.get(f"/stages/{stage_id}/drafts")
        assert page.status_code == 200, (workflow, page.text[:300])
        for kind, form in re.findall(r'<form method="post" action="/stages/\d+/prompts" class="new-version" data-kind="([^"]+)">(.*?)</form>',
                                     page.text, re.S):
            fields = {n: html.unescape(v) for n, v in re.findall(r'<textarea name="(\w+)"[^>]*>(.*?)</textarea>', form, re.S)}
            fields |= {n: html.unescape(v) for n, v in re.findall(r'<input name="(\w+)" value="([^"]*)"', form)}
            fields["drafter"] = re.search(r'<option value="([^"]+)" selected', form)[1]
            posted = client.post(f"/stages/{stage_id}/prompts", data={**fields, "draft_kind": kind, "csrf_token": csrf_from(page.text)},
                                 follow_redirects=False)
            assert posted.status_code == 303, (kind, posted.text[:500])
            saved += 1
    with transaction(app.state.sessions) as s:
        rows = s.execute(sa.select(Prompt.draft_kind, Prompt.version, Prompt.drafter, Prompt.template)).all()
    assert saved == len(draft_kinds()) == len(rows)
    assert all(version == 1 and drafter == "local" and template == draft_kinds()[kind].template for kind, version, drafter, template in rows)
