"""Stage agreement end to end: three annotators, 30 WikiDO items through the API, planted disagreements."""

from __future__ import annotations

import json
import re
import uuid

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from sqlalchemy import text as sa_text
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from app.db import transaction
from app.worker import jobs, runtime
from tests.conftest import csrf_from, login, make_token, make_user, png_bytes, zip_bytes

# The worker's job computes the stored report on its own connection: the data is committed.
pytestmark = pytest.mark.committed

CAPTION = "A stone church in Paris, built in 1850, with a golden dragon on the roof."


def verdict(item: int, rater: int) -> str:
    """Everyone agrees on most items; rater 2 differs on every fifth, rater 1 on every seventh."""
    base = ["correct", "hallucinated", "wrong"][item % 3]
    if rater == 2 and item % 5 == 0:
        return "wrong" if base != "wrong" else "correct"
    if rater == 1 and item % 7 == 0:
        return "hallucinated" if base != "hallucinated" else "correct"
    return base


def payload(item: int, rater: int) -> dict:
    v = verdict(item, rater)
    if v != "hallucinated":
        return {"verdict": v}
    # Raters strike "with a golden dragon on the roof" or, for rater 2, only "golden dragon".
    corrected = "A stone church in Paris, built in 1850." if rater != 2 else "A stone church in Paris, built in 1850, with a on the roof."
    return {"verdict": "hallucinated", "caption": corrected}


def annotate_thirty(http, sessions) -> tuple[int, list[dict]]:
    """Three annotators r0-r2 verify 30 WikiDO items through the HTTP API (a TestClient or an
    httpx client on a live server), with the planted disagreements; returns the stage id and the
    raters' auth headers."""
    admin = {"Authorization": f"Bearer {make_token(sessions, make_user(sessions, 'boss', 'admin'))}"}
    raters = [{"Authorization": f"Bearer {make_token(sessions, make_user(sessions, f'r{k}'))}"} for k in range(3)]
    project = http.post("/api/v1/projects", headers=admin, json={"name": "WikiDO", "stages": [{"workflow": "wikido.verify", "overlap": 3}]}).json()
    stage_id = project["stages"][0]["id"]
    records = [{"image_id": str(i), "orig_cap": "A stone church in Paris.", "caption": CAPTION, "image": "a.png"} for i in range(30)]
    r = http.post(f"/api/v1/projects/{project['id']}/items", headers=admin,
                  files={"file": ("v.jsonl", "\n".join(json.dumps(x) for x in records).encode()), "images": ("i.zip", zip_bytes({"a.png": png_bytes()}))})
    assert r.status_code == 201, r.text
    for k, headers in enumerate(raters):
        while (claim := http.post(f"/api/v1/stages/{stage_id}/claim", headers=headers)).status_code == 200:
            c = claim.json()
            body = {"payload": payload(int(c["data"]["image_id"]), k), "idempotency_key": uuid.uuid4().hex}
            assert http.post(f"/api/v1/assignments/{c['assignment_id']}/submit", headers=headers, json=body).status_code == 200
    return stage_id, raters


def test_wikido_agreement_equals_reference_computations(client, app):
    stage_id, raters = annotate_thirty(client, app.state.sessions)

    assert client.get(f"/api/v1/stages/{stage_id}/agreement", headers=raters[0]).status_code == 403  # annotators may not
    reviewer = {"Authorization": f"Bearer {make_token(app.state.sessions, make_user(app.state.sessions, 'rev', 'reviewer'))}"}
    report = client.get(f"/api/v1/stages/{stage_id}/agreement?samples=200&seed=3", headers=reviewer).json()
    assert report["items"] == 30 and report["annotators"] == ["r0", "r1", "r2"]

    labels = {"correct": 0, "hallucinated": 1, "wrong": 2}
    matrix = np.array([[labels[verdict(i, k)] for k in range(3)] for i in range(30)])
    figures = report["facets"]["verdict"]["metrics"]
    assert figures["Krippendorff's alpha"]["estimate"] == pytest.approx(krippendorff.alpha(reliability_data=matrix.T.astype(float), level_of_measurement="nominal"))
    assert figures["Fleiss' kappa"]["estimate"] == pytest.approx(fleiss_kappa(aggregate_raters(matrix)[0]))
    pairs = report["facets"]["verdict"]["pairwise"]
    assert pairs["r0 / r2"]["Cohen's kappa"] == pytest.approx(cohen_kappa_score(matrix[:, 0], matrix[:, 2]))
    low, est, high = (figures["Krippendorff's alpha"][k] for k in ("low", "estimate", "high"))
    assert low <= est <= high and high - low > 0
    assert sum(map(sum, report["facets"]["verdict"]["confusion"])) == 30 * 6

    # Deleted words: raters 0 and 1 strike the same 8 tokens; rater 2 strikes 2 of them.
    deleted = report["facets"]["deleted words"]
    both_full = [i for i in range(30) if verdict(i, 0) == verdict(i, 1) == "hallucinated"]
    assert deleted["pairwise"]["r0 / r1"] == {"items": len(both_full), "mean Jaccard": pytest.approx(1.0)}
    assert deleted["pairwise"]["r0 / r2"]["mean Jaccard"] == pytest.approx(2 / 8)
    # The same seed gives the same intervals.
    again = client.get(f"/api/v1/stages/{stage_id}/agreement?samples=200&seed=3", headers=reviewer).json()
    assert again == report

    # The dashboard: a reviewer queues the worker job; the stored report is what the page shows.
    login(client, "rev")
    empty = client.get(f"/stages/{stage_id}/agreement").text
    assert "No agreement report yet" in empty
    posted = client.post(f"/stages/{stage_id}/agreement", data={"csrf_token": csrf_from(empty)}, follow_redirects=False)
    assert posted.status_code == 303 and posted.headers["location"] == f"/stages/{stage_id}/agreement"
    queued = client.get(posted.headers["location"])
    assert queued.status_code == 200 and "queued" in queued.text and 'hx-trigger="every 3s"' in queued.text
    reloaded = client.get(f"/stages/{stage_id}/agreement").text  # reloading queues nothing and says it once
    assert "queued" not in reloaded and 'hx-trigger="every 3s"' not in reloaded
    with transaction(app.state.sessions) as s:
        tasks = s.scalars(sa_text("SELECT task_name FROM procrastinate_jobs WHERE task_name <> 'vlcurate:hash_images'")).all()  # not the image hashes the import queued
    assert tasks == ["vlcurate:agreement"]
    runtime.configure(app.state.settings)
    jobs.compute_agreement(stage_id, samples=200, seed=3)  # what the worker's job runs
    page = client.get(f"/stages/{stage_id}/agreement").text
    alpha = report["facets"]["verdict"]["metrics"]["Krippendorff's alpha"]["estimate"]
    assert f'<td class="estimate">{alpha:.3f}</td>' in page
    assert page.count("<rect ") == 9 * 2  # a 3 x 3 heatmap for each of the two facets
    assert page.count("data-diagonal") == 3 * 2 and page.count("data-legend") == 2  # the diagonal is kept off the scale
    kappa_02 = report["facets"]["verdict"]["pairwise"]["r0 / r2"]["Cohen's kappa"]
    assert f'data-value="{kappa_02:.3f}"' in page
    assert re.search(r'<tr data-annotator="r2"><td>r2</td><td>30</td>', page)
    # The API submits above sent no seconds_spent: the page says so instead of leaving a blank.
    assert re.search(r'<tr data-annotator="r2"><td>r2</td><td>30</td>\s*<td><span class="muted"[^>]*>not measured</span></td>', page)
