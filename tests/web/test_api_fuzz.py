"""API fuzzing: schemathesis generates requests from the live server's /openapi.json, valid and invalid
ones, as an admin and as an annotator; no answer may be a server error or break the schema."""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given
from hypothesis.errors import Unsatisfiable
from hypothesis import settings as hypothesis_settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from app.db import transaction
from tests import factories

# Bounded so the suite stays fast: examples per operation, per generation mode and role.
EXAMPLES = int(os.environ.get("VLCURATE_FUZZ_EXAMPLES", "10"))
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]


def _fresh_headers(sessions, tag: str) -> dict[str, dict[str, str]]:
    """New tokens for both roles: a generated DELETE /tokens/{id} may have revoked the previous ones."""
    with transaction(sessions) as s:
        return {role: factories.bearer(s, f"fuzz-{role}-{tag}", role) for role in ("admin", "annotator")}


@pytest.mark.committed
def test_schemathesis_finds_no_server_error_as_admin_or_annotator(live_process, committed, settings, storage, tmp_path):
    with transaction(committed) as s:
        project_id, stage_ids = factories.project(s, overlap=2)
        factories.choice_items(s, settings, storage, project_id, 4, tmp_path)
        somebody = factories.user(s, "fuzz-somebody")
        factories.annotation(s, stage_ids[0], somebody, {"choice": "a"})
    # Ids that name something, so that generated requests also reach past the lookups.
    known = {"project_id": project_id, "stage_id": stage_ids[0], "user_id": somebody}
    schema = schemathesis.openapi.from_url(live_process + "/openapi.json")
    found: dict[tuple[str, str], str] = {}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 20
    for n, operation in enumerate(operations):
        headers = _fresh_headers(committed, str(n))
        for role in ("admin", "annotator"):
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

                @given(case=operation.as_strategy(generation_mode=mode))
                @hypothesis_settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
                                     suppress_health_check=list(HealthCheck))
                def run(case):
                    for aimed in (False, True):
                        if aimed:  # the same request on things that exist
                            if not set(case.path_parameters or {}) & known.keys():
                                return
                            case.path_parameters = {**case.path_parameters, **{k: v for k, v in known.items() if k in case.path_parameters}}
                        response = case.call(headers=headers[role], timeout=30)
                        if response.status_code == 400 and response.text == "Invalid HTTP request received.":
                            continue  # a header the server's HTTP parser refuses (uvicorn's answer): the app never saw it
                        try:
                            case.validate_response(response, checks=CHECKS, headers=headers[role])
                        except (Exception, BaseExceptionGroup) as exc:  # a failed check: keep the first per operation and role, go on
                            found.setdefault((role, operation.label), f"{response.status_code}: {str(exc)[:600]}")

                try:
                    run()
                except Unsatisfiable:  # nothing to make invalid (no parameters, no body)
                    assert mode is GenerationMode.NEGATIVE
    assert not found, "\n\n".join(f"{role} {label} -> {why}" for (role, label), why in found.items())
