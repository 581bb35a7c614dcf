"""Importing items: read JSONL / JSON / CSV as it streams, validate the records, store their images,
and write their rows with COPY, a batch at a time, so that memory does not grow with the file.

All or nothing: the rows are written inside a savepoint of the caller's transaction, rolled back
when any record or image is refused (the import goes on reading to report the first problems).

Images go to a staging prefix (`staging/<import>/...`, written as they are checked, so their bytes
are never all in memory) and are promoted to their content-addressed keys only once everything has
been checked and every row written; an import refused on the way (a bad record, the second image
corrupt) deletes what it staged, so nothing is left behind. Staging, not "store, then delete on
rollback": images are shared by content, and a concurrent import of the same bytes may already have
found the object and pointed a row at it, so an object under its final key is never deleted. What
stays possible is a failed commit after the promotion: those objects are unreferenced but harmless,
and a later import of the same bytes reuses them. A process killed mid-import leaves its staged
objects under `staging/`, which nothing reads and the worker's periodic reconcile job deletes once
they are a day old (`sweep_staging`; no import runs that long).
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO
from urllib.parse import urlsplit
from uuid import uuid4

import sqlalchemy as sa
from pydantic import ValidationError
from pydantic_core import to_json
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.datasets import dataset_of
from app.datasets.task import is_external
from app.errors import Invalid, format_validation_error
from app.images import CheckedImage, ImageRejected, check_image
from app.lifecycle import ITEM_START, ItemStatus
from app.models import Asset
from app.services import sampling
from app.services.audit import record
from app.services.projects import get_project, stages_of
from app.services.pipeline import first_applying
from app.services.records import parse_records
from app.settings import Settings
from app.storage import S3Storage, Storage

MAX_REPORTED_ERRORS = 20
Progress = Callable[[str, int, int], None]


@dataclass
class ImportResult:
    created: int
    images: int
    new_images: int


# -- image sources ---------------------------------------------------------------


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
                raise ImageRejected(f"image is {info.file_size:,} bytes; the limit is {limit:,}")
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
            raise ImageRejected(f"image is {path.stat().st_size:,} bytes; the limit is {limit:,}")
        return path.read_bytes()

    def has_file_named(self, url: str) -> bool:
        """Whether the images given hold a file named like the URL's last path segment (an image
        a record names by URL is then stored from it; the URL itself stays in the record)."""
        return url_file_name(url) in self._by_name()

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
        raise Invalid(f"The zip expands to {total:,} bytes; the limit is {max_total:,}.")
    return zf


# -- staging -------------------------------------------------------------------------

STAGING = "staging"
STAGING_MAX_AGE_SECONDS = 24 * 3600


def sweep_staging(storage: Storage, older_than_seconds: float = STAGING_MAX_AGE_SECONDS) -> int:
    """Delete what imports that never finished (a killed process) left staged; returns how many objects."""
    return storage.sweep(STAGING, older_than_seconds)


class Staging:
    """The images one import stores, under a staging prefix until it is done (see the module docstring)."""

    def __init__(self, storage: Storage):
        self.storage = storage
        self.prefix = f"{STAGING}/{uuid4().hex}/"
        self.keys: dict[str, str] = {}  # final key -> staged key

    def put(self, image: CheckedImage) -> None:
        if image.storage_key not in self.keys and not self.storage.exists(image.storage_key):
            self.keys[image.storage_key] = self.prefix + image.storage_key
            self.storage.put(self.keys[image.storage_key], image.data, image.mime)

    def promote(self) -> None:
        for final, staged in self.keys.items():
            self.storage.promote(staged, final)

    def discard(self) -> None:
        for staged in self.keys.values():
            self.storage.delete(staged)


@contextmanager
def staged_images(storage: Storage) -> Iterator[Staging]:
    """Images stored in the block are promoted when it ends, and deleted if it raises."""
    staging = Staging(storage)
    try:
        yield staging
    except BaseException:
        staging.discard()
        raise
    staging.promote()


# -- the import ----------------------------------------------------------------------

# Records validated, checked and written together: an import holds one batch of records in memory.
BATCH = 5000

_ITEM_COLUMNS = "project_id, external_id, data, source, assets, group_id, stage_id, status, slots_left"

# The ids of the import's earlier batches and where each was, to name the first of a repeated id.
_IDS_TABLE = "CREATE TEMP TABLE import_ids (external_id text PRIMARY KEY, at text NOT NULL) ON COMMIT DROP"
_KNOWN = sa.text(
    "SELECT external_id, NULL FROM items WHERE project_id = :project AND external_id = ANY(CAST(:ids AS text[]))"
)
_KNOWN_OR_EARLIER = sa.text(
    """
    SELECT b.external_id, s.at FROM unnest(CAST(:ids AS text[])) AS b(external_id)
    LEFT JOIN import_ids s USING (external_id)
    WHERE s.at IS NOT NULL
       OR EXISTS (SELECT 1 FROM items i WHERE i.project_id = :project AND i.external_id = b.external_id)
    """
)


def import_items(
    session: Session,
    project_id: int,
    data: bytes | BinaryIO,
    filename: str,
    *,
    settings: Settings,
    storage: Storage,
    images: ImageSource | None = None,
    actor_id: int | None = None,
    progress: Progress | None = None,
) -> ImportResult:
    """Import the records of `data` (bytes, or a seekable binary file, read as it streams) into the
    project, all or nothing. Records are validated, their images checked and staged, and their rows
    written with COPY a batch at a time, inside a savepoint of the caller's transaction that is
    rolled back if any record or image is refused; the error lists the first problems, each naming
    its line (or record) and field. `progress` hears ("importing", bytes read, file size)."""
    project = get_project(session, project_id)
    stages = stages_of(session, project.id)
    file = io.BytesIO(data) if isinstance(data, bytes) else data
    say = progress or (lambda phase, done, total: None)
    start = file.tell()
    total = file.seek(0, io.SEEK_END) - start
    file.seek(start)
    records = parse_records(file, filename, max_json_bytes=settings.max_json_bytes, max_json_depth=settings.max_json_depth)
    with staged_images(storage) as staging, session.begin_nested(), _Import(session, project.id, stages, settings, images, staging) as run:
        try:
            for where, rec, source in records:
                if len(run.batch) == BATCH:
                    run.flush(last=False)
                    say("importing", file.tell() - start, total)
                run.add(where, rec, source)
                if run.error_count() >= MAX_REPORTED_ERRORS:
                    break
        except Invalid as exc:
            if not run.error_count():
                raise
            run.batch_errors.append((run.read + 1, exc.message))  # the file breaks off after the errors so far
        run.flush(last=True)
        if run.errors:
            raise Invalid(f"{filename}: nothing was imported.", run.errors[:MAX_REPORTED_ERRORS])
        if not run.created:
            raise Invalid(f"{filename} holds no records.")
        run.finish()
        sampling.draw(session, project.id)
        record(
            session,
            "project.import",
            actor_id=actor_id,
            target=f"project:{project.id}",
            file=filename,
            items=run.created,
            images=len(run.checked),
        )
    say("importing", total, total)
    return ImportResult(created=run.created, images=len(run.checked), new_images=run.new_images)


class _Import:
    """One import as it streams: the batch being read, the errors so far, what has been written.

    A full batch is flushed: its images are checked and its rows made ready while the server still
    takes in the previous batch's COPY, which is then ended; the batch's ids are checked against the
    project's items and the import's earlier batches (a temporary table, so that memory holds one
    batch whatever the file's size); then, while nothing has been refused, its rows go into a new
    COPY that stays open while the next batch is read. After the first error nothing more is
    written, but records are still read and validated to report up to MAX_REPORTED_ERRORS problems.
    `checked` (image reference -> sha256) grows with the number of distinct images, not of records.
    """

    def __init__(self, session: Session, project_id: int, stages: list, settings: Settings,
                 images: ImageSource | None, staging: Staging):
        self.session, self.project_id, self.stages = session, project_id, stages
        self.settings, self.images, self.staging = settings, images, staging
        self.first = stages[0]
        self.dataset = dataset_of(self.first.workflow)
        self.errors: list[str] = []
        self.read = 0  # records read so far, the good and the bad
        self.batch: list[tuple[int, str, Any, str]] = []  # (number, where, item, source)
        self.batch_errors: list[tuple[int, str]] = []  # (number of the record, message)
        self.seen: dict[str, str] = {}  # external id -> where, in this batch
        self.checked: dict[str, str] = {}  # image reference -> sha256
        self.created = self.new_images = 0
        self.earlier = False  # whether import_ids holds earlier batches' ids
        self.raw = session.connection().connection.driver_connection
        self.copying = ExitStack()  # the COPY the server may still be taking in

    def __enter__(self) -> _Import:
        return self

    def __exit__(self, *exc_info) -> None:
        self.copying.__exit__(*exc_info)  # a COPY ended by an error is cancelled

    def error_count(self) -> int:
        return len(self.errors) + len(self.batch_errors)

    def add(self, where: str, rec: dict[str, Any], source: str) -> None:
        self.read += 1
        try:
            item = self.dataset.parse_item(rec, self.first.config)
        except ValidationError as exc:
            self.batch_errors.extend((self.read, e) for e in format_validation_error(exc, prefix=f"{where}: "))
            return
        except Invalid as exc:
            self.batch_errors.append((self.read, f"{where}: {exc.message}"))
            return
        if item.id in self.seen:
            self.batch_errors.append((self.read, f"{where}: field 'id': '{item.id}' repeats the id of {self.seen[item.id]}"))
        self.seen[item.id] = where
        self.batch.append((self.read, where, item, source))

    def flush(self, *, last: bool) -> None:
        """Check the batch (images, then ids) and, while nothing was refused, start writing it."""
        rows, fresh = [], []
        if not self.error_count():
            fresh = self._check_images()
            if not self.batch_errors:
                rows = self._rows()
        self.copying.close()
        if self.seen:
            query = _KNOWN_OR_EARLIER if self.earlier else _KNOWN
            known = dict(self.session.execute(query, {"project": self.project_id, "ids": list(self.seen)}).all())
            for number, where, item, _ in self.batch:
                if item.id in known:
                    why = f"'{item.id}' repeats the id of {known[item.id]}" if known[item.id] else f"an item with id '{item.id}' is already in this project"
                    self.batch_errors.append((number, f"{where}: field 'id': {why}"))
            if not last:
                self._remember(known)
        self.errors.extend(message for _, message in sorted(self.batch_errors, key=lambda e: e[0]))
        if not self.errors:
            self.new_images += _record_assets(self.session, fresh)
            if rows:
                cursor = self.copying.enter_context(self.raw.cursor())
                copy = self.copying.enter_context(cursor.copy(f"COPY items ({_ITEM_COLUMNS}) FROM STDIN"))
                for row in rows:
                    copy.write_row(row)
                self.created += len(rows)
        self.batch, self.batch_errors, self.seen = [], [], {}

    def _remember(self, known: dict[str, str | None]) -> None:
        """Keep the batch's new ids, with where each was, for the later batches' check."""
        with self.raw.cursor() as cur:
            if not self.earlier:
                cur.execute(_IDS_TABLE)
                self.earlier = True
            with cur.copy("COPY import_ids (external_id, at) FROM STDIN") as copy:
                for external_id, where in self.seen.items():
                    if external_id not in known:
                        copy.write_row((external_id, where))

    def _check_images(self) -> list[CheckedImage]:
        """Check and stage the images the batch names for the first time (returned, to be recorded
        as assets); each record's image pointers (JSON pointer -> sha256) are kept for its row."""
        self.pointers: list[dict[str, str]] = []
        fresh: dict[str, CheckedImage] = {}
        for number, where, item, _ in self.batch:
            pointers = {}
            for pointer, ref in self.dataset.image_refs(item).items():
                if is_external(ref) and (self.images is None or not self.images.has_file_named(ref)):
                    continue  # an http(s) image stays a reference the browser loads; never fetched here
                if ref not in self.checked:
                    field = pointer.lstrip("/")
                    if self.images is None:
                        self.batch_errors.append((number, f"{where}: field '{field}': no images were given with this import"))
                        continue
                    try:
                        image = check_image(
                            self.images.read(ref),
                            max_bytes=self.settings.max_image_bytes,
                            max_pixels=self.settings.max_image_pixels,
                        )
                    except ImageRejected as exc:
                        self.batch_errors.append((number, f"{where}: field '{field}': {ref}: {exc}"))
                        continue
                    # Stored now so that image bytes are not all held in memory at once.
                    self.staging.put(image)
                    fresh[image.sha256] = replace(image, data=b"")
                    self.checked[ref] = image.sha256
                pointers[pointer] = self.checked[ref]
            self.pointers.append(pointers)
            if self.error_count() >= MAX_REPORTED_ERRORS:
                break
        return list(fresh.values())

    def _rows(self) -> list[tuple]:
        """The batch's rows for COPY; `data` is the schema's working copy, `source` the text as it came."""
        rows = []
        for (_, _, item, source), pointers in zip(self.batch, self.pointers, strict=True):
            data = item.model_dump(mode="json")
            stage_id, status, slots = _entry(self.stages, data)
            rows.append(
                (self.project_id, item.id, to_json(data).decode(), source, to_json(pointers).decode(),
                 item.group_id, stage_id, status, slots)
            )
        return rows

    def finish(self) -> None:
        self.copying.close()
        if self.earlier:
            self.session.execute(sa.text("DROP TABLE import_ids"))


def _entry(stages: list, data: dict) -> tuple[int, str, int]:
    """Where an imported item starts: the first stage whose task applies to it (the pipeline's
    routing), or done at once when none does (stage, status, open slots)."""
    stage = first_applying(stages, data, {})
    if stage is None:
        return stages[-1].id, ItemStatus.done.value, 0
    return stage.id, ITEM_START.value, sampling.entry_slots(stage)


def _text_array(values: list[str]):
    # One array parameter, not one parameter per value (PostgreSQL allows at most 65,535).
    return sa.literal(values, type_=ARRAY(sa.Text))


def _record_assets(session: Session, images: list[CheckedImage]) -> int:
    if not images:
        return 0
    known = set(
        session.scalars(sa.select(Asset.sha256).where(Asset.sha256 == sa.any_(_text_array([c.sha256 for c in images])))).all()
    )
    fresh = [c for c in images if c.sha256 not in known]
    if fresh:
        # One statement run over many rows: SQLAlchemy sends them in pages, under PostgreSQL's
        # 65,535 parameters per statement, and compiles the statement once.
        session.execute(
            pg_insert(Asset).on_conflict_do_nothing(index_elements=["sha256"]),
            [
                {
                    "sha256": c.sha256,
                    "storage_key": c.storage_key,
                    "mime": c.mime,
                    "width": c.width,
                    "height": c.height,
                    "size_bytes": c.size_bytes,
                }
                for c in fresh
            ],
        )
    return len(fresh)
