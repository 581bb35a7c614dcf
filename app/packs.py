"""Packs: many small objects written one after another into one file, each then named by a slice
key, `<pack key>/<offset>+<length>/<name>`, that `app.storage` resolves to its bytes in the pack.

An import on a local directory writes its new images into one pack instead of a file each: creating
a file costs a file system tens to hundreds of times what appending a small image to an open one
costs (figures in docs/performance.md), and a push of ten thousand images would otherwise create ten
thousand files. The format is the bytes themselves, back to back; the key says where each object
is, so there is no index to keep and nothing for a library to do.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from typing import BinaryIO

PACKS = "images/packs"  # where packs are kept: `<PACKS>/<32 hex digits>.pack`
_SLICE = re.compile(r"(?P<pack>images/packs/[0-9a-f]{32}\.pack)/(?P<offset>[0-9]{1,12})\+(?P<length>[0-9]{1,10})/[^/]+")


def pack_key(pack_id: str) -> str:
    """The key of the pack named `pack_id` (32 hex digits)."""
    return f"{PACKS}/{pack_id}.pack"


def slice_key(pack: str, offset: int, length: int, name: str) -> str:
    """The key of the `length` bytes at `offset` in the pack object `pack`, ending in `name`."""
    return f"{pack}/{offset}+{length}/{name}"


def sliced(key: str) -> tuple[str, int, int] | None:
    """(pack key, offset, length) of a slice key; None for the key of a whole object (any key not
    of the slice form under PACKS)."""
    found = _SLICE.fullmatch(key)
    return (found["pack"], int(found["offset"]), int(found["length"])) if found else None


class Pack:
    """A file being written with objects one after another (`add` says where each went), made durable
    by `close` before the pack is promoted; `discard` ends it after a failure."""

    def __init__(self, path: str):
        self.path = path
        self._file = open(path, "wb")  # open while the import adds to it
        self.size = 0

    def add(self, data: bytes) -> tuple[int, int]:
        """Append `data`; its (offset, length) in the pack."""
        offset = self.size
        self._file.write(data)
        self.size += len(data)
        return offset, len(data)

    def close(self) -> None:
        """Write everything out and fsync it: rows naming its slices commit only after this."""
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()

    def discard(self) -> None:
        """Close without writing out what is left (a full disk refuses it) and delete the file."""
        with contextlib.suppress(OSError):
            self._file.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


class Slice(io.RawIOBase):
    """The `length` bytes at `offset` of an open file, read as a stream of their own."""

    def __init__(self, file: BinaryIO, offset: int, length: int):
        self._file, self._left = file, length
        file.seek(offset)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        wanted = min(len(buffer), self._left)
        data = self._file.read(wanted)
        buffer[:len(data)] = data
        self._left -= len(data)
        return len(data)

    def close(self) -> None:
        self._file.close()
        super().close()
