"""The Python client against a live server: WikiDO records with images pushed from a `datasets.Dataset`,
an outside model's suggestions pushed, annotations through the API, and the finals pulled back as a
Dataset equal to the published export."""

from __future__ import annotations

import io
import json

import datasets
import pytest
import sqlalchemy as sa
from PIL import Image as PILImage

from app.db import transaction
from app.exporters import write_export
from app.models import Asset, Item, Suggestion
from tests import factories
from vlcurate import AsyncClient, Client, Forbidden, Invalid, NotFound, Unauthorized


def png(i: int) -> bytes:
    buf = io.BytesIO()
    PILImage.new("RGB", (8 + i % 5, 6), (i % 256, (7 * i) % 256, 90)).save(buf, "PNG")
    return buf.getvalue()


def wikido_dataset(n: int) -> datasets.Dataset:
    """n records shaped like the WikiDO release, images inline as an Image column."""
    rows = {
        "image_id": [f"wd-{i:04d}" for i in range(n)],
        "caption": [f"A red tram number {i} crosses the old stone bridge at dusk." for i in range(n)],
        "orig_cap": [f"Tram {i} on the bridge." for i in range(n)],
        "image": [{"bytes": png(i), "path": f"topical_data/img_{i:04d}.png"} for i in range(n)],
        "page_title": [f"Page {i}" for i in range(n)],
        "topic": ["food" if i % 2 else "transport" for i in range(n)],
    }
    return datasets.Dataset.from_dict(rows, features=datasets.Features({
        "image_id": datasets.Value("string"), "caption": datasets.Value("string"), "orig_cap": datasets.Value("string"),
        "image": datasets.Image(), "page_title": datasets.Value("string"), "topic": datasets.Value("string"),
    }))


def answer(i: int) -> dict:
    if i % 7 == 3:
        return {"verdict": "wrong"}
    if i % 2:
        return {"verdict": "hallucinated", "caption": f"A tram number {i} crosses the bridge."}
    return {"verdict": "correct"}


@pytest.fixture
def people(committed):
    with transaction(committed) as s:
        pid, stages = factories.project(s, "wikido.verify", name="wikido-client")
        tokens = {role: factories.token(s, factories.user(s, f"client-{role}", role)) for role in ("admin", "reviewer", "annotator")}
    return pid, stages[0], tokens


@pytest.mark.committed
def test_push_annotate_pull_round_trip(live_server, committed, storage, tmp_path, people):
    project_id, stage_id, tokens = people
    ds = wikido_dataset(200)
    with Client(live_server, tokens["admin"]) as client:
        pushed = client.push_records("wikido-client", ds, batch_size=64, progress=False)
        assert (pushed.created, pushed.images, pushed.skipped) == (200, 200, 0)

        rows = [{"external_id": f"wd-{i:04d}", "kind": "wikido.unsupported", "payload": {"spans": [[0, 2]]}, "score": 0.5}
                for i in range(200)]
        rows += [{"external_id": f"wd-{i:04d}", "kind": "wikido.itm", "payload": {"score": 0.25}} for i in range(200)]
        first = client.push_suggestions(stage_id, "outside-model", "v1", rows)
        assert (first.stored, first.unchanged) == (400, 0)

        with Client(live_server, tokens["annotator"]) as annotator:
            done = []
            for _ in range(20):
                claimed = annotator.claim(stage_id)
                assert claimed.suggestions, "the pushed suggestions reach the screen"
                i = int(claimed.data["image_id"][3:])
                assert annotator.submit(claimed.assignment_id, answer(i)).replayed is False
                done.append(i)

        with committed() as s:
            before = (s.scalar(sa.select(sa.func.count()).select_from(Item)),
                      s.execute(sa.select(Suggestion.id, Suggestion.created_at, Suggestion.payload).order_by(Suggestion.id)).all())

        # The same batch again changes nothing: no item, image or suggestion is added or rewritten.
        again = client.push_records(project_id, ds, batch_size=64, progress=False)
        assert (again.created, again.skipped) == (0, 200)
        second = client.push_suggestions(stage_id, "outside-model", "v1", rows)
        assert (second.stored, second.unchanged) == (0, 400)
        with committed() as s:
            after = (s.scalar(sa.select(sa.func.count()).select_from(Item)),
                     s.execute(sa.select(Suggestion.id, Suggestion.created_at, Suggestion.payload).order_by(Suggestion.id)).all())
        assert after == before

        pulled = client.finals(project_id, cache_dir=str(tmp_path / "hf"))

    with transaction(committed) as s:
        write_export(s, project_id, "published", tmp_path / "export", storage)
        published = [json.loads(line) for line in (tmp_path / "export" / "all.jsonl").read_text().splitlines()]
        stored = {sha: storage.get(key) for sha, key in s.execute(sa.select(Asset.sha256, Asset.storage_key))}
        asset_of = dict(s.execute(sa.select(Item.external_id, Item.assets["/image"].astext)).all())

    kept = sorted(f"wd-{i:04d}" for i in done if answer(i)["verdict"] != "wrong")
    assert sorted(r["image_id"] for r in published) == kept
    assert pulled.num_rows == len(published)
    assert isinstance(pulled.features["image"], datasets.Image)
    raw = pulled.cast_column("image", datasets.Image(decode=False))
    for row, record in zip(raw, published, strict=True):
        image = row.pop("image")
        assert image["path"] == record["image"]
        assert image["bytes"] == stored[asset_of[record["image_id"]]]
        assert {**row, "image": record["image"]} == record
    # The corrected captions are in, as the export has them.
    corrected = {r["image_id"]: r["caption"] for r in published}
    assert any(c.startswith("A tram number") for c in corrected.values())


@pytest.mark.committed
def test_items_review_and_typed_errors(live_server, committed, tmp_path):
    with transaction(committed) as s:
        pid, stages = factories.project(s, "wikido.verify", name="wikido-review", overlap=2)
        admin = factories.token(s, factories.user(s, "rv-admin", "admin"))
        reviewer = factories.token(s, factories.user(s, "rv-reviewer", "reviewer"))
        annotators = [factories.token(s, factories.user(s, f"rv-ann{k}")) for k in range(2)]
    stage_id = stages[0]
    with Client(live_server, admin) as client:
        client.push_records(pid, wikido_dataset(5), progress=False)
        # Two annotators disagree on every item: all five wait for review.
        for k, verdict in enumerate(("correct", "wrong")):
            with Client(live_server, annotators[k]) as ann:
                while (claimed := ann.claim(stage_id)) is not None:
                    ann.submit(claimed.assignment_id, {"verdict": verdict})
        assert [r.status for r in client.items(pid, page_size=2)] == ["review"] * 5
        assert [r.external_id for r in client.items(pid, text="wd-0003")] == ["wd-0003"]

        with pytest.raises(Invalid) as refused:
            client.push_suggestions(stage_id, "m", "1", [{"external_id": "nope", "kind": "wikido.itm", "payload": {}},
                                                        {"external_id": "wd-0001", "kind": "colour", "payload": {}}])
        assert refused.value.message == "Nothing was stored."
        assert any("'nope'" in e for e in refused.value.errors) and any("'colour'" in e for e in refused.value.errors)
        with pytest.raises(NotFound):
            client.item(10**12)

    with Client(live_server, reviewer) as rv:
        queue = rv.review_queue(stage_id)
        assert len(queue) == 5
        first = rv.item(queue[0].item_id)
        assert len([e for e in first.history if e.what.startswith("annotation")]) == 2
        accepted = next(a for a in first.annotations if a.payload["verdict"] == "correct")
        assert rv.resolve(stage_id, queue[0].item_id, accept=accepted.annotation_id).status == "done"
        assert rv.resolve(stage_id, queue[1].item_id, payload={"verdict": "hallucinated", "caption": "A tram."}).status == "done"
        assert rv.send_back(stage_id, queue[2].item_id, "Look again at the bridge.").status == "active"
        assert rv.take_back(stage_id, queue[2].item_id).status == "review"
        assert rv.send_back(stage_id, queue[2].item_id, "Look again, please.").status == "active"
        with pytest.raises(Invalid):
            rv.resolve(stage_id, queue[3].item_id, payload={"verdict": "maybe"})
        with pytest.raises(Forbidden):
            rv.push_records(pid, wikido_dataset(1), progress=False)
        assert len(rv.review_queue(stage_id)) == 2

    with pytest.raises(Unauthorized):
        Client(live_server, "not-a-token").projects()

    async def pull():
        async with AsyncClient(live_server, admin) as aclient:
            names = [p.name for p in await aclient.projects()]
            rows = [r async for r in aclient.items(pid, status="done")]
            ds = await aclient.finals(pid, cache_dir=str(tmp_path / "hf"))
            return names, rows, ds

    import asyncio

    names, rows, ds = asyncio.run(pull())
    assert names == ["wikido-review"] and len(rows) == 2
    assert sorted(ds["image_id"]) == sorted(r.external_id for r in rows)
