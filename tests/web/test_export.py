"""Splits and exports end to end: published layouts, JSONL with provenance, Parquet loaded with
`datasets`, COCO, byte-identical re-exports, a VisArgs round trip, S3, the page, the API and the CLI."""

from __future__ import annotations

import hashlib
import io
import json
import re
from pathlib import Path

import pytest
import sqlalchemy as sa
from PIL import Image

from app.datasets import dataset_of
from app.db import transaction
from app.models import Asset, Item
from app.services.annotation.pipeline import results_by_stage
from app.services.exports import export, splits
from tests.conftest import colorswap_records, csrf_from, login, png_bytes, zip_bytes
from tests.web.test_colorswap_pages import create, submit
from tests.web.test_visargs_pages import PUBLISHED

# Exports run on their own connections and snapshots (the worker's code path): the data is committed.
pytestmark = pytest.mark.committed


def claim_all(client, headers, stage_id):
    while (r := client.post(f"/api/v1/stages/{stage_id}/claim", headers=headers)).status_code == 200:
        yield r.json()


def colorswap_project(client, api) -> int:
    """pair-0 (rule-based, re-captioned), pair-1 (handmade), pair-2 (discarded: none fits)."""
    records, files = colorswap_records(3)
    project_id, filter_id, recaption_id = create(client, api["admin"], records, files)
    choices = {"pair-0": {"choice_1": 2, "choice_2": 0}, "pair-1": {"choice_1": 1, "choice_2": 3}, "pair-2": {"choice_1": None, "choice_2": 1}}
    for c in claim_all(client, api["ann"], filter_id):
        assert submit(client, api["ann"], c["assignment_id"], choices[c["data"]["id"]]).status_code == 200
    for c in claim_all(client, api["ann"], recaption_id):
        assert submit(client, api["ann"], c["assignment_id"], {"caption_1": "A red kitten wears a grey jacket.", "caption_2": "A grey kitten wears a red jacket."}).status_code == 200
    return project_id


def visargs_project(client, api, name="VisArgs", records=None, images=None) -> int:
    records = records or PUBLISHED
    images = images or {f"images/ad_{i}.png": png_bytes((i * 20, 90, 90), size=(160, 120)) for i in (7, 8)}
    stages = [{"workflow": w} for w in ("visargs.premises", "visargs.structure", "visargs.grounding")]
    project = client.post("/api/v1/projects", headers=api["admin"], json={"name": name, "stages": stages}).json()
    r = client.post(f"/api/v1/projects/{project['id']}/items", headers=api["admin"],
                    files={"file": ("annotation.json", json.dumps(records).encode()), "images": ("i.zip", zip_bytes(images))})
    assert r.status_code == 201, r.text
    fields = (("visual_premises",), ("commonsense_premises", "conclusion", "reasoning_steps"), ("b_box",))
    drafts = {"visual_premises": "candidate_premises", "commonsense_premises": "candidate_commonsense", "conclusion": "candidate_conclusion",
              "reasoning_steps": "candidate_steps", "b_box": "candidate_boxes"}
    for stage, names in zip(project["stages"], fields, strict=True):
        for c in claim_all(client, api["ann"], stage["id"]):  # accept every draft as it is
            payload = {f: c["data"][drafts[f]] for f in names}
            assert submit(client, api["ann"], c["assignment_id"], payload).status_code == 200
    return project["id"]


def wikido_project(client, api, n=12) -> int:
    topics = ["food", "paintings", "sports", "music"]
    records = [{"image_id": str(i), "topic": topics[i % 4], "orig_cap": "A stone church.", "caption": "A stone church with a dragon.",
                "image": "a.png" if i % 3 else "https://example.org/remote.jpg"} for i in range(n)]
    project = client.post("/api/v1/projects", headers=api["admin"], json={"name": "WikiDO", "stages": [{"workflow": "wikido.verify"}]}).json()
    client.post(f"/api/v1/projects/{project['id']}/items", headers=api["admin"],
                files={"file": ("w.jsonl", "\n".join(json.dumps(r) for r in records).encode()), "images": ("i.zip", zip_bytes({"a.png": png_bytes()}))})
    for c in claim_all(client, api["ann"], project["stages"][0]["id"]):
        i = int(c["data"]["image_id"])
        payload = {"verdict": "wrong"} if i == 5 else {"verdict": "hallucinated", "caption": "A stone church."} if i % 2 else {"verdict": "correct"}
        assert submit(client, api["ann"], c["assignment_id"], payload).status_code == 200
    return project["id"]


def run(app, project_id, fmt, out: Path, *, version=None, use_splits=True, target=None) -> dict:
    """What the export job does, in this process."""
    with transaction(app.state.sessions) as s:
        row = export.create_export(s, project_id, fmt, settings=app.state.settings, version=version, use_splits=use_splits,
                                   target=target or str(out))
        export_id = row.id
    return export.run_export(app.state.sessions, app.state.storage, app.state.settings, export_id)


def save_splits(app, project_id, config):
    with transaction(app.state.sessions) as s:
        return dict(splits.save_definition(s, project_id, config).counts)


def files_of(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_colorswap_published_layout_and_byte_identical_reexport(client, app, api, tmp_path):
    project_id = colorswap_project(client, api)
    assert save_splits(app, project_id, {"counts": {"train": 1, "test": 1}, "seed": 3}) == {"train": 1, "test": 1}
    manifest = run(app, project_id, "published", tmp_path / "a")
    again = run(app, project_id, "published", tmp_path / "b")
    assert files_of(tmp_path / "a") == files_of(tmp_path / "b") and manifest == again

    records = {}
    for split in ("train", "test"):
        rows = json.loads((tmp_path / "a" / f"{split}.json").read_text())
        assert len(rows) == 1 and set(rows[0]) == {"id", "caption_1", "caption_2", "image_1", "image_2", "image_source", "caption_source"}
        records.update({r["image_1"]: r for r in rows})
    assert {r["caption_1"] for r in records.values()} == {"A red kitten wears a grey jacket.", "a red cat 1 in a grey jacket"}
    with transaction(app.state.sessions) as s:
        item = s.scalar(sa.select(Item).where(Item.external_id == "pair-0"))
        chosen = [item.assets["/candidates/2/image"], item.assets["/candidates/0/image"]]
        keys = dict(s.execute(sa.select(Asset.sha256, Asset.storage_key)).all())
    for n, sha in enumerate(chosen, 1):
        written = (tmp_path / "a" / f"images/img_pair-0_{n}.png").read_bytes()
        assert written[:8] == b"\x89PNG\r\n\x1a\n" and written == app.state.storage.get(keys[sha])
    assert manifest["splits"] == {"train": 1, "test": 1} and manifest["schema_version"] == 1
    assert manifest["split_definition"]["config"]["counts"] == {"train": 1, "test": 1} and manifest["split_definition"]["seed"] == 3
    for path, meta in manifest["files"].items():
        assert hashlib.sha256((tmp_path / "a" / path).read_bytes()).hexdigest() == meta["sha256"]
    assert set(manifest["files"]) == set(files_of(tmp_path / "a")) - {"manifest.json"}
    assert json.loads((tmp_path / "a" / "manifest.json").read_text()) == manifest


def test_wikido_published_jsonl_log_and_held_out_topics(client, app, api, tmp_path):
    project_id = wikido_project(client, api)
    counts = save_splits(app, project_id, {"ratios": {"train": 0.5, "test": 0.5}, "held_out": {"field": "topic", "values": ["food", "paintings"]}})
    assert counts["test_ood"] == 5 and sum(counts.values()) == 11  # item 5 (paintings) was Wrong
    run(app, project_id, "published", tmp_path)
    seen = {}
    for split in counts:
        for line in (tmp_path / f"{split}.jsonl").read_text().splitlines():
            record = json.loads(line)
            seen[record["image_id"]] = (split, record)
            assert (record["topic"] in ("food", "paintings")) == (split == "test_ood")
            assert "id" not in record and record["caption"] == ("A stone church." if int(record["image_id"]) % 2 else "A stone church with a dragon.")
    assert sorted(seen, key=int) == [str(i) for i in range(12) if i != 5]
    log = [json.loads(line) for line in (tmp_path / "verification_log.jsonl").read_text().splitlines()]
    assert [entry["image_id"] for entry in log] == [str(i) for i in range(12)]
    assert log[5]["verdict"] == "wrong" and log[1]["edits"]["kind"] == "deletion"


def test_jsonl_with_provenance(client, app, api, tmp_path):
    project_id = wikido_project(client, api, n=4)
    run(app, project_id, "jsonl", tmp_path, use_splits=False)
    lines = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert [line["id"] for line in lines] == ["0", "1", "2", "3"]
    prov = lines[1]["provenance"]
    assert [(a["annotator"], a["revision"], a["stage"]) for a in prov["annotations"]] == [("ann", 1, "wikido.verify")]
    assert prov["finals"][0]["source"] == "auto" and prov["annotations"][0]["at"] and prov["suggestions"] == []
    assert lines[1]["record"]["caption"] == "A stone church." and lines[1]["results"]["wikido.verify"]["verdict"] == "hallucinated"


def test_visargs_parquet_loads_with_datasets_and_coco_boxes(client, app, api, tmp_path):
    datasets = pytest.importorskip("datasets")
    project_id = visargs_project(client, api)
    save_splits(app, project_id, {"counts": {"train": 1, "test": 1}})
    manifest = run(app, project_id, "parquet", tmp_path / "pq")
    assert run(app, project_id, "parquet", tmp_path / "pq2") == manifest
    assert files_of(tmp_path / "pq") == files_of(tmp_path / "pq2")  # byte-identical
    assert sorted(manifest["files"]) == ["data/test-00000-of-00001.parquet", "data/train-00000-of-00001.parquet"]
    loaded = datasets.load_dataset("parquet", data_files={s: str(tmp_path / "pq" / f"data/{s}-00000-of-00001.parquet") for s in ("train", "test")},
                                   cache_dir=str(tmp_path / "cache"))
    assert isinstance(loaded["train"].features["image"], datasets.Image)
    with transaction(app.state.sessions) as s:
        items = {i.external_id: i for i in s.scalars(sa.select(Item).where(Item.project_id == project_id))}
        keys = dict(s.execute(sa.select(Asset.sha256, Asset.storage_key)).all())
        expected = {k: dataset_of("visargs.grounding").export_record(i.data, results_by_stage(s, i.id)) for k, i in items.items()}
    rows = [r for split in ("train", "test") for r in loaded.with_format(None)[split]]
    assert len(rows) == 2
    for row in rows:
        external = Path(row["url"]).stem
        image = row.pop("image")
        assert row == expected[external]  # every published field, with its type
        assert isinstance(image, Image.Image) and image.size == (160, 120)
    raw = loaded["train"].cast_column("image", datasets.Image(decode=False))[0]["image"]["bytes"]
    assert raw in {app.state.storage.get(keys[i.assets["/image"]]) for i in items.values()}

    run(app, project_id, "coco", tmp_path / "coco")
    for split in ("train", "test"):
        coco = json.loads((tmp_path / "coco" / f"annotations/instances_{split}.json").read_text())
        (image,) = coco["images"]
        record = expected[Path(image["file_name"]).stem]
        assert (image["width"], image["height"]) == (160, 120) and coco["categories"][0]["name"] == "visual premise"
        assert [a["bbox"] for a in coco["annotations"]] == [[b["startX"], b["startY"], b["w"], b["h"]] for b in record["b_box"]]
        assert [a["attributes"]["premise"] for a in coco["annotations"]] == record["visual_premises"]


def test_a_visargs_export_reimported_gives_the_same_records(client, app, api, tmp_path):
    project_id = visargs_project(client, api)
    run(app, project_id, "published", tmp_path / "first", use_splits=False)
    published = json.loads((tmp_path / "first" / "all/annotation.json").read_text())
    assert published == list(PUBLISHED.values())  # an array, one record per image, as released
    images = {p.relative_to(tmp_path / "first" / "all").as_posix(): p.read_bytes() for p in (tmp_path / "first" / "all" / "images").iterdir()}
    again = visargs_project(client, api, name="VisArgs again", records=published, images=images)
    run(app, again, "published", tmp_path / "second", use_splits=False)
    assert (tmp_path / "second" / "all/annotation.json").read_bytes() == (tmp_path / "first" / "all/annotation.json").read_bytes()
    assert files_of(tmp_path / "second" / "all" / "images") == files_of(tmp_path / "first" / "all" / "images")


def test_export_to_s3(client, app, api, tmp_path, s3_client):
    project_id = wikido_project(client, api, n=3)
    settings = app.state.settings.model_copy(update={"s3_endpoint_url": s3_client.endpoint, "s3_region": "us-east-1"})
    with transaction(app.state.sessions) as s:
        export_id = export.create_export(s, project_id, "jsonl", settings=settings, use_splits=False, target="s3://vlc-exports/runs/one").id
    manifest = export.run_export(app.state.sessions, app.state.storage, settings, export_id)
    listed = s3_client.list_objects_v2(Bucket="vlc-exports", Prefix="runs/one/")["Contents"]
    assert sorted(o["Key"] for o in listed) == ["runs/one/all.jsonl", "runs/one/manifest.json"]
    body = s3_client.get_object(Bucket="vlc-exports", Key="runs/one/all.jsonl")["Body"].read()
    assert hashlib.sha256(body).hexdigest() == manifest["files"]["all.jsonl"]["sha256"]


def test_the_export_page_saves_splits_and_downloads_files(client, app, api, tmp_path):
    from app.worker import jobs, runtime

    project_id = colorswap_project(client, api)
    login(client, "ann")
    assert client.get(f"/projects/{project_id}/export").status_code == 403
    client.cookies.clear()
    from tests.conftest import make_user

    make_user(app.state.sessions, "root", "admin")
    login(client, "root")
    page = client.get(f"/projects/{project_id}/export").text
    assert "No split definition yet" in page
    bad = client.post(f"/projects/{project_id}/splits", data={"csrf_token": csrf_from(page), "method": "ratios", "sizes": "train=0.7, test=0.2"})
    assert bad.status_code == 422 and "add up to 0.9" in bad.text and 'value="train=0.7, test=0.2"' in bad.text
    ok = client.post(f"/projects/{project_id}/splits", data={"csrf_token": csrf_from(page), "method": "counts", "sizes": "train=1, test=1", "seed": "0"})
    assert ok.status_code == 200 and "Saved split version 1: train 1, test 1." in ok.text

    queued = client.post(f"/projects/{project_id}/exports", data={"csrf_token": csrf_from(page), "format": "published", "version": "1"}, follow_redirects=False)
    assert queued.status_code == 303
    with transaction(app.state.sessions) as s:
        (row,) = export.exports_of(s, project_id)
        tasks = s.scalars(sa.text("SELECT task_name FROM procrastinate_jobs WHERE task_name <> 'vlcurate:hash_images'")).all()  # not the image hashes the import queued
    assert tasks == ["vlcurate:export"] and row.status == "queued"
    runtime.configure(app.state.settings)
    export.run_export(app.state.sessions, app.state.storage, app.state.settings, row.id)  # what the worker's job runs
    page = client.get(f"/projects/{project_id}/export").text
    assert f'<tr data-export="{row.id}" class="status-done">' in page
    link = re.search(rf'href="(/exports/{row.id}/files/images/[^"]+\.png)"', page).group(1)
    image = client.get(link)
    assert image.status_code == 200 and Image.open(io.BytesIO(image.content)).format == "PNG"
    manifest = client.get(f"/exports/{row.id}/files/manifest.json").json()
    assert hashlib.sha256(image.content).hexdigest() == manifest["files"][link.split("/files/")[1]]["sha256"]
    whole = client.get(f"/exports/{row.id}.zip")
    assert whole.status_code == 200 and whole.headers["content-type"] == "application/zip"
    import zipfile

    with zipfile.ZipFile(io.BytesIO(whole.content)) as archive:
        assert sorted(archive.namelist()) == sorted([*manifest["files"], "manifest.json"])
        for name, meta in manifest["files"].items():
            assert hashlib.sha256(archive.read(name)).hexdigest() == meta["sha256"]
    assert client.get(f"/exports/{row.id}.zip").content == whole.content  # the same bytes every time
    assert client.get(f"/exports/{row.id}/files/../../etc/passwd").status_code == 404
    assert client.get(f"/exports/{row.id}/files/secret.txt").status_code == 404


def test_the_api_queues_exports_and_serves_files(client, app, api, tmp_path):
    project_id = wikido_project(client, api, n=4)
    assert client.post(f"/api/v1/projects/{project_id}/splits", headers=api["ann"], json={"counts": {"train": 2}}).status_code == 403
    r = client.post(f"/api/v1/projects/{project_id}/splits", headers=api["admin"], json={"counts": {"train": 2}, "rest": "test"})
    assert r.status_code == 201 and r.json()["counts"] == {"train": 2, "test": 2}
    bad = client.post(f"/api/v1/projects/{project_id}/exports", headers=api["admin"], json={"format": "coco"})
    assert bad.status_code == 422 and "coco format can't express WikiDO records" in bad.text
    r = client.post(f"/api/v1/projects/{project_id}/exports", headers=api["admin"], json={"format": "published"})
    assert r.status_code == 202 and r.json()["status"] == "queued"
    # The worker's task, with the job context procrastinate passes it.
    from types import SimpleNamespace

    from app.models import JobRun
    from app.worker import jobs, runtime

    runtime.configure(app.state.settings)
    assert jobs.export.func(SimpleNamespace(job=SimpleNamespace(id=901)), export_id=r.json()["id"]) == 4
    with pytest.raises(runtime.JobFailed, match="No export with id 9999"):
        jobs.export.func(SimpleNamespace(job=SimpleNamespace(id=902)), export_id=9999)
    with transaction(app.state.sessions) as s:
        runs = {j.job_id: (j.status, j.error) for j in s.scalars(sa.select(JobRun))}
    assert runs == {901: ("succeeded", None), 902: ("failed", "No export with id 9999.")}
    done = client.get(f"/api/v1/exports/{r.json()['id']}", headers=api["admin"]).json()
    assert done["status"] == "done" and done["manifest"]["splits"] == {"train": 2, "test": 2}
    body = client.get(f"/api/v1/exports/{r.json()['id']}/files/train.jsonl", headers=api["admin"])
    assert body.status_code == 200 and len(body.text.splitlines()) == 2
