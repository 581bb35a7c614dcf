"""Records on the client side: batches of records as the server's import takes them (a JSONL file and a
zip of the images they name), with images from a directory, a zip file or a `datasets` Image column."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import zipfile
from collections.abc import Generator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

IMAGE_SUFFIXES = ((b"\x89PNG", ".png"), (b"\xff\xd8", ".jpg"), (b"GIF8", ".gif"), (b"RIFF", ".webp"), (b"BM", ".bmp"))


def is_dataset(records: Any) -> bool:
    """A `datasets.Dataset` (duck-typed: `datasets` is an optional dependency)."""
    return hasattr(records, "features") and hasattr(records, "cast_column") and hasattr(records, "num_rows")


def has_image_column(records: Any) -> bool:
    """A `datasets.Dataset` with an Image column (its rows carry their images' bytes)."""
    if not is_dataset(records):
        return False
    from datasets import Image

    return any(isinstance(feature, Image) for feature in records.features.values())


def plain_records(records: Any) -> Iterable[dict[str, Any] | str]:
    """Rows as dicts (or JSON texts); a Dataset's Image columns come undecoded, as {"bytes", "path"}."""
    if not is_dataset(records):
        return records  # type: ignore[no-any-return]  # rows as the caller gave them
    from datasets import Image

    for name, feature in records.features.items():
        if isinstance(feature, Image) and feature.decode:
            records = records.cast_column(name, Image(decode=False))
    return records  # type: ignore[no-any-return]  # a Dataset iterates as dicts


def total_of(records: Any) -> int | None:
    """How many records there are, where that is known before reading them."""
    try:
        return len(records)
    except TypeError:
        return None


def jsonl_rows(rows: str | Path | Iterable[dict[str, Any] | str]) -> Iterator[str]:
    """JSON lines from a JSONL file's path, or from rows (dicts, or JSON texts sent as they are)."""
    if isinstance(rows, (str, Path)):
        with Path(rows).open(encoding="utf-8") as fh:
            yield from (line.rstrip("\n") for line in fh if line.strip())
        return
    for row in rows:
        yield row if isinstance(row, str) else json.dumps(row, ensure_ascii=False)


def batches(records: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of up to `size` of `records`, read as they are needed."""
    it = iter(records)
    while batch := list(itertools.islice(it, size)):
        yield batch


def packed_batches(records: Iterable[dict[str, Any] | str], size: int, image_fields: list[str],
                   source: ImageSource) -> Generator[tuple[int, bytes, bytes | None], None, None]:
    """(records, JSONL body, images zip) of each batch, packed one batch ahead in a worker thread:
    the next batch is packed while the server takes in this one. The records are read here, in the
    caller's thread (a database cursor, say, may be used only by the thread that opened it)."""
    with ThreadPoolExecutor(1, thread_name_prefix="vlcurate-pack") as pool:
        it = batches(records, size)
        batch = next(it, None)
        ahead = None if batch is None else pool.submit(pack, batch, image_fields, source)
        while ahead is not None and batch is not None:
            count = len(batch)
            body, zipped = ahead.result()
            batch = next(it, None)
            ahead = None if batch is None else pool.submit(pack, batch, image_fields, source)
            yield count, body, zipped


def _suffix(data: bytes) -> str:
    return next((s for magic, s in IMAGE_SUFFIXES if data.startswith(magic)), ".img")


def _get(record: dict[str, Any], pointer: str) -> Any:
    value: Any = record
    for part in pointer.strip("/").split("/"):
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def _set(record: dict[str, Any], pointer: str, new: Any) -> None:
    *parents, last = pointer.strip("/").split("/")
    target: Any = record
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    if isinstance(target, list):
        target[int(last)] = new
    else:
        target[last] = new


class ImageSource:
    """Where the image files that records name are read: a directory or a zip file (None: nowhere;
    images then come inline, as a Dataset's Image column, or stay references such as URLs)."""

    def __init__(self, images: str | Path | None):
        self.base = self.zip = None
        if images is None or images == "column":
            return
        path = Path(images)
        if path.is_dir():
            self.base = path.resolve()
        elif zipfile.is_zipfile(path):
            self.zip = zipfile.ZipFile(path)
        else:
            raise ValueError(f"images={images!r} is neither a directory nor a zip file")

    def read(self, ref: str) -> bytes | None:
        name = ref.lstrip("./")
        if self.zip is not None:
            try:
                return self.zip.read(name)
            except KeyError:
                return None
        if self.base is not None:
            path = (self.base / name).resolve()
            if path.is_relative_to(self.base) and path.is_file():
                return path.read_bytes()
        return None

    def close(self) -> None:
        if self.zip is not None:
            self.zip.close()


def pack(batch: list[dict[str, Any] | str], image_fields: list[str], source: ImageSource) -> tuple[bytes, bytes | None]:
    """The batch as a JSONL file and a zip of the images its records name (a record given as a JSON
    text is sent as it is). An inline image (a dict with
    "bytes", as a Dataset's Image column holds it) becomes a file named by its path, or by its sha256,
    and the record names that file."""
    members: dict[str, bytes] = {}
    lines = []
    for record in batch:
        raw = record if isinstance(record, str) else None  # a JSONL line: sent as it is, every character kept
        if raw is not None:
            try:
                record = json.loads(raw)
            except ValueError:  # the server names the line and what is wrong with it
                lines.append(raw)
                continue
            if not isinstance(record, dict):
                lines.append(raw)
                continue
        assert isinstance(record, dict)
        record = dict(record)
        for pointer in image_fields:
            value = _get(record, pointer)
            if isinstance(value, dict) and value.get("bytes") is not None:
                data = value["bytes"]
                name = (value.get("path") or "").lstrip("./") or hashlib.sha256(data).hexdigest() + _suffix(data)
                members[name] = data
                _set(record, pointer, value.get("path") or name)
            elif isinstance(value, dict):  # an Image without bytes: a path the source may hold
                _set(record, pointer, value.get("path"))
                value = value.get("path")
            if isinstance(value, str) and value.lstrip("./") not in members:
                data = source.read(value)
                if data is not None:
                    members[value.lstrip("./")] = data
        lines.append(raw if raw is not None else json.dumps(record, ensure_ascii=False))
    body = ("\n".join(lines) + "\n").encode()
    if not members:
        return body, None
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:  # images are compressed already
        for name, data in members.items():
            zf.writestr(name, data)
    return body, buf.getvalue()
