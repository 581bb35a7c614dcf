"""Soft-matched Jaccard of visual-premise sets: paraphrases count as the same premise (MiniLM, offline)."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest

from app.agreement import sets
from app.db import transaction
from app.services.review import agreement
from app.worker import backends
from tests.conftest import make_token, make_user, png_bytes, zip_bytes

GIVEN = {  # item -> each annotator's visual premises
    "ad_0": (["A melting ice cream cone", "The sun in the corner"], ["An ice cream cone that is melting", "A sleeping dog"]),
    "ad_1": (["A wilted plant"], ["A wilted plant"]),
    "ad_2": (["Smoke rising from a factory", "A grey sky"], ["A factory chimney releasing smoke", "The sky is grey", "A bird"]),
}


def test_soft_jaccard_counts_paraphrased_premises_as_the_same(client, app):
    sessions = app.state.sessions
    admin = {"Authorization": f"Bearer {make_token(sessions, make_user(sessions, 'boss', 'admin'))}"}
    anns = [{"Authorization": f"Bearer {make_token(sessions, make_user(sessions, n))}"} for n in ("a1", "a2")]
    project = client.post("/api/v1/projects", headers=admin, json={"name": "Soft", "stages": [{"workflow": "visargs.premises", "overlap": 2}]}).json()
    records = {k: {"url": f"{k}.png", "visual_premises": [], "commonsense_premises": [], "conclusion": "x", "reasoning_steps": [], "b_box": []} for k in GIVEN}
    client.post(f"/api/v1/projects/{project['id']}/items", headers=admin,
                files={"file": ("annotation.json", json.dumps(records).encode()), "images": ("i.zip", zip_bytes({f"{k}.png": png_bytes() for k in GIVEN}))})
    stage_id = project["stages"][0]["id"]
    for k, headers in enumerate(anns):
        while (claim := client.post(f"/api/v1/stages/{stage_id}/claim", headers=headers)).status_code == 200:
            c = claim.json()
            body = {"payload": {"visual_premises": GIVEN[c["data"]["id"]][k]}, "idempotency_key": uuid.uuid4().hex}
            assert client.post(f"/api/v1/assignments/{c['assignment_id']}/submit", headers=headers, json=body).status_code == 200

    with transaction(sessions) as s:
        plain = agreement.stage_report(s, stage_id, samples=100)
        soft = agreement.stage_report(s, stage_id, samples=100, embed=backends.soft_match_embedder("visargs.premises"))
    name = "mean soft Jaccard (similarity >= 0.8)"
    assert name not in plain["facets"]["visual premises"]["metrics"] and "worker" in plain["facets"]["visual premises"]["notes"][0]

    model = backends.text_similarity()
    reference = [sets.soft_jaccard(a, b, model.similarity, 0.8) for a, b in GIVEN.values()]
    exact = [sets.jaccard(a, b) for a, b in GIVEN.values()]
    figures = soft["facets"]["visual premises"]
    assert figures["metrics"][name]["estimate"] == pytest.approx(np.mean(reference), abs=1e-6)
    assert figures["metrics"]["mean Jaccard"]["estimate"] == pytest.approx(np.mean(exact))
    assert reference[0] == pytest.approx(1 / 3) and reference[1] == 1.0  # the cone matches, the sun and the dog do not
    assert np.mean(reference) > np.mean(exact)
    assert figures["pairwise"]["a1 / a2"][name] == pytest.approx(np.mean(reference), abs=1e-6)
