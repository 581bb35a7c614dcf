"""Importing items: parse JSONL / JSON / CSV, validate every record, store images, insert in one go.

All or nothing: every record is validated and every image checked before the first row is
written, and rows are written with COPY inside the caller's transaction.

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

import json
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit
from uuid import uuid4

import sqlalchemy as sa
from pydantic import ValidationError
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.datasets import dataset_of
from app.datasets.task import is_external
from app.errors import Invalid, format_validation_error
from app.images import CheckedImage, ImageRejected, check_image
from app.lifecycle import ITEM_START, ItemStatus
from app.models import Asset, Item
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
    skipped: int = 0  # records whose id the project had already (with `skip_existing`)


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


def import_items(
    session: Session,
    project_id: int,
    data: bytes,
    filename: str,
    *,
    settings: Settings,
    storage: Storage,
    images: ImageSource | None = None,
    actor_id: int | None = None,
    progress: Progress | None = None,
    skip_existing: bool = False,
) -> ImportResult:
    """Import every record, or none. An id the project has already is an error, or with
    `skip_existing` (a client pushing a batch again, or resuming) that record is left out: the item
    stays as it is, whatever the record says now."""
    project = get_project(session, project_id)
    stages = stages_of(session, project.id)
    first = stages[0]
    dataset = dataset_of(first.workflow)
    say = progress or (lambda phase, done, total: None)

    # 1. Validate every record; report up to MAX_REPORTED_ERRORS problems, each with its line.
    records = list(parse_records(data, filename, max_json_bytes=settings.max_json_bytes, max_json_depth=settings.max_json_depth))
    if not records:
        raise Invalid(f"{filename} holds no records.")
    errors: list[str] = []
    parsed = []
    seen: dict[str, str] = {}
    for n, (where, rec, source) in enumerate(records, 1):
        try:
            item = dataset.parse_item(rec, first.config)
        except ValidationError as exc:
            errors.extend(format_validation_error(exc, prefix=f"{where}: "))
        except Invalid as exc:
            errors.append(f"{where}: {exc.message}")
        else:
            if item.id in seen:
                errors.append(f"{where}: field 'id': '{item.id}' repeats the id of {seen[item.id]}")
            seen[item.id] = where
            parsed.append((where, item, source))
        if len(errors) >= MAX_REPORTED_ERRORS:
            break
        if n % 5000 == 0:
            say("validating", n, len(records))
    say("validating", len(records), len(records))
    if not errors:
        existing = session.scalars(
            sa.select(Item.external_id).where(Item.project_id == project.id, Item.external_id == sa.any_(_text_array(list(seen))))
        ).all()
        if skip_existing and existing:
            known = set(existing)
            parsed = [p for p in parsed if p[1].id not in known]
        else:
            for ext in existing[:MAX_REPORTED_ERRORS]:
                errors.append(f"{seen[ext]}: field 'id': an item with id '{ext}' is already in this project")
    if errors:
        raise Invalid(f"{filename}: nothing was imported.", errors[:MAX_REPORTED_ERRORS])
    skipped = len(seen) - len(parsed)
    if not parsed:
        return ImportResult(created=0, images=0, new_images=0, skipped=skipped)

    with staged_images(storage) as staging:
        # 2. Check and store every image the records name.
        checked: dict[str, CheckedImage] = {}
        item_assets: list[dict[str, str]] = []
        for i, (where, item, _) in enumerate(parsed, 1):
            refs = dataset.image_refs(item)
            pointers = {}
            for pointer, ref in refs.items():
                if is_external(ref) and (images is None or not images.has_file_named(ref)):
                    continue  # an http(s) image stays a reference the browser loads; never fetched here
                if ref not in checked:
                    if images is None:
                        errors.append(f"{where}: field '{pointer.lstrip('/')}': no images were given with this import")
                        continue
                    try:
                        image = check_image(
                            images.read(ref),
                            max_bytes=settings.max_image_bytes,
                            max_pixels=settings.max_image_pixels,
                        )
                    except ImageRejected as exc:
                        errors.append(f"{where}: field '{pointer.lstrip('/')}': {ref}: {exc}")
                        continue
                    # Stored now so that image bytes are not all held in memory at once.
                    staging.put(image)
                    checked[ref] = replace(image, data=b"")
                pointers[pointer] = checked[ref].sha256
            item_assets.append(pointers)
            if len(errors) >= MAX_REPORTED_ERRORS:
                break
            if refs:
                say("images", i, len(parsed))
        if errors:
            raise Invalid(f"{filename}: nothing was imported.", errors[:MAX_REPORTED_ERRORS])

        new_images = _record_assets(session, list({c.sha256: c for c in checked.values()}.values()))

        # 3. Write the items with COPY.
        raw = session.connection().connection.driver_connection
        with raw.cursor() as cur:
            with cur.copy(
                "COPY items (project_id, external_id, data, source, assets, group_id, stage_id, status, slots_left)"
                " FROM STDIN"
            ) as copy:
                for i, ((_, item, source), pointers) in enumerate(zip(parsed, item_assets, strict=True), 1):
                    data_json = item.model_dump(mode="json")
                    stage_id, status, slots = _entry(stages, data_json)
                    copy.write_row(
                        (
                            project.id,
                            item.id,
                            json.dumps(data_json, ensure_ascii=False),
                            source,
                            json.dumps(pointers),
                            item.group_id,
                            stage_id,
                            status,
                            slots,
                        )
                    )
                    if i % 10000 == 0:
                        say("writing", i, len(parsed))
        say("writing", len(parsed), len(parsed))
        sampling.draw(session, project.id)
        record(
            session,
            "project.import",
            actor_id=actor_id,
            target=f"project:{project.id}",
            file=filename,
            items=len(parsed),
            images=len(checked),
        )
        result = ImportResult(created=len(parsed), images=len(checked), new_images=new_images, skipped=skipped)
    return result


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
