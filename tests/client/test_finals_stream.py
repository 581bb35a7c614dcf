"""The finals stream (`GET /api/v1/projects/{id}/finals`, read as text in SQL) gives, line for line,
what the published export's rows make of each finished item: ColorSwap, VisArgs and WikiDO projects
with finals, records kept as they came, stored images, and one split of a split definition."""

from __future__ import annotations

import json

import pytest

from app.db import transaction
from app.exporters import project_dataset
from app.exporters.rows import ALL, split_rows
from app.services.exports import splits
from tests import factories
from tests.web.test_export import colorswap_project, save_splits, visargs_project, wikido_project

pytestmark = pytest.mark.committed


@pytest.fixture
def api(client, app):
    with transaction(app.state.sessions) as s:
        return {"admin": factories.bearer(s, "boss", "admin"), "ann": factories.bearer(s, "ann")}


def expected(app, project_id: int, split: str | None = None) -> list[dict]:
    with transaction(app.state.sessions) as s:
        dataset = project_dataset(s, project_id)
        definition = splits.get_definition(s, project_id) if split else None
        return [{"external_id": r.external_id, "item_id": r.item_id, "split": r.split,
                 "record": dataset.export_record(r.data, r.results, r.source), "images": r.assets}
                for batch in split_rows(s, project_id, definition, split or ALL) for r in batch]


def streamed(client, api, project_id: int, split: str | None = None) -> list[dict]:
    answer = client.get(f"/api/v1/projects/{project_id}/finals", headers=api["admin"], params={"split": split} if split else {})
    assert answer.status_code == 200, answer.text
    return [json.loads(line) for line in answer.text.splitlines()]


def test_the_finals_stream_is_the_exporters_records(client, app, api):
    projects = [colorswap_project(client, api), visargs_project(client, api), wikido_project(client, api)]
    for project_id in projects:
        lines = streamed(client, api, project_id)
        assert lines and lines == expected(app, project_id)
    assert any(line["images"] for line in lines)  # WikiDO: stored images by pointer
    save_splits(app, projects[2], {"held_out": {"field": "topic", "values": ["food"], "split": "food"}, "ratios": {"rest": 1.0}})
    food = streamed(client, api, projects[2], "food")
    assert food and food == expected(app, projects[2], "food") and {f["split"] for f in food} == {"food"}
