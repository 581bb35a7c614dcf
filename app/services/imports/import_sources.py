"""Where an import's images come from (a directory, a zip, S3 keys: `ImageSource`) and where they wait
until the import is done (`Staging`, under `staging/<import>/`); `app.services.imports.imports` explains why."""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit
from uuid import uuid4

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.errors import Invalid, size_text
from app.images import CheckedImage, ImageRejected
from app.packs import PACKS, Pack, pack_key, slice_key
from app.settings import Settings
from app.storage import S3Storage, Storage


class ImageSource:
    """Where image references in an import resolve: a directory, a zip file, or S3 keys."""

    def __init__(self, settings: Settings, storage: Storage, base: Path | None = None, zip_path: Path | None = None):
        self.settings = settings
        self.storage = storage
        self.base = base.resolve() if base else None
        self.zip: zipfile.ZipFile | None = None
        self._names: dict[str, str] | None = None
        if zip_path is not None:
            self.zip = open_safe_zip(zip_path, settings.max_zip_uncompressed_bytes)

    def read(self, ref: str) -> bytes:
        limit = self.settings.max_image_bytes
        if ref.startswith("s3://"):
            bucket, _, key = ref[5:].partition("/")
            if not isinstance(self.storage, S3Storage):
                raise ImageRejected("s3:// images need VLCURATE_STORAGE_BACKEND=s3")
            try:
                return self.storage.get_external(bucket, key)
            except Exception as exc:  # boto3 raises many error types; all mean "cannot read it"
                raise ImageRejected(f"cannot read {ref}: {exc}") from None
        if ref.startswith(("http://", "https://")):
            name = self._by_name().get(url_file_name(ref))
            if name is None:
                raise ImageRejected("images are not fetched from URLs; give a file, a zip member or an s3:// key")
            ref = name
        if self.zip is not None:
            name = ref.lstrip("./")
            try:
                info = self.zip.getinfo(name)
            except KeyError:
                raise ImageRejected(f"'{ref}' is not in the images zip") from None
            if info.file_size > limit:
                raise ImageRejected(f"image is {size_text(info.file_size)}; the limit is {size_text(limit)}")
            if (found := _plain_member(self.zip, info)) is not None:
                return found
            try:
                with self.zip.open(info) as fh:
                    return fh.read(limit + 1)
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
                # A bad CRC, truncated or undecodable data, an unknown compression or encryption.
                raise ImageRejected(f"zip member '{name}' cannot be read: {exc}") from None
        if self.base is None:
            raise ImageRejected("no images were given with this import (a directory or a zip)")
        # An absolute path in a record (as released: /topical_data/...) is read from the
        # directory's root, as a zip member of that name would be; it never leaves the directory.
        path = (self.base / ref.lstrip("/")).resolve()
        if not path.is_relative_to(self.base):
            raise ImageRejected(f"'{ref}' points outside the images directory")
        if not path.is_file():
            raise ImageRejected(f"file '{ref}' not found in {self.base}")
        if path.stat().st_size > limit:
            raise ImageRejected(f"image is {size_text(path.stat().st_size)}; the limit is {size_text(limit)}")
        return path.read_bytes()

    def has_file_named(self, url: str) -> bool:
        """Whether the images given hold a file named like the URL's last path segment (an image
        a record names by URL is then stored from it; the URL itself stays in the record)."""
        names = self._by_name()
        return bool(names) and url_file_name(url) in names  # no images given: no URL parsing per record

    def _by_name(self) -> dict[str, str]:
        """File name -> the one path (zip member, or path under the directory) that has it."""
        if self._names is None:
            if self.zip is not None:
                paths = [i.filename for i in self.zip.infolist() if not i.is_dir()]
            elif self.base is not None:
                paths = [p.relative_to(self.base).as_posix() for p in self.base.rglob("*") if p.is_file()]
            else:
                paths = []
            names: dict[str, str | None] = {}
            for path in paths:
                name = PurePosixPath(path).name
                names[name] = None if name in names else path  # two files of one name: neither is guessed
            self._names = {k: v for k, v in names.items() if v is not None}
        return self._names

    def close(self) -> None:
        if self.zip is not None:
            self.zip.close()


def _plain_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes | None:
    """A stored (uncompressed, as the client packs images) member's bytes read straight from the
    archive, its CRC checked: a tenth of what `ZipFile.open` costs. None for any other member, or
    when anything differs from what the directory says: `ZipFile.open` then reads it, or says why not."""
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1 or info.compress_size != info.file_size or zf.fp is None:
        return None
    fp = zf.fp
    fp.seek(info.header_offset)
    header = fp.read(30)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        return None
    name_length, extra_length = int.from_bytes(header[26:28], "little"), int.from_bytes(header[28:30], "little")
    fp.seek(info.header_offset + 30 + name_length + extra_length)
    data = fp.read(info.compress_size)
    return data if len(data) == info.file_size and zlib.crc32(data) == info.CRC else None


def url_file_name(url: str) -> str:
    """The file name an http(s) URL ends in, without its query or fragment."""
    return PurePosixPath(urlsplit(url).path).name


def open_safe_zip(path: Path, max_total: int) -> zipfile.ZipFile:
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise Invalid("The images file is not a valid zip archive.") from None
    total = 0
    for info in zf.infolist():
        name = info.filename
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
            zf.close()
            raise Invalid(f"The zip member '{name}' has an unsafe path; nothing was imported.")
        total += info.file_size
    if total > max_total:
        zf.close()
        raise Invalid(f"The zip expands to {size_text(total)}; the limit is {size_text(max_total)}.")
    return zf


# -- staging -------------------------------------------------------------------------

STAGING = "staging"
STAGING_MAX_AGE_SECONDS = 24 * 3600


def sweep_staging(storage: Storage, older_than_seconds: float = STAGING_MAX_AGE_SECONDS) -> int:
    """Delete what imports that never finished (a killed process) left staged; returns how many objects."""
    return storage.sweep(STAGING, older_than_seconds)


PENDING_BYTES = 32 << 20  # image bytes held before asking which of them are stored already


_PACKS_NAMED = sa.text(
    "SELECT DISTINCT substring(storage_key from '^images/packs/[0-9a-f]{32}\\.pack') FROM assets WHERE storage_key LIKE :packs"
)


def sweep_packs(session: Session, storage: Storage, older_than_seconds: float = STAGING_MAX_AGE_SECONDS) -> int:
    """Delete the packs no asset names, last written more than `older_than_seconds` ago: what an
    import whose commit failed after its pack was promoted left (its rows are gone, so no reader
    finds it). Returns how many. A pack is promoted moments before its import commits, so a day-old
    unnamed one is no running import's."""
    old = storage.old_objects(PACKS, older_than_seconds)
    if not old:
        return 0
    named = set(session.scalars(_PACKS_NAMED, {"packs": PACKS + "/%"}))
    unnamed = [key for key in old if key not in named]
    for key in unnamed:
        storage.delete(key)
    return len(unnamed)


class Staging:
    """The images one import stores, under a staging prefix until it is done (see the module docstring):
    in one pack where the storage writes packs (a local directory), else one object each (S3).

    Checked images wait in memory, up to PENDING_BYTES, until one call of `lookup` (the import's query
    of the assets table: sha256 -> storage key) says which are stored already; only the others are
    written, so an image an asset names is not written again (two imports that store the same new
    image at the same moment may both write it; the asset names one copy). The assets table is
    trusted: an image whose object was lost is not written again by a new import. `keys` then holds
    every image's storage key, for the import's asset rows."""

    def __init__(self, storage: Storage):
        self.storage = storage
        self.id = uuid4().hex
        self.prefix = f"{STAGING}/{self.id}/"
        self.lookup: Callable[[list[str]], dict[str, str]] = lambda shas: {}
        self.keys: dict[str, str] = {}  # sha256 -> storage key, once written or found stored
        self.staged: dict[str, str] = {}  # final key -> staged key, of objects stored one by one
        self.pending: dict[str, CheckedImage] = {}
        self.pending_bytes = 0
        self.pack: Pack | None = None
        self.packs: bool | None = None  # whether the storage writes packs: known at the first new image

    def put(self, image: CheckedImage) -> None:
        if image.sha256 not in self.keys and image.sha256 not in self.pending:
            self.pending[image.sha256] = image
            self.pending_bytes += len(image.data)
            if self.pending_bytes >= PENDING_BYTES:
                self.write()

    def write(self) -> None:
        """Write the images waiting that nothing stored before."""
        if not self.pending:
            return
        stored = self.lookup(list(self.pending))
        for sha, image in self.pending.items():
            if sha in stored:
                self.keys[sha] = stored[sha]
                continue
            final = image.storage_key
            name = final.rsplit("/", 1)[1]
            if self.packs is None:
                self.pack = self.storage.pack(self.prefix + "images.pack")
                self.packs = self.pack is not None
            if self.pack is not None:
                self.keys[sha] = slice_key(self.pack_key, *self.pack.add(image.data), name)
            else:  # one folder an import: staged objects are named by their content, as their final keys
                self.staged[final] = self.prefix + name
                self.storage.stage(self.staged[final], image.data, image.mime)
                self.keys[sha] = final
        self.pending, self.pending_bytes = {}, 0

    @property
    def pack_key(self) -> str:
        return pack_key(self.id)

    def promote(self) -> None:
        self.write()
        if self.pack is not None:
            self.pack.close()
            self.storage.promote(self.prefix + "images.pack", self.pack_key)
        for final, staged in self.staged.items():
            self.storage.promote(staged, final)

    def discard(self) -> None:
        self.pending = {}
        if self.pack is not None:
            self.pack.discard()
        for staged in self.staged.values():
            self.storage.delete(staged)


@contextmanager
def staged_images(storage: Storage) -> Iterator[Staging]:
    """Images stored in the block are promoted when it ends, and deleted if it raises."""
    staging = Staging(storage)
    try:
        yield staging
        staging.promote()
    except BaseException:
        staging.discard()
        raise
