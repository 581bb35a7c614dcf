"""`vlcurate bias`: the draft-bias report on the command line, from the database and through a server's
API (`--server`, and the client distribution's `vlcurate-remote bias`); each answers the same figures."""

from __future__ import annotations

import json
import random

import pytest

from app.db import transaction
from app.models import Project, Stage
from tests import factories
from tests.bias.test_simulation import work
from tests.bias.world import stage
from tests.test_cli import env, invoke  # noqa: F401 - the fixture, with the command line's environment
from vlcurate.cli import main


@pytest.mark.committed
def test_the_bias_command_prints_each_annotators_figures_locally_and_through_the_api(env, settings, storage, tmp_path,  # noqa: F811
                                                                                    live_server, capsys):
    random.seed(5)
    with transaction(env) as s:
        stage_id, truths, _ = stage(s, settings, storage, tmp_path, n=60, n_gold=20, overlap=2, gold_share=0.4,
                                    draft_control_share=0.5, draft_control_seed=11, probe_share=1.0)
        name = s.get_one(Project, s.get_one(Stage, stage_id).project_id).name
        anchored, careful = factories.user(s, "anchored"), factories.user(s, "careful")
        work(s, stage_id, anchored, "anchored", truths, seed=1)
        work(s, stage_id, careful, "independent", truths, seed=2)
        token = factories.token(s, factories.user(s, "bias-reviewer", "reviewer"))
        annotator_token = factories.token(s, anchored)

    r = invoke("bias", name, "--json", "--samples", "200")
    assert r.exit_code == 0, r.output
    (report,) = json.loads(r.output)
    people = {a["annotator"]: a for a in report["annotators"]}
    assert people["anchored"]["probe_catch"]["estimate"] < 0.5 <= people["careful"]["probe_catch"]["estimate"] == 1.0
    assert report["control_share"] == 0.5 and report["arm_seed"] == 11

    r = invoke("bias", name, "--stage", str(stage_id), "--samples", "200")
    assert r.exit_code == 0, r.output
    assert "control share 0.5 (seed 11), probe share 1" in r.output
    careful_block = r.output.split("annotator careful:\n", 1)[1]
    assert careful_block.split("\n", 1)[0].startswith("  accepted (shown): ")
    assert "  probe catch: 1.00 [1.00, 1.00] n=" in careful_block
    assert "model voldoger.check · tiny-vlm voldoger.check v1:" in r.output and "label shift p: " in r.output
    assert invoke("bias", name, "--stage", "nope").exit_code == 1

    # Through the API: the same report (same bootstrap seed, same figures), as a reviewer may read it.
    remote = invoke("bias", name, "--json", "--samples", "200", "--server", live_server, "--token", token)
    assert remote.exit_code == 0, remote.output
    assert json.loads(remote.output) == [report]
    assert main(["--server", live_server, "--token", token, "bias", name, "--stage", str(stage_id), "--samples", "200"]) == 0
    assert capsys.readouterr().out.strip() == r.output.strip()
    refused = invoke("bias", name, "--server", live_server, "--token", annotator_token)  # annotators never see it
    assert refused.exit_code == 1 and "reviewer" in refused.output.lower()
