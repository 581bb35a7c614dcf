"""Imports: all or nothing, errors naming line and field, image validation, zip safety."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
import sqlalchemy as sa
from PIL import Image

from app.errors import Invalid
from app.models import Asset, Item
from app.services.imports import imports
from app.services.projects import projects
from tests.conftest import png_bytes


@pytest.fixture
def project_id(session):
    spec = projects.StageSpec(workflow="generic.choice", config={"choices": ["x", "y"]})
    return projects.create_project(session, "imports", [spec]).id


def run(session, settings, storage, project_id, data: bytes, filename="items.jsonl", **source):
    images = imports.ImageSource(settings, storage, **source) if source else None
    return imports.import_items(session, project_id, data, filename, settings=settings, storage=storage, images=images)


def count_items(session, project_id):
    return session.scalar(sa.select(sa.func.count()).select_from(Item).where(Item.project_id == project_id))


def inserted_in_this_transaction(session) -> int:
    return session.scalar(sa.text("SELECT n_tup_ins FROM pg_stat_xact_user_tables WHERE relname = 'items'"))


def test_jsonl_import_stores_items_and_deduplicates_images(session, settings, storage, project_id, tmp_path):
    (tmp_path / "a.png").write_bytes(png_bytes((1, 2, 3)))
    (tmp_path / "b.png").write_bytes(png_bytes((1, 2, 3)))  # same bytes: one asset
    lines = [{"id": f"r{i}", "image": "a.png" if i % 2 else "b.png", "question": "?", "group_id": f"g{i % 3}"} for i in range(10)]
    result = run(session, settings, storage, project_id, "\n".join(map(json.dumps, lines)).encode(), base=tmp_path)
    assert (result.created, result.images, result.new_images) == (10, 2, 1)
    item = session.scalar(sa.select(Item).where(Item.external_id == "r3"))
    asset = session.scalar(sa.select(Asset))
    assert item.group_id == "g0" and item.assets == {"/image": asset.sha256}
    assert storage.get(asset.storage_key) == png_bytes((1, 2, 3))
    assert (asset.width, asset.height, asset.mime) == (32, 24, "image/png")


@pytest.mark.parametrize("batch,bad", [(imports.BATCH, 736), (100, 990)], ids=["one-batch", "near-the-end-of-ten-batches"])
def test_one_bad_line_among_1000_imports_nothing_and_names_the_line(session, settings, storage, project_id, tmp_path, monkeypatch, batch, bad):
    """In batches of 100, the bad line comes after 900 rows were written as the file streamed; the
    savepoint takes them back, and the staged image is deleted."""
    monkeypatch.setattr(imports, "BATCH", batch)
    (tmp_path / "a.png").write_bytes(png_bytes())
    lines = [json.dumps({"id": f"r{i}", "image": "a.png"}) for i in range(1000)]
    lines[bad] = json.dumps({"id": f"r{bad}", "image": "a.png", "choices": "not-a-list"})
    with pytest.raises(Invalid) as err:
        run(session, settings, storage, project_id, "\n".join(lines).encode(), base=tmp_path)
    assert err.value.errors == [f"line {bad + 1}: field 'choices': Input should be a valid list"]
    assert inserted_in_this_transaction(session) >= bad // batch * batch
    assert count_items(session, project_id) == 0
    assert session.scalar(sa.select(sa.func.count()).select_from(Asset)) == 0
    assert not [p for p in storage.root.rglob("*") if p.is_file()]


def test_malformed_json_names_the_line(session, settings, storage, project_id):
    with pytest.raises(Invalid, match="line 2: not valid JSON"):
        run(session, settings, storage, project_id, b'{"id": "a", "image": "x"}\n{"id": oops}\n')


def test_missing_field_and_duplicate_id_are_reported(session, settings, storage, project_id, tmp_path):
    (tmp_path / "a.png").write_bytes(png_bytes())
    data = b'{"id": "a", "image": "a.png"}\n{"image": "a.png"}\n{"id": "a", "image": "a.png"}\n'
    with pytest.raises(Invalid) as err:
        run(session, settings, storage, project_id, data, base=tmp_path)
    assert err.value.errors == [
        "line 2: field 'id': Field required",
        "line 3: field 'id': 'a' repeats the id of line 1",
    ]


def test_reimporting_an_existing_id_is_refused(session, settings, storage, project_id, tmp_path):
    (tmp_path / "a.png").write_bytes(png_bytes())
    run(session, settings, storage, project_id, b'{"id": "a", "image": "a.png"}', base=tmp_path)
    with pytest.raises(Invalid) as err:
        run(session, settings, storage, project_id, b'{"id": "b", "image": "a.png"}\n{"id": "a", "image": "a.png"}', base=tmp_path)
    assert "line 2: field 'id': an item with id 'a' is already in this project" in err.value.errors
    assert count_items(session, project_id) == 1


def test_csv_and_json_array_imports(session, settings, storage, project_id, tmp_path):
    (tmp_path / "a.png").write_bytes(png_bytes())
    csv_data = b'id,image,question,choices\nc1,a.png,Which?,"[""x"", ""y"", ""z""]"\nc2,a.png,Other?,\n'
    run(session, settings, storage, project_id, csv_data, "items.csv", base=tmp_path)
    run(session, settings, storage, project_id, json.dumps([{"id": "j1", "image": "a.png"}]).encode(), "items.json", base=tmp_path)
    c1 = session.scalar(sa.select(Item).where(Item.external_id == "c1"))
    assert c1.data["choices"] == ["x", "y", "z"] and c1.data["question"] == "Which?"
    assert count_items(session, project_id) == 3


def test_csv_error_names_the_csv_line(session, settings, storage, project_id, tmp_path):
    with pytest.raises(Invalid) as err:
        run(session, settings, storage, project_id, b"id,question\nok,fine\n", "items.csv", base=tmp_path)
    assert err.value.errors == ["line 2: field 'image': Field required"]


def _noise_png() -> bytes:
    import random

    out = io.BytesIO()
    Image.frombytes("RGB", (100, 100), random.Random(0).randbytes(30000)).save(out, "PNG")
    return out.getvalue()


def _bomb(side: int) -> bytes:
    out = io.BytesIO()
    Image.new("1", (side, side)).save(out, "PNG")  # a few KB on disk, tens of megapixels decoded
    return out.getvalue()


@pytest.mark.parametrize(
    "content,expected",
    [
        (b"this is not an image at all", "not an image"),
        (png_bytes(size=(400, 400))[:300], "damaged or truncated"),
        (_noise_png(), "KiB; the limit is 2 KiB"),  # sizes as people read them
        (_bomb(8000), "decompression bomb guard"),  # over our pixel limit
        (_bomb(12000), "rejected as a decompression bomb"),  # over Pillow's own limit as well
    ],
    ids=["not-an-image", "truncated-png", "oversized-file", "pixel-limit", "decompression-bomb"],
)
def test_bad_images_are_rejected_with_a_clear_message(session, settings, storage, project_id, tmp_path, content, expected):
    small = settings.model_copy(update={"max_image_bytes": 2000 if "the limit is" in expected else 10_000_000})
    (tmp_path / "bad.png").write_bytes(content)
    with pytest.raises(Invalid) as err:
        run(session, small, storage, project_id, b'{"id": "a", "image": "bad.png"}', base=tmp_path)
    assert len(err.value.errors) == 1 and expected in err.value.errors[0]
    assert err.value.errors[0].startswith("line 1: field 'image': bad.png: ")
    assert count_items(session, project_id) == 0
    assert session.scalar(sa.select(sa.func.count()).select_from(Asset)) == 0


def test_image_paths_cannot_leave_the_images_directory(session, settings, storage, project_id, tmp_path):
    inner = tmp_path / "inner"
    inner.mkdir()
    (tmp_path / "secret.png").write_bytes(png_bytes())
    with pytest.raises(Invalid) as err:
        run(session, settings, storage, project_id, b'{"id": "a", "image": "../secret.png"}', base=inner)
    assert "outside the images directory" in err.value.errors[0]


def _zip(tmp_path: Path, members: dict[str, bytes]) -> Path:
    path = tmp_path / "images.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_zip_images_import(session, settings, storage, project_id, tmp_path):
    path = _zip(tmp_path, {"imgs/a.png": png_bytes(), "imgs/b.png": png_bytes((0, 0, 255))})
    data = b'{"id": "a", "image": "imgs/a.png"}\n{"id": "b", "image": "imgs/b.png"}'
    source = imports.ImageSource(settings, storage, zip_path=path)
    result = imports.import_items(session, project_id, data, "x.jsonl", settings=settings, storage=storage, images=source)
    assert result.images == 2


def test_zip_with_parent_paths_is_rejected(settings, storage, tmp_path):
    path = _zip(tmp_path, {"ok.png": png_bytes(), "../evil.png": png_bytes()})
    with pytest.raises(Invalid, match=r"zip member '\.\./evil\.png' has an unsafe path"):
        imports.ImageSource(settings, storage, zip_path=path)


def test_zip_bomb_total_size_is_rejected(settings, storage, tmp_path):
    path = _zip(tmp_path, {"big.bin": b"\0" * 5_000_000})
    small = settings.model_copy(update={"max_zip_uncompressed_bytes": 1_000_000})
    with pytest.raises(Invalid, match=r"expands to 4.8 MiB; the limit is 976.6 KiB"):
        imports.ImageSource(small, storage, zip_path=path)


def test_not_a_zip_is_rejected(settings, storage, tmp_path):
    path = tmp_path / "x.zip"
    path.write_bytes(b"nope")
    with pytest.raises(Invalid, match="not a valid zip"):
        imports.ImageSource(settings, storage, zip_path=path)


def test_items_enter_the_first_stage_with_its_overlap(session, settings, storage, tmp_path):
    spec = projects.StageSpec(workflow="generic.choice", overlap=3, config={"choices": ["x", "y"]})
    pid = projects.create_project(session, "ov", [spec]).id
    (tmp_path / "a.png").write_bytes(png_bytes())
    run(session, settings, storage, pid, b'{"id": "a", "image": "a.png"}', base=tmp_path)
    item = session.scalar(sa.select(Item).where(Item.project_id == pid))
    assert (item.status, item.slots_left) == ("active", 3)
    assert item.stage_id == projects.stages_of(session, pid)[0].id


def test_records_without_choices_anywhere_are_rejected(session, settings, storage, tmp_path):
    pid = projects.create_project(session, "nochoice", [projects.StageSpec(workflow="generic.choice")]).id
    with pytest.raises(Invalid) as err:
        run(session, settings, storage, pid, b'{"id": "a", "image": "a.png"}', base=tmp_path)
    assert "no choices" in err.value.errors[0]


def sources(session, project_id) -> dict[str, str]:
    from sqlalchemy import text

    rows = session.execute(text("SELECT external_id, source::text FROM items WHERE project_id = :p ORDER BY id"), {"p": project_id})
    return dict(rows.all())


def test_each_record_keeps_its_text_as_it_came(session, settings, storage, project_id, tmp_path):
    """JSONL lines, array elements (any layout) and members of an object keyed by id, exactly."""
    (tmp_path / "a.png").write_bytes(png_bytes())
    line = '{"question": " Why?  ", "id": 7, "image": "a.png", "score": 1.50, "note": "caf\\u00e9 <b>x</b>"}'
    run(session, settings, storage, project_id, (line + "\n").encode(), base=tmp_path)
    assert sources(session, project_id) == {"7": line}
    data = session.scalar(sa.select(Item.data).where(Item.project_id == project_id))
    assert data["question"] == "Why?"  # the working copy is the schema's; the text stays as it came

    second = projects.create_project(session, "imports 2", [projects.StageSpec(workflow="generic.choice", config={"choices": ["x", "y"]})]).id
    elements = ['{"id": "b",\n        "image": "a.png"}', '{"image": "a.png", "id": "c", "extra": [1, {"k": null}]}']
    array = "[\n    " + ",\n    ".join(elements) + "\n]"
    run(session, settings, storage, second, array.encode(), filename="x.json", base=tmp_path)
    assert list(sources(session, second).values()) == elements

    third = projects.create_project(session, "imports 3", [projects.StageSpec(workflow="generic.choice", config={"choices": ["x", "y"]})]).id
    keyed = '{"d" : {"image": "a.png"} , "e":{"image":"a.png","question":"é"}}'
    run(session, settings, storage, third, keyed.encode(), filename="x.json", base=tmp_path)
    assert sources(session, third) == {"d": '{"image": "a.png"}', "e": '{"image":"a.png","question":"é"}'}


def test_absolute_paths_resolve_inside_the_images_directory(session, settings, storage, project_id, tmp_path):
    """As released (/topical_data/...): read from the directory's root, as from a zip, never outside it."""
    (tmp_path / "topical_data" / "x").mkdir(parents=True)
    (tmp_path / "topical_data" / "x" / "1.png").write_bytes(png_bytes())
    result = run(session, settings, storage, project_id, b'{"id": "a", "image": "/topical_data/x/1.png"}', base=tmp_path)
    assert result.images == 1
    with pytest.raises(Invalid) as err:
        run(session, settings, storage, project_id, b'{"id": "b", "image": "/../secret.png"}', base=tmp_path / "topical_data")
    assert "outside the images directory" in err.value.errors[0]


@pytest.mark.parametrize("given", ["zip", "directory"])
def test_a_url_image_is_stored_from_a_file_of_its_name(session, settings, storage, project_id, tmp_path, given):
    url = "https://i.example.org/originals/5e/7f/poster.png?size=large"
    record = json.dumps({"id": "u", "image": url, "question": "?"}) + "\n" + json.dumps({"id": "v", "image": "https://x.org/none.png"})
    if given == "zip":
        source = {"zip_path": _zip(tmp_path, {"images/poster.png": png_bytes((9, 9, 9))})}
    else:
        (tmp_path / "deep").mkdir()
        (tmp_path / "deep" / "poster.png").write_bytes(png_bytes((9, 9, 9)))
        source = {"base": tmp_path}
    result = run(session, settings, storage, project_id, record.encode(), **source)
    assert result.images == 1
    items = {i.external_id: i for i in session.scalars(sa.select(Item).where(Item.project_id == project_id))}
    assert items["u"].data["image"] == url and set(items["u"].assets) == {"/image"}
    assert items["v"].assets == {}  # no file of that name: the URL stays a reference


# -- streaming: files larger than a batch ------------------------------------------------------


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(imports, "BATCH", 10)


def test_ids_repeated_across_batches_name_the_first_line(session, settings, storage, project_id, tmp_path, small_batches):
    (tmp_path / "a.png").write_bytes(png_bytes())
    run(session, settings, storage, project_id, b'{"id": "old", "image": "a.png"}', base=tmp_path)
    lines = [json.dumps({"id": f"r{i}", "image": "a.png"}) for i in range(40)]
    lines[25] = json.dumps({"id": "r2", "image": "a.png"})
    lines[37] = json.dumps({"id": "old", "image": "a.png"})
    with pytest.raises(Invalid) as err:
        run(session, settings, storage, project_id, "\n".join(lines).encode(), base=tmp_path)
    assert err.value.errors == [
        "line 26: field 'id': 'r2' repeats the id of line 3",
        "line 38: field 'id': an item with id 'old' is already in this project",
    ]
    assert count_items(session, project_id) == 1
    # Twice in one transaction: each import's table of earlier ids is its own.
    for first in (100, 200):
        body = "\n".join(json.dumps({"id": f"s{i}", "image": "a.png"}) for i in range(first, first + 35))
        assert run(session, settings, storage, project_id, body.encode(), base=tmp_path).created == 35
    assert count_items(session, project_id) == 71


def test_errors_across_batches_come_in_line_order_up_to_the_limit(session, settings, storage, project_id, tmp_path, small_batches):
    lines = [json.dumps({"id": f"r{i}"} if i % 3 == 1 else {"id": f"r{i}", "image": "a.png"}) for i in range(100)]
    lines[4] = json.dumps({"id": "r0", "image": "a.png"})
    with pytest.raises(Invalid) as err:
        run(session, settings, storage, project_id, "\n".join(lines).encode(), base=tmp_path)
    assert len(err.value.errors) == imports.MAX_REPORTED_ERRORS
    assert err.value.errors[:3] == [
        "line 2: field 'image': Field required",
        "line 5: field 'id': 'r0' repeats the id of line 1",
        "line 8: field 'image': Field required",
    ]
    assert err.value.errors[-1] == "line 59: field 'image': Field required"


def test_a_file_that_breaks_off_after_bad_records_reports_both(session, settings, storage, project_id, tmp_path, small_batches):
    lines = [json.dumps({"id": f"r{i}", "image": "a.png"}) for i in range(30)]
    lines[4] = json.dumps({"id": "r4"})
    lines[24] = '{"id": "r24", "image": '
    with pytest.raises(Invalid) as err:
        run(session, settings, storage, project_id, "\n".join(lines).encode(), base=tmp_path)
    assert err.value.errors == ["line 5: field 'image': Field required", "line 25: not valid JSON (Expecting value at column 24)."]


def test_a_file_that_breaks_off_midway_imports_nothing(session, settings, storage, project_id, tmp_path, small_batches):
    """The error comes while the previous batch's COPY is still open: it is cancelled with the savepoint."""
    (tmp_path / "a.png").write_bytes(png_bytes())
    lines = [json.dumps({"id": f"r{i}", "image": "a.png"}) for i in range(30)]
    lines[24] = '{"id": "r24", "image": '
    with pytest.raises(Invalid, match=r"^line 25: not valid JSON \(Expecting value at column 24\)\.$"):
        run(session, settings, storage, project_id, "\n".join(lines).encode(), base=tmp_path)
    assert inserted_in_this_transaction(session) >= 10  # the first batch, and what the server took of the second
    assert count_items(session, project_id) == 0
    assert run(session, settings, storage, project_id, b'{"id": "r1", "image": "a.png"}', base=tmp_path).created == 1


@pytest.mark.parametrize("batch", [1, 3, 100])
def test_images_are_checked_once_and_counted_across_batches(session, settings, storage, project_id, tmp_path, monkeypatch, batch):
    monkeypatch.setattr(imports, "BATCH", batch)
    (tmp_path / "a.png").write_bytes(png_bytes((1, 2, 3)))
    (tmp_path / "b.png").write_bytes(png_bytes((1, 2, 3)))
    (tmp_path / "c.png").write_bytes(png_bytes((3, 2, 1)))
    lines = [{"id": f"r{i}", "image": "abc"[i % 3] + ".png"} for i in range(10)]
    result = run(session, settings, storage, project_id, "\n".join(map(json.dumps, lines)).encode(), base=tmp_path)
    assert (result.created, result.images, result.new_images) == (10, 3, 2)
    assert session.scalar(sa.select(sa.func.count()).select_from(Asset)) == 2


def test_a_json_array_streams_in_batches_with_each_record_as_it_came(session, settings, storage, project_id, tmp_path, small_batches, monkeypatch):
    from app.services.imports import records

    monkeypatch.setattr(records, "CHUNK", 50)
    (tmp_path / "a.png").write_bytes(png_bytes())
    elements = [json.dumps({"image": "a.png", "id": f"e{i}", "n": 1.50, "q": "caf\\u00e9 é"}, indent=i % 3 or None) for i in range(25)]
    run(session, settings, storage, project_id, ("[" + ",\n".join(elements) + "]").encode(), filename="x.json", base=tmp_path)
    assert list(sources(session, project_id).values()) == elements


def test_skip_existing_leaves_out_the_ids_the_project_had_and_still_refuses_repeats(session, settings, storage, project_id, monkeypatch):
    def lines(ids, text="x"):
        return "".join(json.dumps({"id": i, "image": f"https://example.org/{i}.png", "text": f"{text} {i}"}) + "\n" for i in ids).encode()

    def push(data):
        return imports.import_items(session, project_id, data, "push.jsonl", settings=settings, storage=storage, skip_existing=True)

    monkeypatch.setattr(imports, "BATCH", 2)  # the new and the known ids spread over batches
    assert run(session, settings, storage, project_id, lines(["a", "b", "c"])).created == 3
    # A push resumed after its first three records: those are left out as they are, the rest come in.
    result = push(lines(["a", "b", "c", "d", "e"], text="changed"))
    assert (result.created, result.skipped) == (2, 3)
    texts = dict(session.execute(sa.select(Item.external_id, Item.data["text"].astext).where(Item.project_id == project_id)).all())
    assert texts == {"a": "x a", "b": "x b", "c": "x c", "d": "changed d", "e": "changed e"}
    # The same push again changes nothing.
    again = push(lines(["a", "b", "c", "d", "e"], text="other"))
    assert (again.created, again.skipped) == (0, 5) and count_items(session, project_id) == 5
    # An id repeated within the pushed file is still an error, even across batches.
    with pytest.raises(Invalid) as refused:
        push(lines(["f", "g", "f"]))
    assert any("'f' repeats the id of line 1" in e for e in refused.value.errors), refused.value.errors
    assert count_items(session, project_id) == 5


def test_the_collector_runs_less_often_during_an_import_and_as_before_after_it(session, settings, storage, project_id, tmp_path, small_batches):
    """While an import runs, the youngest generation waits for IMPORT_GC_GEN0 allocations; the
    process's thresholds are back as they were after a good import and after a refused one."""
    import gc

    from app import tuning

    (tmp_path / "a.png").write_bytes(png_bytes())
    before = gc.get_threshold()
    seen = []
    lines = [json.dumps({"id": f"g{i}", "image": "a.png"}) for i in range(30)]
    images = imports.ImageSource(settings, storage, base=tmp_path)
    imports.import_items(session, project_id, "\n".join(lines).encode(), "g.jsonl", settings=settings, storage=storage,
                         images=images, progress=lambda *_: seen.append(gc.get_threshold()[0]))
    assert seen[:2] == [max(tuning.IMPORT_GC_GEN0, before[0])] * 2  # at the flushes; the last report comes after
    assert gc.get_threshold() == before
    lines[20] = json.dumps({"id": "g20"})
    with pytest.raises(Invalid):
        run(session, settings, storage, project_id, "\n".join(lines).replace('"g', '"h').encode(), base=tmp_path)
    assert gc.get_threshold() == before
    with tuning.fewer_collections():  # two at once: the last one out puts it back
        with tuning.fewer_collections():
            assert gc.get_threshold()[0] == max(tuning.IMPORT_GC_GEN0, before[0])
        assert gc.get_threshold()[0] == max(tuning.IMPORT_GC_GEN0, before[0])
    assert gc.get_threshold() == before


def _files(storage) -> set[str]:
    return {p.relative_to(storage.root).as_posix() for p in storage.root.rglob("*") if p.is_file()}


def test_an_import_writes_its_new_images_into_one_pack_and_never_an_image_stored_before(session, settings, storage, project_id, tmp_path):
    """A second import naming a stored image writes nothing for it: its asset keeps its key."""
    for i in range(4):
        (tmp_path / f"{i}.png").write_bytes(png_bytes((i, 50, 50)))
    first = b"\n".join(json.dumps({"id": f"a{i}", "image": f"{i}.png"}).encode() for i in range(3))
    assert run(session, settings, storage, project_id, first, base=tmp_path).new_images == 3
    packs = _files(storage)
    assert len(packs) == 1 and next(iter(packs)).startswith("images/packs/")
    keys = dict(session.execute(sa.select(Asset.sha256, Asset.storage_key)).all())
    assert {storage.get(key) for key in keys.values()} == {png_bytes((i, 50, 50)) for i in range(3)}

    again = b"\n".join(json.dumps({"id": f"b{i}", "image": f"{i}.png"}).encode() for i in range(3))
    assert run(session, settings, storage, project_id, again, base=tmp_path).new_images == 0
    assert _files(storage) == packs and dict(session.execute(sa.select(Asset.sha256, Asset.storage_key)).all()) == keys

    (tmp_path / "copy.png").write_bytes(png_bytes((3, 50, 50)))  # the same bytes as 3.png, waiting beside it
    one_new = b"\n".join(json.dumps({"id": f"c{i}", "image": name}).encode() for i, name in enumerate(("0.png", "3.png", "copy.png")))
    assert run(session, settings, storage, project_id, one_new, base=tmp_path).new_images == 1
    newest = _files(storage) - packs
    assert len(newest) == 1 and (storage.root / next(iter(newest))).read_bytes() == png_bytes((3, 50, 50))  # one copy


def test_images_written_while_a_batch_is_read_reach_their_pack(session, settings, storage, project_id, tmp_path, monkeypatch):
    """With a tiny memory budget the images are written mid-batch, while the COPY of the batch
    before is open: the lookup ends the COPY first, and every image and row arrives."""
    from app.services.imports import import_sources

    monkeypatch.setattr(imports, "BATCH", 3)
    monkeypatch.setattr(import_sources, "PENDING_BYTES", 1)
    images = {f"{i}.png": png_bytes((i, 9, 99)) for i in range(7)}
    for name, data in images.items():
        (tmp_path / name).write_bytes(data)
    lines = [json.dumps({"id": f"r{i}", "image": f"{i % 7}.png"}) for i in range(12)]
    result = run(session, settings, storage, project_id, "\n".join(lines).encode(), base=tmp_path)
    assert (result.created, result.new_images) == (12, 7) and count_items(session, project_id) == 12
    stored = {sha: storage.get(key) for sha, key in session.execute(sa.select(Asset.sha256, Asset.storage_key))}
    assert sorted(stored.values()) == sorted(images.values())
    assert len(_files(storage)) == 1


def test_a_refusal_after_images_were_written_leaves_no_pack_and_nothing_staged(session, settings, storage, project_id, tmp_path, monkeypatch):
    """Images written into the staged pack batches before the bad record are gone with the refusal."""
    from app.services.imports import import_sources

    monkeypatch.setattr(imports, "BATCH", 2)
    monkeypatch.setattr(import_sources, "PENDING_BYTES", 1)
    for i in range(5):
        (tmp_path / f"{i}.png").write_bytes(png_bytes((i, 3, 33)))
    lines = [json.dumps({"id": f"r{i}", "image": f"{i}.png"}) for i in range(5)] + [json.dumps({"id": "bad", "image": "none.png"})]
    with pytest.raises(Invalid, match="nothing was imported"):
        run(session, settings, storage, project_id, "\n".join(lines).encode(), base=tmp_path)
    assert not _files(storage) and session.scalar(sa.select(sa.func.count()).select_from(Asset)) == 0


def test_the_sweep_deletes_only_a_day_old_pack_no_asset_names(session, settings, storage, project_id, tmp_path):
    """What an import whose commit failed after its pack was promoted left: unnamed, and old."""
    import os
    import time

    from app.packs import pack_key

    (tmp_path / "a.png").write_bytes(png_bytes((4, 4, 4)))
    run(session, settings, storage, project_id, b'{"id": "a", "image": "a.png"}', base=tmp_path)
    (named,) = _files(storage)
    lost, recent = pack_key("a" * 32), pack_key("b" * 32)
    for key in (lost, recent):
        storage.put(key, png_bytes((5, 5, 5)), "application/octet-stream")
    two_days_ago = time.time() - 2 * 86400
    for key in (named, lost):
        os.utime(storage.root / key, (two_days_ago, two_days_ago))
    assert imports.sweep_packs(session, storage) == 1
    assert _files(storage) == {named, recent}
    assert imports.sweep_packs(session, storage, older_than_seconds=-60) == 1  # (every pack old now)
    assert _files(storage) == {named}
