"""Storage backends: the local directory, and S3 against a real moto server process."""

from __future__ import annotations

import boto3
import pytest
import sqlalchemy as sa

from app.errors import Invalid
from app.models import Asset
from app.services.imports import imports
from app.services.projects import projects
from app.packs import pack_key, slice_key
from app.storage import LocalStorage, S3Storage, StorageKeyError, get_many
from tests.conftest import png_bytes


@pytest.fixture
def s3_env(moto_endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    for bucket in ("vlc-store", "vlc-source"):
        client.create_bucket(Bucket=bucket)
    return client


def test_local_storage_round_trip_and_key_safety(tmp_path):
    store = LocalStorage(tmp_path)
    store.put("images/ab/x.png", b"data", "image/png")
    assert store.get("images/ab/x.png") == b"data" and store.exists("images/ab/x.png")
    store.delete("images/ab/x.png")
    assert not store.exists("images/ab/x.png")
    with pytest.raises(KeyError):
        store.get("images/ab/x.png")
    for bad in ("../etc/passwd", "/abs", "a//b", "a/./b"):
        with pytest.raises(StorageKeyError):
            store.put(bad, b"", "x")


def test_s3_storage_round_trip(s3_env, moto_endpoint):
    store = S3Storage("vlc-store", prefix="proj/", endpoint_url=moto_endpoint, region="us-east-1")
    store.put("images/ab/x.png", b"bytes", "image/png")
    assert s3_env.get_object(Bucket="vlc-store", Key="proj/images/ab/x.png")["Body"].read() == b"bytes"
    assert store.get("images/ab/x.png") == b"bytes" and store.exists("images/ab/x.png")
    assert not store.exists("images/none.png")
    with pytest.raises(KeyError):
        store.get("images/none.png")
    store.delete("images/ab/x.png")
    assert not store.exists("images/ab/x.png")


def test_import_with_s3_storage_and_s3_image_keys(s3_env, moto_endpoint, session, settings):
    s3_settings = settings.model_copy(
        update={"storage_backend": "s3", "s3_bucket": "vlc-store", "s3_prefix": "data", "s3_endpoint_url": moto_endpoint, "s3_region": "us-east-1"}
    )
    from app.storage import make_storage

    store = make_storage(s3_settings)
    s3_env.put_object(Bucket="vlc-source", Key="raw/a.png", Body=png_bytes((9, 9, 9)))
    s3_env.put_object(Bucket="vlc-source", Key="raw/bad.png", Body=b"garbage")
    pid = projects.create_project(session, "s3", [projects.StageSpec(workflow="generic.choice", config={"choices": ["a", "b"]})]).id
    source = imports.ImageSource(s3_settings, store)
    result = imports.import_items(session, pid, b'{"id": "1", "image": "s3://vlc-source/raw/a.png"}', "x.jsonl", settings=s3_settings, storage=store, images=source)
    assert result.images == 1
    asset = session.scalar(sa.select(Asset))
    assert s3_env.get_object(Bucket="vlc-store", Key=f"data/{asset.storage_key}")["Body"].read() == png_bytes((9, 9, 9))
    with pytest.raises(Invalid) as err:
        imports.import_items(session, pid, b'{"id": "2", "image": "s3://vlc-source/raw/bad.png"}', "x.jsonl", settings=s3_settings, storage=store, images=source)
    assert "not an image" in err.value.errors[0]
    with pytest.raises(Invalid) as err:
        imports.import_items(session, pid, b'{"id": "3", "image": "s3://vlc-source/raw/missing.png"}', "x.jsonl", settings=s3_settings, storage=store, images=source)
    assert "cannot read s3://vlc-source/raw/missing.png" in err.value.errors[0]


def test_s3_backend_needs_a_bucket(settings):
    from app.storage import make_storage

    with pytest.raises(ValueError, match="VLCURATE_S3_BUCKET"):
        make_storage(settings.model_copy(update={"storage_backend": "s3"}))


def test_promote_moves_a_staged_object_on_both_backends(s3_env, moto_endpoint, tmp_path):
    for store in (LocalStorage(tmp_path), S3Storage("vlc-store", prefix="promote/", endpoint_url=moto_endpoint, region="us-east-1")):
        store.stage("staging/x/y.png", b"bytes", "image/png")  # folders made as needed, on staging and promoting
        assert store.get("staging/x/y.png") == b"bytes" and not store.exists("images/ab/y.png")
        store.promote("staging/x/y.png", "images/ab/y.png")
        assert store.get("images/ab/y.png") == b"bytes" and not store.exists("staging/x/y.png")
        with pytest.raises(StorageKeyError):
            store.stage("staging/../y.png", b"bytes", "image/png")
    head = s3_env.head_object(Bucket="vlc-store", Key="promote/images/ab/y.png")
    assert head["ContentType"] == "image/png"


def test_sweeping_staging_deletes_only_old_staged_objects_on_both_backends(s3_env, moto_endpoint, tmp_path):
    """What a killed import left staged goes once it is old; a running import's objects and every
    object under its final key stay."""
    import os
    import time

    from app.services.imports.imports import sweep_staging

    local = LocalStorage(tmp_path)
    for key in ("staging/dead/images/ab/old.png", "staging/live/images/cd/new.png", "images/ab/kept.png"):
        local.put(key, b"bytes", "image/png")
    two_days_ago = time.time() - 2 * 86400
    os.utime(tmp_path / "staging/dead/images/ab/old.png", (two_days_ago, two_days_ago))
    assert sweep_staging(local) == 1
    assert not local.exists("staging/dead/images/ab/old.png") and not (tmp_path / "staging/dead").exists()
    assert local.exists("staging/live/images/cd/new.png") and local.exists("images/ab/kept.png")
    assert sweep_staging(LocalStorage(tmp_path / "empty")) == 0

    s3 = S3Storage("vlc-store", prefix="sweep/", endpoint_url=moto_endpoint, region="us-east-1")
    for key in ("staging/a/images/x.png", "staging/b/images/y.png", "images/z.png"):
        s3.put(key, b"bytes", "image/png")
    assert sweep_staging(s3) == 0  # just written: an import may still be running
    assert sweep_staging(s3, older_than_seconds=-60) == 2  # (a cutoff in the future: every staged object is old)
    keys = [o["Key"] for o in s3_env.list_objects_v2(Bucket="vlc-store", Prefix="sweep/").get("Contents", [])]
    assert keys == ["sweep/images/z.png"]


def test_an_import_refused_at_its_second_image_leaves_nothing_in_s3(s3_env, moto_endpoint, session, settings):
    """The first image was new and good: it was staged, and is gone with the refusal; a good import
    leaves its images under their keys and nothing under staging/."""
    s3_settings = settings.model_copy(
        update={"storage_backend": "s3", "s3_bucket": "vlc-store", "s3_prefix": "staged", "s3_endpoint_url": moto_endpoint, "s3_region": "us-east-1"}
    )
    from app.storage import make_storage

    store = make_storage(s3_settings)
    s3_env.put_object(Bucket="vlc-source", Key="st/a.png", Body=png_bytes((7, 7, 70)))
    s3_env.put_object(Bucket="vlc-source", Key="st/b.png", Body=b"garbage")
    s3_env.put_object(Bucket="vlc-source", Key="st/c.png", Body=png_bytes((7, 70, 7)))

    def keys():
        return sorted(o["Key"] for o in s3_env.list_objects_v2(Bucket="vlc-store", Prefix="staged/").get("Contents", []))

    pid = projects.create_project(session, "s3-staged", [projects.StageSpec(workflow="generic.choice", config={"choices": ["a", "b"]})]).id
    source = imports.ImageSource(s3_settings, store)
    bad = b'{"id": "1", "image": "s3://vlc-source/st/a.png"}\n{"id": "2", "image": "s3://vlc-source/st/b.png"}'
    with pytest.raises(Invalid) as err:
        imports.import_items(session, pid, bad, "x.jsonl", settings=s3_settings, storage=store, images=source)
    assert "line 2" in err.value.errors[0] and "not an image" in err.value.errors[0]
    assert keys() == []
    good = b'{"id": "1", "image": "s3://vlc-source/st/a.png"}\n{"id": "3", "image": "s3://vlc-source/st/c.png"}'
    assert imports.import_items(session, pid, good, "x.jsonl", settings=s3_settings, storage=store, images=source).new_images == 2
    stored = sorted(f"staged/{key}" for key in session.scalars(sa.select(Asset.storage_key)))
    assert keys() == stored and all(key.startswith("staged/images/") for key in stored)


def test_open_and_put_file_on_both_backends(s3_env, moto_endpoint, tmp_path):
    """A stored object is read as a stream with its size; a file is stored without being read whole."""
    source = tmp_path / "big.bin"
    source.write_bytes(bytes(range(256)) * 9000)
    for store in (LocalStorage(tmp_path / "local"), S3Storage("vlc-store", prefix="open/", endpoint_url=moto_endpoint, region="us-east-1")):
        store.put_file("exports/1/big.bin", source, "application/octet-stream")
        opened = store.open("exports/1/big.bin")
        assert opened.size == source.stat().st_size
        assert b"".join(opened.chunks(4096)) == source.read_bytes()
        with pytest.raises(KeyError):
            store.open("exports/1/none.bin")
        assert store.url("exports/1/big.bin", "application/octet-stream") is None  # streamed by the app
    assert s3_env.head_object(Bucket="vlc-store", Key="open/exports/1/big.bin")["ContentType"] == "application/octet-stream"


def test_many_objects_are_read_at_once_on_both_backends(s3_env, moto_endpoint, tmp_path):
    """The worker reads a batch's images at once (from a bucket, concurrently): each key once, each with its own bytes."""
    keys = [f"images/{i:02d}/x.png" for i in range(40)]
    for store in (LocalStorage(tmp_path / "local"), S3Storage("vlc-store", prefix="many/", endpoint_url=moto_endpoint, region="us-east-1")):
        for i, key in enumerate(keys):
            store.put(key, f"image {i}".encode(), "image/png")
        found = get_many(store, keys + keys[:3])
        assert found == {key: f"image {i}".encode() for i, key in enumerate(keys)}
        assert get_many(store, []) == {}
        with pytest.raises(KeyError):
            get_many(store, [*keys[:5], "images/none.png"])


def test_presigned_urls_answer_with_the_asked_headers(s3_env, moto_endpoint):
    import urllib.request

    store = S3Storage("vlc-store", prefix="signed/", endpoint_url=moto_endpoint, region="us-east-1", presign_seconds=60)
    store.put("images/ab/x.png", png_bytes(), "image/png")
    url = store.url("images/ab/x.png", "image/png", disposition='attachment; filename="x.png"', cache_control="private, max-age=5")
    assert url.startswith(moto_endpoint + "/vlc-store/signed/images/ab/x.png?") and "X-Amz-Expires=60" in url
    with urllib.request.urlopen(url) as answer:
        assert answer.read() == png_bytes()
        assert answer.headers["Content-Type"] == "image/png" and answer.headers["Cache-Control"] == "private, max-age=5"
        assert answer.headers["Content-Disposition"] == 'attachment; filename="x.png"'
    # Browsers get URLs for the endpoint they reach, not the one inside the cluster.
    public = S3Storage("vlc-store", endpoint_url=moto_endpoint, region="us-east-1", presign_seconds=60, public_endpoint_url="https://files.example.org")
    assert public.url("images/ab/x.png", "image/png").startswith("https://files.example.org/vlc-store/images/ab/x.png?")


def test_make_storage_passes_the_presign_settings(settings, moto_endpoint):
    from app.storage import make_storage

    store = make_storage(settings.model_copy(update={
        "storage_backend": "s3", "s3_bucket": "vlc-store", "s3_endpoint_url": moto_endpoint, "s3_region": "us-east-1",
        "s3_presign_seconds": 120, "s3_public_endpoint_url": "https://s3.example.org",
    }))
    assert store.presign_seconds == 120 and store.url("k", "image/png").startswith("https://s3.example.org/vlc-store/k?")


PACK = pack_key("0123456789abcdef0123456789abcdef")


def _packed(store, objects: list[bytes]) -> list[str]:
    """Write `objects` into one pack staged under staging/, promote it, and return their slice keys."""
    pack = store.pack("staging/p/images.pack")
    keys = [slice_key(PACK, *pack.add(data), f"{i}.png") for i, data in enumerate(objects)]
    pack.close()
    store.promote("staging/p/images.pack", PACK)
    return keys


def test_a_pack_holds_many_objects_each_read_by_its_slice_key(tmp_path):
    store = LocalStorage(tmp_path)
    objects = [png_bytes((i, 1, 1)) for i in range(5)] + [b"", b"x" * 70_000]
    keys = _packed(store, objects)
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()] == [PACK]
    for key, data in zip(keys, objects, strict=True):
        assert store.get(key) == data and store.exists(key)
        opened = store.open(key)
        assert opened.size == len(data) and b"".join(opened.chunks(size=1000)) == data
    assert get_many(store, keys[:3]) == dict(zip(keys[:3], objects[:3], strict=True))
    store.delete(keys[0])  # a slice goes only with its pack
    assert store.get(keys[0]) == objects[0]
    end = sum(map(len, objects))
    for missing in (slice_key(PACK, end - 1, 2, "x.png"), slice_key(pack_key("f" * 32), 0, 1, "x.png")):
        assert not store.exists(missing)
        with pytest.raises(KeyError):
            store.get(missing)
        with pytest.raises(KeyError):
            store.open(missing)
    # Only a key under images/packs/ names a slice: any other is a whole object, whatever its shape.
    for whole in ("exports/7/img_a.pack/0+10/b_1.png", "images/packs/p.pack/0+1/x.png", "images/ab/x.pack/0+1/y.png"):
        store.put(whole, b"a file", "image/png")
        assert store.get(whole) == b"a file" and store.exists(whole) and b"".join(store.open(whole).chunks()) == b"a file"
        store.delete(whole)
        assert not store.exists(whole)
    with pytest.raises(StorageKeyError):
        store.get("images/packs/../../etc/0+1/x.png")


def test_a_discarded_pack_leaves_nothing(tmp_path):
    store = LocalStorage(tmp_path)
    pack = store.pack("staging/q/images.pack")
    pack.add(b"bytes")
    pack.discard()
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_a_bucket_reads_slices_of_a_pack_with_ranged_gets(s3_env, moto_endpoint, tmp_path):
    """A directory of packs copied into a bucket serves: each slice by a ranged GET, never presigned."""
    local = LocalStorage(tmp_path)
    objects = [png_bytes((9, i, 9)) for i in range(3)]
    keys = _packed(local, objects)
    s3 = S3Storage("vlc-store", prefix="packed/", endpoint_url=moto_endpoint, region="us-east-1", presign_seconds=60)
    assert s3.pack("staging/p/images.pack") is None
    s3.put_file(PACK, tmp_path / PACK, "application/octet-stream")
    for key, data in zip(keys, objects, strict=True):
        assert s3.get(key) == data and s3.exists(key) and s3.url(key, "image/png") is None
        opened = s3.open(key)
        assert opened.size == len(data) and b"".join(opened.chunks()) == data
    past = slice_key(PACK, sum(map(len, objects)) - 1, 2, "x.png")
    assert not s3.exists(past)
    for missing in (past, slice_key(pack_key("f" * 32), 0, 1, "x.png")):
        with pytest.raises(KeyError):
            s3.get(missing)
    assert s3.url(PACK, "application/octet-stream") is not None
