"""The draft-bias report over HTTP: the JSON and Parquet routes (reviewers and admins only), the section
on the stage's quality page with its SVG charts (names escaped), and the Python client."""

from __future__ import annotations

import random

import pyarrow.parquet as pq
import pytest

from app.db import transaction
from app.services.quality import bias
from tests import factories
from tests.bias.test_simulation import work
from tests.bias.world import stage
from tests.conftest import PASSWORD, login, make_user
from vlcurate import Client

SETTINGS = {"gold_share": 0.3, "draft_control_share": 0.5, "draft_control_seed": 4, "probe_share": 1.0}


def answered(s, settings, storage, folder, name: str = "anchor") -> int:
    random.seed(1)
    stage_id, truths, _ = stage(s, settings, storage, folder, n=30, n_gold=6, overlap=1, model="vlm<script>", **SETTINGS)
    work(s, stage_id, factories.user(s, name), "anchored", truths, seed=1)
    return stage_id


def test_the_routes_answer_reviewers_and_refuse_annotators(app, client, settings, storage, tmp_path):
    with transaction(app.state.sessions) as s:
        stage_id = answered(s, settings, storage, tmp_path)
        headers = {role: factories.bearer(s, f"b-{role}", role) for role in ("annotator", "reviewer", "admin")}
        expected = bias.stage_report(s, stage_id, samples=200, seed=5)
    for route in ("bias", "bias.parquet"):
        assert client.get(f"/api/v1/stages/{stage_id}/{route}", headers=headers["annotator"]).status_code == 403
        assert client.get(f"/api/v1/stages/{stage_id}/{route}").status_code == 401
        assert client.get(f"/api/v1/stages/999999/{route}", headers=headers["admin"]).status_code == 404
    got = client.get(f"/api/v1/stages/{stage_id}/bias", params={"samples": 200, "seed": 5}, headers=headers["reviewer"])
    assert got.status_code == 200 and got.json() == expected
    assert got.json()["models"][0]["model"] == "voldoger.check · vlm<script> voldoger.check v1"
    assert client.get(f"/api/v1/stages/{stage_id}/bias", params={"samples": -1}, headers=headers["admin"]).status_code == 422


def test_the_quality_page_shows_the_section_with_its_charts_escaped(app, client, settings, storage, tmp_path):
    with transaction(app.state.sessions) as s:
        stage_id = answered(s, settings, storage, tmp_path)
    make_user(app.state.sessions, "rev", "reviewer", PASSWORD)
    login(client, "rev", PASSWORD)
    page = client.get(f"/stages/{stage_id}/agreement")
    assert page.status_code == 200
    html = page.text
    assert 'id="bias"' in html and 'data-bias-chart="annotators"' in html and 'data-bias-chart="shift"' in html
    assert "anchor · probes caught" in html
    assert "voldoger.check · vlm&lt;script&gt; voldoger.check v1" in html and "vlm<script>" not in html
    assert "Control arm: 50% of assignments see no draft (seed 4)" in html


def test_a_stage_that_measures_nothing_has_no_section(app, client, settings, storage, tmp_path):
    with transaction(app.state.sessions) as s:
        _, (stage_id,) = factories.project(s, "voldoger.verify")
    make_user(app.state.sessions, "rev", "reviewer", PASSWORD)
    login(client, "rev", PASSWORD)
    assert 'id="bias"' not in client.get(f"/stages/{stage_id}/agreement").text


@pytest.mark.committed
def test_the_client_reads_the_report_and_its_parquet(live_server, committed, settings, storage, tmp_path):
    with transaction(committed) as s:
        stage_id = answered(s, settings, storage, tmp_path)
        token = factories.token(s, factories.user(s, "b-reviewer", "reviewer"))
        expected = bias.stage_report(s, stage_id, samples=100, seed=2)
    found = Client(live_server, token).draft_bias(stage_id, samples=100, seed=2, parquet=tmp_path / "bias.parquet")
    assert found == expected
    rows = pq.read_table(tmp_path / "bias.parquet").to_pylist()
    assert rows == list(bias.figure_rows(expected))
    assert {"scope": "annotator", "group": "anchor", "figure": "probe_catch", **expected["annotators"][0]["probe_catch"]} in rows
