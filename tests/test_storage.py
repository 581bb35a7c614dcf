"""Storage backends: the local directory, and S3 against a real moto server process."""

from __future__ import annotations

import boto3
import pytest
import sqlalchemy as sa

from app.errors import Invalid
from app.models import Asset
from app.services import imports, projects
from app.storage import LocalStorage, S3Storage, StorageKeyError
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
