"""Released records go in and come out as released: import a release-shaped file, accept every
answer unchanged through the HTTP API, export `published`, and compare the files byte for byte.

The files are written the way each release writes them (see the datasets' `release_style`) from
records shaped like the real ones: the repository README records of ColorSwap and VisArgs, and
WikiDO records as its code repository's train_5k.json has them (string image ids, absolute image
paths, text escaped twice upstream), plus what the issue lists: key orders other than the
schema's, absent optional keys, integer ids, leading and trailing spaces, unicode and markup.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from app.db import transaction
from app.services.exports import export
from tests.conftest import png_bytes, zip_bytes

pytestmark = pytest.mark.committed  # the export reads in its own snapshot transaction


def jpeg_bytes(colour=(20, 120, 200), size=(48, 32)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "JPEG")
    return out.getvalue()


def run(client, app, api, tmp_path, dataset_tasks: list[str], filename: str, body: bytes, images: dict[str, bytes], accept) -> Path:
    """Create the project, import the file with its images zip, accept every item in every stage
    through the API, and export `published` without splits; returns the export folder."""
    admin, ann = api["admin"], api["ann"]
    created = client.post("/api/v1/projects", headers=admin, json={"name": f"rt-{filename}", "stages": [{"workflow": w} for w in dataset_tasks]})
    assert created.status_code == 201, created.text
    project = created.json()
    r = client.post(f"/api/v1/projects/{project['id']}/items", headers=admin,
                    files={"file": (filename, body), "images": ("images.zip", zip_bytes(images))})
    assert r.status_code == 201, r.text
    for n, stage in enumerate(project["stages"]):
        while (claim := client.post(f"/api/v1/stages/{stage['id']}/claim", headers=ann)).status_code == 200:
            item = claim.json()
            payload = accept(stage["workflow"], item)
            done = client.post(f"/api/v1/assignments/{item['assignment_id']}/submit", headers=ann,
                               json={"payload": payload, "idempotency_key": f"{n}-{item['assignment_id']}"})
            assert done.status_code == 200, done.text
        assert claim.status_code == 204
    out = export_as(app, project["id"], "published", tmp_path / "out")
    assert json.loads((out / "manifest.json").read_text())["splits"]["all"] == r.json()["created"]
    return out


def export_as(app, project_id: int, fmt: str, folder: Path) -> Path:
    with transaction(app.state.sessions) as s:
        run_id = export.create_export(s, project_id, fmt, settings=app.state.settings, use_splits=False, target=str(folder)).id
    export.run_export(app.state.sessions, app.state.storage, app.state.settings, run_id)
    return folder


def project_named(app, name: str) -> int:
    from app.services.projects import projects

    with transaction(app.state.sessions) as s:
        return projects.find_project(s, name).id


# -- ColorSwap -------------------------------------------------------------------------------

COLORSWAP = [
    {  # the repository README's record, verbatim
        "id": 0,
        "caption_1": "someone holding a yellow umbrella wearing a white dress",
        "caption_2": "someone holding a white umbrella wearing a yellow dress",
        "image_1": "images/img_0_1.png",
        "image_2": "images/img_0_2.png",
        "image_source": "midjourney",
        "caption_source": "human",
    },
    # The public test files' shape: no sources. An object swap, and trailing spaces kept.
    {"id": 67, "caption_1": "a black penguin with a white bear", "caption_2": "a black bear with a white penguin",
     "image_1": "images/img_67_1.png", "image_2": "images/img_67_2.png"},
    {"id": 537, "caption_1": "A lady in blue dress with white vase ", "caption_2": "A lady in white dress with blue vase ",
     "image_1": "images/img_537_1.png", "image_2": "images/img_537_2.png"},
    # Another key order, unicode and markup.
    {"caption_2": "a fuchsia <b>kite</b> above a sage “field”", "caption_1": "a sage <b>kite</b> above a fuchsia “field”",
     "id": 1001, "image_2": "images/img_1001_2.png", "image_1": "images/img_1001_1.png", "caption_source": "human"},
]


def colorswap_accept(workflow, item):
    assert workflow == "colorswap.filter", "no record of a human source is routed to re-captioning"
    return {"choice_1": 0, "choice_2": 1}


def test_colorswap_release_round_trip(client, app, api, tmp_path):
    body = json.dumps(COLORSWAP, indent=4).encode()
    images = {r[f"image_{n}"]: png_bytes((40 * k, 200 - 30 * n, 90), size=(30 + k, 20 + n))
              for k, r in enumerate(COLORSWAP) for n in (1, 2)}
    out = run(client, app, api, tmp_path, ["colorswap.filter", "colorswap.recaption"], "test.json", body, images, colorswap_accept)
    assert (out / "all.json").read_bytes() == body
    for name, data in images.items():
        assert (out / name).read_bytes() == data, name
    # Parquet as on the Hub card: its column order, images embedded, ids as integers.
    from datasets import load_dataset

    parquet = export_as(app, project_named(app, "rt-test.json"), "parquet", tmp_path / "parquet")
    table = load_dataset("parquet", data_files=str(parquet / "data" / "all-00000-of-00001.parquet"), split="train")
    assert table.column_names == ["id", "image_1", "image_2", "caption_1", "caption_2", "image_source", "caption_source"]
    assert table["id"] == [r["id"] for r in COLORSWAP] and table.features["image_1"].__class__.__name__ == "Image"
    assert table["caption_1"][2] == COLORSWAP[2]["caption_1"]  # the trailing space too


# -- WikiDO ----------------------------------------------------------------------------------

WIKIDO = [
    {"image_id": "sublist_5_00006_000068230", "orig_cap": "The completed south garage in 2019",
     "caption": "A train station with a train on the tracks and a pedestrian crossing.",
     "image": "/topical_data/output_images/output_images/sublist_5/00006/000068230.jpg", "topic": "earth"},
    {"image_id": "sublist_2_00002_000026885", "orig_cap": "Cliffs known as \\\"The Moai\\\"",
     "caption": "A view of the ocean with cliffs known as \"The Moai\" in the background.",
     "image": "/topical_data/output_images/output_images/sublist_2/00002/000026885.jpg", "topic": "monuments_and_buildings"},
    {"image_id": "sublist_5_00005_000055716", "orig_cap": " This painting by Edwin Lord Weeks (c.\u20091880) — <i>Moor</i> ",
     "caption": "A painting by Edwin Lord Weeks depicts an old Moor, café scene. ",
     "image": "/topical_data/output_images/output_images/sublist_5/00005/000055716.jpg", "topic": "monuments_and_buildings"},
    # An integer page id stays an integer; keys in another order; no topic.
    {"caption": "Al-Ma\\u02bfarri by Khalil Gibran", "image_id": "sublist_3_00001_000012854", "page_id": 993,
     "orig_cap": "Al-Ma\\u02bfarri by Khalil Gibran", "image": "/topical_data/output_images/output_images/sublist_3/00001/000012854.jpg"},
]


def test_wikido_release_round_trip(client, app, api, tmp_path):
    body = "".join(json.dumps(r) + "\n" for r in WIKIDO).encode()
    assert b"\\u2009" in body and b'\\\\\\"The Moai' in body  # escaped as the release escapes
    images = {r["image"].lstrip("/"): jpeg_bytes((k * 50, 80, 120)) for k, r in enumerate(WIKIDO)}
    out = run(client, app, api, tmp_path, ["wikido.verify"], "val_verified.jsonl", body, images,
              lambda workflow, item: {"verdict": "correct"})
    assert (out / "all.jsonl").read_bytes() == body


# -- VisArgs ---------------------------------------------------------------------------------

README_URL = "https://i.pinimg.com/originals/5e/7f/10/5e7f108728fb848eb8e3cccfdd62ef8f.jpg"
VISARGS = [
    {  # the repository README's record, verbatim and in its key order
        "url": README_URL,
        "visual_premises": [
            "A small plant is growing inside a plastic bag.",
            "The bag contains a bit of soil.",
            "The bag is tied at the top, enclosing the plant.",
        ],
        "conclusion": "The image represents the struggle of nature to survive in a human-made, constraining environment, "
        "highlighting the need for environmental awareness and protection.",
        "b_box": [
            {"h": 41, "startX": 302, "startY": 554, "w": 72},
            {"h": 51, "startX": 223, "startY": 589, "w": 229},
            {"h": 421, "startX": 46, "startY": 219, "w": 407},
        ],
        "commonsense_premises": [
            "Plants require soil, water, light, and air to grow.",
            "Plastic bags are not a natural environment for plant growth and can restrict access to necessary resources.",
            "The act of enclosing the plant in a bag could symbolize suffocation or limitation of growth.",
        ],
        "reasoning_steps": [
            "(VP1, VP2, CP1 -> IC1): The small plant is growing, showing its resilience and need for natural resources.",
            "(VP3, CP2, CP3 -> IC2): The plastic bag enclosing the plant symbolizes human-imposed constraints on nature's growth and survival.",
            "(IC1, IC2 -> C): The image represents nature's struggle to survive in a constrained environment, "
            "emphasizing the importance of environmental protection.",
        ],
    },
    {  # a local image, spaces and unicode kept, box keys in another order
        "url": "posters/café.png",
        "visual_premises": [" A melting ice-cream cone ", "The words “BUY NOW” in <b>red</b>"],
        "conclusion": "Buy the freezer before summer ends. ",
        "b_box": [{"startX": 0, "startY": 5, "w": 10, "h": 20}, {"startX": 3, "startY": 1, "w": 2, "h": 2}],
        "commonsense_premises": ["Heat melts ice"],
        "reasoning_steps": ["(VP1, VP2, CP1 -> C): Buy the freezer before summer ends. "],
    },
]


def visargs_accept(workflow, item):
    record = item["data"]
    if workflow == "visargs.premises":
        return {"visual_premises": SOURCES[record["id"]]["visual_premises"]}
    if workflow == "visargs.structure":
        return {k: SOURCES[record["id"]][k] for k in ("commonsense_premises", "conclusion", "reasoning_steps")}
    return {"b_box": SOURCES[record["id"]]["b_box"]}


SOURCES = {"5e7f108728fb848eb8e3cccfdd62ef8f": VISARGS[0], "café": VISARGS[1]}


def test_visargs_release_round_trip(client, app, api, tmp_path):
    body = json.dumps(VISARGS, indent=4).encode()
    images = {"5e7f108728fb848eb8e3cccfdd62ef8f.jpg": jpeg_bytes(size=(480, 640)), "posters/café.png": png_bytes(size=(40, 30))}
    out = run(client, app, api, tmp_path, ["visargs.premises", "visargs.structure", "visargs.grounding"], "annotation.json",
              body, images, visargs_accept)
    assert (out / "all" / "annotation.json").read_bytes() == body
    # The image named by URL was stored from the zip and ships under its file name.
    assert (out / "all" / "5e7f108728fb848eb8e3cccfdd62ef8f.jpg").read_bytes() == images["5e7f108728fb848eb8e3cccfdd62ef8f.jpg"]
    assert (out / "all" / "posters" / "café.png").read_bytes() == images["posters/café.png"]
    # `datasets` reads the published file as one row per image.
    from datasets import load_dataset

    rows = load_dataset("json", data_files=str(out / "all" / "annotation.json"), split="train")
    assert rows.num_rows == len(VISARGS) and rows["url"] == [r["url"] for r in VISARGS]
    # COCO: the reference API loads it; stored images' file names and sizes; the records' boxes.
    from pycocotools.coco import COCO

    project_id = project_named(app, "rt-annotation.json")
    coco = COCO(str(export_as(app, project_id, "coco", tmp_path / "coco") / "annotations" / "instances_all.json"))
    files = {img["file_name"]: img for img in coco.loadImgs(coco.getImgIds())}
    assert {name: (img["width"], img["height"]) for name, img in files.items()} == {
        "5e7f108728fb848eb8e3cccfdd62ef8f.jpg": (480, 640), "posters/café.png": (40, 30)}
    for record, name in zip(VISARGS, files, strict=True):
        boxes = [a["bbox"] for a in coco.loadAnns(coco.getAnnIds(imgIds=[files[name]["id"]]))]
        assert boxes == [[b["startX"], b["startY"], b["w"], b["h"]] for b in record["b_box"]]
    # Parquet: the card's columns first.
    parquet = export_as(app, project_id, "parquet", tmp_path / "parquet")
    table = load_dataset("parquet", data_files=str(parquet / "data" / "all-00000-of-00001.parquet"), split="train")
    assert table.column_names[:6] == ["visual_premises", "conclusion", "b_box", "commonsense_premises", "url", "reasoning_steps"]
