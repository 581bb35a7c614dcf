"""Zip archives streamed as they are made: a page of stored images for the client, an export's files."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator

from app.storage import Storage, get_many


class ChunkSink(io.RawIOBase):
    """A write-only stream that hands out what was written so far (zipfile writes a stream that
    cannot seek with data descriptors, so an archive goes out as it is made)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def drain(self) -> Iterator[bytes]:
        parts, self.parts = self.parts, []
        yield from parts


def zipped(storage: Storage, keys: dict[str, str], chunk_size: int = 64) -> Iterator[bytes]:
    """A zip of the objects under `keys`' values, each named by its key in `keys`, stored as they are
    (images are compressed already), read `chunk_size` at a time (concurrently, `get_many`) and
    yielded a chunk at a time."""
    sink = ChunkSink()
    names = list(keys)
    with zipfile.ZipFile(sink, "w", zipfile.ZIP_STORED) as archive:
        for start in range(0, len(names), chunk_size):
            chunk = names[start:start + chunk_size]
            objects = get_many(storage, [keys[name] for name in chunk])
            for name in chunk:
                archive.writestr(name, objects[keys[name]])
            # One piece a chunk: a streamed response hands each piece to the server from a thread,
            # which a piece a zip record (three an image) made the export's main cost.
            yield b"".join(sink.drain())
    yield b"".join(sink.drain())
