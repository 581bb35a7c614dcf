"""Leakage: planted duplicates across train and test are all found, distinct images make no group,
and keeping groups together leaves no leak."""

from __future__ import annotations

import io
import random

import numpy as np
import pytest
import sqlalchemy as sa
from PIL import Image

from app import leakage
from app.models import Asset, ImageHash, Item, ItemSplit, LeakReport
from app.services.exports import splits
from app.services.leaks import leaks
from tests import factories

WORDS = ("red blue green small large old young wooden stone glass river mountain city street market boat train "
         "bridge tower garden dog cat horse bird child woman man table window door lamp book cup tree flower").split()


def texture(seed: int, size=(160, 120)) -> Image.Image:
    """A distinct smooth random picture (low-frequency noise, as photos mostly are)."""
    rng = np.random.default_rng(seed)
    small = Image.fromarray(rng.integers(0, 256, (6, 8, 3), dtype=np.uint8), "RGB")
    return small.resize(size, Image.BICUBIC)


def encode(image: Image.Image, fmt="PNG", **kw) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **kw)
    return out.getvalue()


def caption(rng: random.Random) -> str:
    return " ".join(rng.sample(WORDS, 9)).capitalize() + "."


def planted_project(session, settings, storage, folder, distinct=500):
    rng = random.Random(7)
    records, files, planted = [], {}, {}
    for i in range(distinct):
        name = f"img/{i}.png"
        files[name] = encode(texture(i))
        # The first 100 distinct items are held out into test too: distinct items on both sides.
        records.append({"id": f"o{i}", "image": name, "question": caption(rng), "copy": "yes" if i >= 400 else "no"})
    variants = ["identical", "jpeg", "resized", "cropped", "caption"]
    for k in range(30):
        original = records[k]
        kind = variants[k % 5]
        image = texture(k)
        if kind == "identical":
            name = original["image"]
        else:
            name = f"img/copy{k}.{'jpg' if kind == 'jpeg' else 'png'}"
            if kind == "jpeg":
                files[name] = encode(image, "JPEG", quality=80)
            elif kind == "resized":
                files[name] = encode(image.resize((128, 96), Image.LANCZOS))
            elif kind == "cropped":
                files[name] = encode(image.crop((2, 1, 158, 119)))  # 2 % of the area off the edges
            else:
                name = f"img/other{k}.png"
                files[name] = encode(texture(10_000 + k))
        text = caption(rng)
        if kind == "caption":
            text = original["question"].upper().replace(".", "!").replace(" ", " , ", 1)
        records.append({"id": f"c{k}", "image": name, "question": text, "copy": "yes"})
        planted[f"c{k}"] = (f"o{k}", kind)
    project_id, (stage_id,) = factories.project(session, "generic.choice", config={"choices": ["a", "b"]})
    factories.items(session, settings, storage, project_id, records, files, folder)
    # The import took no perceptual hash: the worker's hash_images job does, after it (here its service).
    assert session.scalar(sa.select(sa.func.count()).select_from(ImageHash)) == 0
    leaks.hash_images(session, storage, leaks.missing_hashes(session, project_id))
    session.execute(sa.text("INSERT INTO item_results (item_id, stage_id, payload, source) SELECT id, stage_id, '{\"choice\": \"a\"}', 'auto' FROM items WHERE project_id = :p"), {"p": project_id})
    session.execute(sa.text("UPDATE items SET status = 'done', slots_left = 0 WHERE project_id = :p"), {"p": project_id})
    # Copies (and 100 distinct items) are held out as test; every other item is train.
    splits.save_definition(session, project_id, {"ratios": {"train": 1.0}, "held_out": {"field": "copy", "values": ["yes"], "split": "test"}})
    return project_id, planted


def test_planted_duplicates_are_found_and_kept_together(session, settings, storage, tmp_path):
    project_id, planted = planted_project(session, settings, storage, tmp_path)
    report = leaks.compute(session, storage, project_id)
    assert report["items"] == 530
    groups = {frozenset(m["external_id"] for m in g["items"]): g for g in report["groups"]}
    found = {pair for pair in (frozenset(p) for p in ((c, o) for c, (o, _) in planted.items())) if pair in groups}
    missed = {c: kind for c, (o, kind) in planted.items() if frozenset((c, o)) not in found}
    assert not missed, missed
    # No false group: every group is exactly one planted pair, and every one of them leaks.
    assert len(groups) == 30 and all(g["leak"] and g["splits"] == ["test", "train"] for g in groups.values())
    assert report["leaks"] == {"test / train": 30} and report["within_split_groups"] == 0
    kinds = {planted[next(m for m in k if m.startswith("c"))][1]: g["kinds"] for k, g in groups.items()}
    assert kinds["identical"] == ["same image"] and kinds["caption"] == ["same text"]
    assert "near image" in kinds["jpeg"] and "near image" in kinds["resized"] and "near image" in kinds["cropped"]
    # Every image was hashed after the import from its stored bytes: the same hash as the leaks job
    # takes of an image that has none.
    hashes = dict(session.execute(sa.select(ImageHash.sha256, ImageHash.phash)).all())
    keys = dict(session.execute(sa.select(Asset.sha256, Asset.storage_key)).all())
    assert len(hashes) == len(keys) == report["images"] == 524
    assert all(hashes[sha] == leakage.phash(storage.get(key)) for sha, key in keys.items())
    assert {key.rsplit(".", 1)[1] for key in keys.values()} == {"png", "jpg"}

    before = report["counts"]
    fixed = leaks.keep_together(session, project_id, report)
    assert fixed.version == 2
    after = leaks.compute(session, storage, project_id)
    assert after["leaked_groups"] == 0 and after["leaks"] == {}
    assert after["within_split_groups"] == 30  # still duplicates, now each within one split
    assert sum(fixed.counts.values()) == sum(before.values()) == 530
    # Held out by the copy's field, each group now sits wholly in test: train lost exactly the 30 originals.
    assert fixed.counts == {"train": before["train"] - 30, "test": before["test"] + 30}
    placed = dict(session.execute(sa.select(Item.external_id, ItemSplit.split).join(ItemSplit, ItemSplit.item_id == Item.id)
                                  .where(ItemSplit.definition_id == fixed.id)).all())
    assert all(placed[c] == placed[o] for c, (o, _) in planted.items())


def test_the_banded_search_finds_exactly_the_close_pairs():
    rng = np.random.default_rng(3)
    hashes = [int(v) for v in rng.integers(-(2**63), 2**63 - 1, 3000, dtype=np.int64)]
    for k in range(20):  # 20 planted near pairs, 0 to 6 bits apart
        bits = rng.choice(64, k % 7, replace=False)
        flipped = np.uint64(np.int64(hashes[k]).view(np.uint64))
        for b in bits:
            flipped ^= np.uint64(1) << np.uint64(int(b))
        hashes.append(int(np.uint64(flipped).view(np.int64)))
    keys = list(range(len(hashes)))
    found = set(leakage.near_hash_pairs(keys, hashes, 6))
    values = np.array(hashes, dtype=np.int64).view(np.uint64)
    brute = {(a, b) for a in range(len(values)) for b in np.flatnonzero(np.bitwise_count(values[a] ^ values[a + 1:]) <= 6) + a + 1}
    assert found == {(int(a), int(b)) for a, b in brute} and len(found) >= 20


@pytest.mark.parametrize("a, b, same", [
    ("A red tram, in Lisbon!", "a red tram in lisbon", True),
    ("Café  au lait", "CAFÉ AU LAIT.", True),
    ("a red tram in Lisbon", "a blue tram in Lisbon", False),
])
def test_normalised_texts(a, b, same):
    assert (leakage.normalise_text(a) == leakage.normalise_text(b)) is same


def test_minhash_finds_a_near_caption_and_not_a_different_one():
    base = " ".join(f"word{i}" for i in range(30))
    near = base.replace("word15", "other")
    far = " ".join(f"word{i}" for i in range(0, 60, 2))
    pairs = set(leakage.near_text_pairs(["a", "b", "c"], [base, near, far], 0.8))
    assert pairs == {("a", "b")}


def test_the_demo_has_a_gold_set_and_planted_leaks(session, settings, storage, tmp_path):
    from app.models import GoldItem, LeakReport, Project
    from app.services.demo import demo_quality

    assert demo_quality.load(session, settings, storage, tmp_path) == [demo_quality.GOLD_DEMO, demo_quality.LEAK_DEMO]
    assert demo_quality.load(session, settings, storage, tmp_path) == []  # idempotent
    assert session.scalar(sa.select(sa.func.count()).select_from(GoldItem)) == 8
    project_id = session.scalar(sa.select(Project.id).where(Project.name == demo_quality.LEAK_DEMO))
    report = session.scalar(sa.select(LeakReport.report).where(LeakReport.project_id == project_id))
    found = [g for g in report["groups"]]
    # Every planted duplicate is in a group with its original, and nothing else is grouped.
    assert len(found) == 8 and all(len(g["items"]) == 2 for g in found)
    assert sorted(m["external_id"] for g in found for m in g["items"] if m["external_id"].startswith("copy")) == [f"copy-{n}" for n in range(8)]
    assert report["leaked_groups"] >= 1


def test_keep_together_keeps_configured_counts_exact(session, settings, storage, tmp_path):
    project_id, planted = planted_project(session, settings, storage, tmp_path, distinct=200)
    # 230 items cut by counts: the planted pairs straddle train and test wherever the random order puts them.
    config = {"counts": {"train": 150, "test": 60}, "rest": "spare", "seed": 3}
    first = splits.save_definition(session, project_id, config)
    assert first.counts == {"train": 150, "test": 60, "spare": 20}
    report = leaks.compute(session, storage, project_id)
    assert report["leaked_groups"] > 0
    fixed = leaks.keep_together(session, project_id, report)
    assert fixed.counts == {"train": 150, "test": 60, "spare": 20}
    after = leaks.compute(session, storage, project_id)
    assert after["leaked_groups"] == 0 and after["within_split_groups"] == 30


def test_a_report_hashes_the_images_stored_without_one_a_batch_at_a_time(rolled_back, settings, storage, tmp_path, monkeypatch):
    with rolled_back.begin() as s:
        project_id, _ = planted_project(s, settings, storage, tmp_path, distinct=120)
        s.execute(sa.delete(ImageHash))  # as images stored before hashes were kept at import
    monkeypatch.setattr(leaks, "HASH_BATCH", 50)
    steps: list[tuple[str, int, int]] = []
    report_id, report = leaks.run(rolled_back, storage, project_id, progress=lambda *step: steps.append(step))
    assert report["hashed_now"] == report["images"] == 144 and report["leaks"] == {"test / train": 30}
    assert steps[:4] == [("hashing images", 0, 144), ("hashing images", 50, 144), ("hashing images", 100, 144), ("hashing images", 144, 144)]
    assert [name for name, _, _ in steps[4:]] == ["reading items", "matching images", "matching texts", "grouping"]
    with rolled_back.begin() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(ImageHash)) == 144
        assert leaks.stored(s, project_id) == report and s.get(LeakReport, report_id).report == report
    # Hashes are kept: the next report has none to compute.
    steps.clear()
    _, again = leaks.run(rolled_back, storage, project_id, progress=lambda *step: steps.append(step))
    assert again["hashed_now"] == 0 and again["leaks"] == report["leaks"] and steps[0] == ("hashing images", 0, 0)
