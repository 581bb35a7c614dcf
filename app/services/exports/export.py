"""Export runs: record an export, run it (the worker job, the CLI) to a local directory, an
`s3://bucket/prefix` target or the app's object storage while keeping its status and progress
current, and serve its files (one by one, or as one zip streamed while it is made). The formats
themselves are plugins in `app.exporters`; an S3 or storage target is written to a temporary
directory first and uploaded file by file, the manifest last.

Where an export made from the web lands: with the local storage backend, this server's data
directory (one machine); with the S3 backend, the bucket under `exports/{id}/` (target
`storage:exports/{id}`), so that any replica serves it whichever worker wrote it.
"""

from __future__ import annotations

import mimetypes
import shutil
import tempfile
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from app.errors import FULL_DISK_MESSAGES, DomainError, NotFound, full_disk
from app.exporters import (
    FORMATS,
    Progress,
    formats_for,
    get_format,
    project_dataset,
    write_export,
)
from app.exporters.rows import count_items
from app.models import Export, Project, SplitDefinition
from app.services.exports.targets import check_target, check_writable
from app.services.quality.gold_export import export_lines as gold_lines
from app.services.users.audit import record
from app.services.webhooks import events as webhook_events
from app.storage import Opened, Storage
from app.zipstream import ChunkSink

__all__ = ["FORMATS", "count_items", "create_export", "export_to", "exports_of", "find_file", "locate", "run_export", "zip_stream"]

STORED = "storage:"  # a target in the app's own object storage: `storage:exports/{id}`


def formats_of(session: Session, project_id: int) -> list[str]:
    """The export formats this project's dataset supports (the export page offers only those)."""
    return formats_for(project_dataset(session, project_id))


def upload(root: Path, target: str, settings) -> None:
    """Copy a finished export directory to `s3://bucket/prefix`, the manifest last."""
    import boto3

    bucket, _, prefix = target.removeprefix("s3://").partition("/")
    client = boto3.client("s3", endpoint_url=settings.s3_endpoint_url, region_name=settings.s3_region)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    files.sort(key=lambda p: p.name == "manifest.json")
    for path in files:
        key = "/".join(filter(None, [prefix.strip("/"), path.relative_to(root).as_posix()]))
        client.upload_file(str(path), bucket, key)


def export_to(
    session: Session,
    project_id: int,
    fmt: str,
    target: str,
    storage: Storage,
    settings,
    *,
    definition: SplitDefinition | None = None,
    progress: Progress | None = None,
    gold: bool = False,
) -> dict[str, Any]:
    """Export to a local directory, an `s3://bucket/prefix` target or a `storage:` key prefix
    (with `gold`, the gold items' gold.jsonl too)."""
    lines = gold_lines(session, project_id) if gold else None
    if target.startswith(STORED):
        with tempfile.TemporaryDirectory(prefix="vlcurate-export-") as tmp:
            manifest = write_export(session, project_id, fmt, Path(tmp), storage, definition=definition, progress=progress, gold=lines)
            store(Path(tmp), target.removeprefix(STORED), storage)
            return manifest
    if (check_target(target, directories=True) or "").startswith("s3://"):
        with tempfile.TemporaryDirectory(prefix="vlcurate-export-") as tmp:
            manifest = write_export(session, project_id, fmt, Path(tmp), storage, definition=definition, progress=progress, gold=lines)
            upload(Path(tmp), target, settings)
            return manifest
    with removed_on_failure(Path(target)):
        return write_export(session, project_id, fmt, Path(target), storage, definition=definition, progress=progress, gold=lines)


@contextmanager
def removed_on_failure(root: Path) -> Iterator[None]:
    """What an export writes under `root` is removed if it fails (a full disk leaves no half-written
    export behind); the directory, when it was there before, and what it held stay."""
    existed = root.exists()
    before = set(root.rglob("*")) if existed else set()
    try:
        yield
    except BaseException:
        if not existed:
            shutil.rmtree(root, ignore_errors=True)
        else:
            for path in sorted(set(root.rglob("*")) - before, reverse=True):  # files before the folders holding them
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
        raise


def store(root: Path, prefix: str, storage: Storage) -> None:
    """Copy a finished export directory into the object storage under `prefix`, the manifest last."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    files.sort(key=lambda p: p.name == "manifest.json")
    for path in files:
        storage.put_file(f"{prefix}/{path.relative_to(root).as_posix()}", path, media_type(path.name))


def media_type(name: str) -> str:
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


# -- export runs (the worker job, the CLI and the admin page) -------------------------------------------------


def local_dir(settings, export_id: int) -> Path:
    """Where an export made from the web lands on one machine (the local storage backend)."""
    return Path(settings.data_dir) / "exports" / str(export_id)


def default_target(settings, export_id: int) -> str:
    """Where an export with no target lands: the bucket when storage is S3 (every replica reads it), else this server's disk."""
    if settings.storage_backend == "s3":
        return f"{STORED}exports/{export_id}"
    return str(local_dir(settings, export_id))


def create_export(
    session: Session,
    project_id: int,
    fmt: str,
    *,
    settings,
    version: int | None = None,
    use_splits: bool = True,
    target: str | None = None,
    actor_id: int | None = None,
    gold: bool = False,
) -> Export:
    """Record an export to run: the split version (newest by default; none: one split "all"),
    the format, the target (an `s3://` prefix, a local directory, or the data directory), and
    whether the gold items go to a `gold.jsonl` of their own (off by default)."""
    from app.services.exports import splits

    project = session.get(Project, project_id)
    if project is None:
        raise NotFound(f"No project with id {project_id}.")
    get_format(fmt, project_dataset(session, project_id))
    definition = None
    if use_splits:
        has_any = session.scalar(sa.select(sa.func.count()).select_from(SplitDefinition).where(SplitDefinition.project_id == project_id))
        if has_any or version is not None:
            definition = splits.get_definition(session, project_id, version)
    target = check_target(target, directories=True)
    if target:
        check_writable(target)
    row = Export(project_id=project_id, definition_id=definition.id if definition else None, format=fmt, target=target or "", gold=gold, created_by=actor_id)
    session.add(row)
    session.flush()
    if not row.target:
        row.target = default_target(settings, row.id)
    record(session, "export.create", actor_id=actor_id, target=f"project:{project_id}", export=row.id, format=fmt,
           version=definition.version if definition else None, **({"gold": True} if gold else {}))
    return row


def run_export(sessions, storage: Storage, settings, export_id: int, progress: Progress | None = None) -> dict[str, Any]:
    """Run a recorded export: stream the items in one consistent snapshot, write, upload, and
    keep the export row's status and progress current for the admin page."""
    with sessions.begin() as s:
        row = s.get(Export, export_id)
        if row is None:
            raise NotFound(f"No export with id {export_id}.")
        row.status, row.error, row.done = "running", None, 0
        project_id, fmt, target, definition_id, gold = row.project_id, row.format, row.target, row.definition_id, row.gold
    last = [0.0]

    def report(done: int, total: int) -> None:
        if progress:
            progress(done, total)
        now = time.monotonic()
        if now - last[0] >= 1 or done == total:
            last[0] = now
            with sessions.begin() as t:
                t.execute(sa.update(Export).where(Export.id == export_id).values(done=done, total=total))

    try:
        with sessions() as s:
            s.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            definition = s.get(SplitDefinition, definition_id) if definition_id else None
            manifest = export_to(s, project_id, fmt, target, storage, settings, definition=definition, progress=report, gold=gold)
            s.rollback()  # read only
    except BaseException as exc:  # an interrupted CLI export is marked failed too
        message = exc.message if isinstance(exc, DomainError) else f"{type(exc).__name__}: {exc}".rstrip(": ")
        which = full_disk(exc)
        if which == "server":
            where = "the export's target" if target.startswith((STORED, "s3://")) else target
            message = f"The disk is full: free space on the disk that holds {where} and the server's temporary files, then export again. The partial files were removed."
        elif which:
            message = FULL_DISK_MESSAGES[which]
        with sessions.begin() as s:
            s.execute(sa.update(Export).where(Export.id == export_id).values(status="failed", error=message[:2000], finished_at=sa.func.now()))
        raise
    with sessions.begin() as s:
        total = sum(manifest["splits"].values())
        s.execute(
            sa.update(Export).where(Export.id == export_id)
            .values(status="done", manifest=manifest, done=total, total=total, finished_at=sa.func.now())
        )
        webhook_events.emit_for_project(s, project_id, "export.finished", {
            "export_id": export_id, "format": fmt, "splits": manifest["splits"], "records": total})
    return manifest


@dataclass(frozen=True)
class ExportFile:
    """One file of a finished export: on this server's disk (`path`) or in the object storage (`key`)."""

    name: str
    path: Path | None = None
    key: str | None = None

    @property
    def media_type(self) -> str:
        return media_type(self.name)

    def open(self, storage: Storage) -> Opened:
        if self.key is not None:
            return storage.open(self.key)
        fh = self.path.open("rb")
        return Opened(fh, self.path.stat().st_size)


def locate(session: Session, export_id: int, relative: str) -> ExportFile:
    """A file of a finished export by its id and path (only paths its manifest lists)."""
    row = session.get(Export, export_id)
    if row is None:
        raise NotFound(f"No export with id {export_id}.")
    return _located(row, relative)


def located_files(session: Session, export_id: int) -> list[ExportFile]:
    """Every file of a finished export in zip order: the manifest's files sorted, then the manifest."""
    first = locate(session, export_id, "manifest.json")  # done, downloadable, or 404
    row = session.get(Export, export_id)
    return [_located(row, name) for name in sorted(row.manifest["files"])] + [first]


def _located(row: Export, relative: str) -> ExportFile:
    if row.status != "done" or not row.manifest or relative not in row.manifest["files"] and relative != "manifest.json":
        raise NotFound("No such file in this export.")
    if row.target.startswith(STORED):
        return ExportFile(relative, key=f"{row.target.removeprefix(STORED)}/{relative}")
    if row.target.startswith("s3://"):
        raise NotFound(f"This export was written to {row.target}; download it from there.")
    return ExportFile(relative, path=Path(row.target) / PurePosixPath(relative))


def find_file(session: Session, export_id: int, relative: str) -> Path:
    """A file of a finished export on this server's disk, by its id and path (only paths its manifest lists)."""
    found = locate(session, export_id, relative)
    if found.path is None:
        raise NotFound("This export is in the object storage, not on this server's disk.")
    return found.path


def exports_of(session: Session, project_id: int, limit: int = 50) -> list[Export]:
    return list(session.scalars(sa.select(Export).where(Export.project_id == project_id).order_by(Export.id.desc()).limit(limit)))


def zip_stream(files: list[ExportFile], storage: Storage, chunk: int = 1 << 20) -> Iterator[bytes]:
    """The export's files as one zip, produced while it is sent: nothing is held in memory or
    written to disk beyond a chunk (stored, not recompressed: images and Parquet are already).
    The bytes depend only on the files' contents, wherever they are read from."""
    sink = ChunkSink()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for f in files:
            info = zipfile.ZipInfo(f.name, date_time=(1980, 1, 1, 0, 0, 0))  # no clock: same bytes each time
            with archive.open(info, "w", force_zip64=True) as dst:
                for data in f.open(storage).chunks(chunk):
                    dst.write(data)
                    yield from sink.drain()
        yield from sink.drain()
    yield from sink.drain()
