"""Object storage for images and export files: a local directory or S3, behind one small interface.

With S3 every process reads and writes the same bucket, so nothing one process stores has to be read
from another's disk: replicas stream objects from it (`open`), or hand browsers short-lived
presigned URLs (`url`, when VLCURATE_S3_PRESIGN_SECONDS is set).

A local directory keeps an import's images in one pack file each (`app.packs`), which every read
(`get`, `open`, `exists`) resolves by slice key; S3 stores objects one by one (a presigned URL names a
whole object) and reads slice keys too (a ranged GET), so a directory of packs copied into a bucket
still serves.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import BinaryIO, NamedTuple, Protocol

from app.packs import Pack, Slice, sliced
from app.settings import Settings


class Opened(NamedTuple):
    """A stored object being read: its stream (close it) and its size in bytes."""

    stream: BinaryIO
    size: int

    def chunks(self, size: int = 1 << 20) -> Iterator[bytes]:
        """The object in chunks, the stream closed at the end (or when the consumer stops)."""
        try:
            while data := self.stream.read(size):
                yield data
        finally:
            self.stream.close()


class Storage(Protocol):
    concurrent_reads: int  # how many objects `get_many` reads at once
    def put(self, key: str, data: bytes, content_type: str) -> None: ...
    def stage(self, key: str, data: bytes, content_type: str) -> None: ...
    def pack(self, key: str) -> Pack | None: ...
    def put_file(self, key: str, path: Path, content_type: str) -> None: ...
    def get(self, key: str) -> bytes: ...
    def open(self, key: str) -> Opened: ...
    def url(self, key: str, content_type: str, *, disposition: str | None = None, cache_control: str | None = None) -> str | None: ...
    def exists(self, key: str) -> bool: ...
    def delete(self, key: str) -> None: ...
    def promote(self, staged: str, key: str) -> None: ...
    def sweep(self, prefix: str, older_than_seconds: float) -> int: ...
    def old_objects(self, prefix: str, older_than_seconds: float) -> list[str]: ...


class StorageKeyError(ValueError):
    pass


def _check_key(key: str) -> str:
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise StorageKeyError(f"invalid storage key {key!r}")
    return key


def _fsync_folder(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _folders_up_to(folder: str, root: str) -> Iterator[str]:
    """`folder` and the folders above it, up to and including `root`."""
    while True:
        yield folder
        if os.path.samefile(folder, root) or os.path.dirname(folder) == folder:
            return
        folder = os.path.dirname(folder)


class LocalStorage:
    concurrent_reads = 1  # a file read from the page cache is done before a thread would start

    def __init__(self, root: Path):
        self.root = root
        self._root = str(root)

    def _path(self, key: str) -> Path:
        return self.root / _check_key(key)

    def _file(self, key: str) -> str:
        """`_path` as a string, without pathlib's cost (an import stages and promotes each image)."""
        return os.path.join(self._root, _check_key(key))

    def put(self, key: str, data: bytes, content_type: str) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename, so a crash never leaves a half-written object under its final name.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def stage(self, key: str, data: bytes, content_type: str) -> None:
        """Store an object under a key nothing reads until it is promoted (an import's staging
        prefix): written in place, without `put`'s write-then-rename, as `promote` is the atomic step
        and a half-written staged object is deleted with its import or swept."""
        path = self._file(key)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        except FileNotFoundError:  # the folder is made on its first object
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)

    def pack(self, key: str) -> Pack:
        """A pack to write objects into under a staging key, promoted as one object."""
        path = self._file(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return Pack(path)

    def put_file(self, key: str, path: Path, content_type: str) -> None:
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        os.close(fd)
        try:
            shutil.copyfile(path, tmp)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get(self, key: str) -> bytes:
        if (part := sliced(key)) is not None:
            pack, offset, length = part
            try:
                fd = os.open(self._file(pack), os.O_RDONLY)
            except (FileNotFoundError, NotADirectoryError):
                raise KeyError(key) from None
            try:
                data = os.pread(fd, length, offset)
            finally:
                os.close(fd)
            if len(data) != length:  # a pack cut short: the slice is not all there
                raise KeyError(key)
            return data
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise KeyError(key) from None

    def open(self, key: str) -> Opened:
        part = sliced(key)
        try:
            fh = self._path(part[0] if part else key).open("rb")
        except (FileNotFoundError, NotADirectoryError):
            raise KeyError(key) from None
        size = os.fstat(fh.fileno()).st_size
        if part is None:
            return Opened(fh, size)
        _, offset, length = part
        if offset + length > size:
            fh.close()
            raise KeyError(key)
        return Opened(io.BufferedReader(Slice(fh, offset, length)), length)

    def url(self, key: str, content_type: str, *, disposition: str | None = None, cache_control: str | None = None) -> None:
        """A local directory has no URL of its own: the app serves its objects."""
        return None

    def exists(self, key: str) -> bool:
        if (part := sliced(key)) is not None:
            pack, offset, length = part
            try:
                return os.stat(self._file(pack)).st_size >= offset + length
            except (FileNotFoundError, NotADirectoryError):
                return False
        return os.path.isfile(self._file(key))

    def delete(self, key: str) -> None:
        """Delete the object (a slice goes only with its whole pack: deleting one deletes nothing)."""
        if sliced(key) is None:
            self._path(key).unlink(missing_ok=True)

    def promote(self, staged: str, key: str) -> None:
        """Move the object at `staged` to `key` (a rename: atomic, and the same bytes may already be
        there), and fsync the folder, so the move outlasts a crash once rows naming it commit."""
        source, path = self._file(staged), self._file(key)
        try:
            os.replace(source, path)
        except FileNotFoundError:  # the target's folder is made on its first object
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.replace(source, path)
            for folder in _folders_up_to(os.path.dirname(os.path.dirname(path)), self._root):  # those it made
                _fsync_folder(folder)
        _fsync_folder(os.path.dirname(path))

    def old_objects(self, prefix: str, older_than_seconds: float) -> list[str]:
        """The keys of the objects under the folder `prefix` last written more than `older_than_seconds` ago."""
        base = self._path(prefix)
        if not base.is_dir():
            return []
        cutoff = time.time() - older_than_seconds
        return sorted(p.relative_to(self.root).as_posix() for p in base.rglob("*") if p.is_file() and p.stat().st_mtime < cutoff)

    def sweep(self, prefix: str, older_than_seconds: float) -> int:
        """Delete the objects under the folder `prefix` last written more than `older_than_seconds` ago;
        returns how many."""
        base = self._path(prefix)
        if not base.is_dir():
            return 0
        cutoff, gone = time.time() - older_than_seconds, 0
        for path in sorted(base.rglob("*"), reverse=True):  # files before the folders holding them
            if path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink(missing_ok=True)
                gone += 1
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        return gone


class S3Storage:
    concurrent_reads = 16  # each read is a round trip

    def __init__(
        self, bucket: str, prefix: str = "", endpoint_url: str | None = None, region: str | None = None, *,
        presign_seconds: int = 0, public_endpoint_url: str | None = None,
    ):
        import boto3
        from botocore.config import Config

        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.client = boto3.client("s3", endpoint_url=endpoint_url, region_name=region)
        self.presign_seconds = presign_seconds
        # URLs for browsers are signed for the endpoint they reach (a MinIO service name inside a
        # cluster is not one), with SigV4: what every S3-compatible server accepts.
        signing = Config(signature_version="s3v4", s3={"addressing_style": "path" if (public_endpoint_url or endpoint_url) else "auto"})
        self.signer = boto3.client("s3", endpoint_url=public_endpoint_url or endpoint_url, region_name=region, config=signing) if presign_seconds else None

    def _key(self, key: str) -> str:
        return self.prefix + _check_key(key)

    def put(self, key: str, data: bytes, content_type: str) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, ContentType=content_type)

    def stage(self, key: str, data: bytes, content_type: str) -> None:
        """An object written whole or not at all (an S3 put is atomic)."""
        self.put(key, data, content_type)

    def pack(self, key: str) -> None:
        """None: a bucket keeps each object whole, as a presigned URL names it."""
        return None

    def _get_object(self, key: str) -> dict:
        """GetObject for a whole object, or a ranged one for a slice key; KeyError when it is missing."""
        from botocore.exceptions import ClientError

        part = sliced(key)
        try:
            if part is None:
                return self.client.get_object(Bucket=self.bucket, Key=self._key(key))
            pack, offset, length = part
            found = self.client.get_object(Bucket=self.bucket, Key=self._key(pack), Range=f"bytes={offset}-{offset + length - 1}")
        except self.client.exceptions.NoSuchKey:
            raise KeyError(key) from None
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "InvalidRange":
                raise KeyError(key) from None
            raise
        if found["ContentLength"] != length:
            found["Body"].close()
            raise KeyError(key)
        return found

    def get(self, key: str) -> bytes:
        return self._get_object(key)["Body"].read()

    def put_file(self, key: str, path: Path, content_type: str) -> None:
        """Upload a file (in parts when it is large, never whole in memory)."""
        self.client.upload_file(str(path), self.bucket, self._key(key), ExtraArgs={"ContentType": content_type})

    def open(self, key: str) -> Opened:
        found = self._get_object(key)
        return Opened(found["Body"], found["ContentLength"])

    def url(self, key: str, content_type: str, *, disposition: str | None = None, cache_control: str | None = None) -> str | None:
        """A presigned GET URL valid for VLCURATE_S3_PRESIGN_SECONDS, answering with these headers;
        None when presigning is off, or for a slice of a pack (the app then streams the object itself)."""
        if self.signer is None or sliced(key) is not None:
            return None
        params = {"Bucket": self.bucket, "Key": self._key(key), "ResponseContentType": content_type}
        if disposition:
            params["ResponseContentDisposition"] = disposition
        if cache_control:
            params["ResponseCacheControl"] = cache_control
        return self.signer.generate_presigned_url("get_object", Params=params, ExpiresIn=self.presign_seconds)

    def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        part = sliced(key)
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self._key(part[0] if part else key))
            return part is None or head["ContentLength"] >= part[1] + part[2]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise

    def delete(self, key: str) -> None:
        """Delete the object (a slice goes only with its whole pack: deleting one deletes nothing)."""
        if sliced(key) is None:
            self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def promote(self, staged: str, key: str) -> None:
        """Move the object at `staged` to `key`: a server-side copy (content type kept), then the delete."""
        self.client.copy_object(Bucket=self.bucket, Key=self._key(key), CopySource={"Bucket": self.bucket, "Key": self._key(staged)})
        self.client.delete_object(Bucket=self.bucket, Key=self._key(staged))

    def _old_pages(self, prefix: str, older_than_seconds: float) -> Iterator[list[str]]:
        """The bucket keys under `prefix` last modified more than `older_than_seconds` ago, a listing page at a time."""
        cutoff = datetime.now(timezone.utc) - timedelta(seconds=older_than_seconds)
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self._key(prefix) + "/"):
            yield [o["Key"] for o in page.get("Contents", []) if o["LastModified"] < cutoff]

    def old_objects(self, prefix: str, older_than_seconds: float) -> list[str]:
        """The keys of the objects under `prefix` last modified more than `older_than_seconds` ago."""
        return sorted(key.removeprefix(self.prefix) for page in self._old_pages(prefix, older_than_seconds) for key in page)

    def sweep(self, prefix: str, older_than_seconds: float) -> int:
        """Delete the objects under `prefix` last modified more than `older_than_seconds` ago; returns how many."""
        gone = 0
        for old in self._old_pages(prefix, older_than_seconds):
            if old:
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in old], "Quiet": True})
                gone += len(old)
        return gone

    def get_external(self, bucket: str, key: str) -> bytes:
        """Read an object named by an `s3://bucket/key` image reference in an import."""
        return self.client.get_object(Bucket=bucket, Key=key)["Body"].read()


# Reads are network round trips on S3 (tens of ms each) and page-cache copies locally; this many
# at once hides the first without crowding a machine's threads.
def get_many(storage: Storage, keys: Iterable[str]) -> dict[str, bytes]:
    """The objects under the distinct `keys`, `storage.concurrent_reads` at once (boto3 clients and
    files are safe to read from several threads); a missing one raises KeyError."""
    distinct = list(dict.fromkeys(keys))
    if len(distinct) <= 1 or storage.concurrent_reads <= 1:
        return {k: storage.get(k) for k in distinct}
    with ThreadPoolExecutor(max_workers=min(storage.concurrent_reads, len(distinct)), thread_name_prefix="vlcurate-storage") as pool:
        return dict(zip(distinct, pool.map(storage.get, distinct), strict=True))


def make_storage(settings: Settings) -> Storage:
    if settings.storage_backend == "s3":
        if not settings.s3_bucket:
            raise ValueError("VLCURATE_STORAGE_BACKEND=s3 needs VLCURATE_S3_BUCKET")
        return S3Storage(
            settings.s3_bucket, settings.s3_prefix, settings.s3_endpoint_url, settings.s3_region,
            presign_seconds=settings.s3_presign_seconds, public_endpoint_url=settings.s3_public_endpoint_url,
        )
    return LocalStorage(settings.storage_dir)
