"""Uploads: reading files with a size limit, and running an uploaded import (pages and API share it)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO

from fastapi import BackgroundTasks, Request, UploadFile
from sqlalchemy.orm import Session

from app.errors import Invalid, size_text
from app.services.imports import imports

CHUNK = 1024 * 1024


def spooled(upload: UploadFile, limit: int) -> BinaryIO:
    """The upload's spool file (python-multipart keeps a large one on disk), at its start, once
    its size is within the limit; the import reads it as it streams."""
    size = upload.file.seek(0, os.SEEK_END)
    if size > limit:
        raise Invalid(f"{upload.filename} is larger than the upload limit ({size_text(limit)}, VLCURATE_MAX_UPLOAD_BYTES).")
    upload.file.seek(0)
    return upload.file


def save_upload(upload: UploadFile, path: Path, limit: int) -> Path:
    size = 0
    with path.open("wb") as out:
        while chunk := upload.file.read(CHUNK):
            size += len(chunk)
            if size > limit:
                raise Invalid(f"{upload.filename} is larger than the upload limit ({size_text(limit)}, VLCURATE_MAX_UPLOAD_BYTES).")
            out.write(chunk)
    return path


def run_upload_import(
    request: Request, session: Session, project_id: int, file: UploadFile, images: UploadFile | None, actor_id: int,
    after: BackgroundTasks, *, skip_existing: bool = False, update_existing: bool = False,
) -> imports.ImportResult:
    """Import an uploaded records file, with an optional zip of the images it names, in the
    request's transaction; the worker's job that hashes the images is queued once it has committed
    (`after`: the request's background tasks). Handlers that call it are plain functions: FastAPI
    runs them in its thread pool, so reading the spooled upload files blocks no one."""
    settings = request.app.state.settings
    storage = request.app.state.storage
    records = spooled(file, settings.max_upload_bytes)
    with tempfile.TemporaryDirectory() as tmp:
        zip_path = None
        if images is not None and images.filename:
            zip_path = save_upload(images, Path(tmp) / "images.zip", settings.max_upload_bytes)
        source = imports.ImageSource(settings, storage, zip_path=zip_path)
        try:
            result = imports.import_items(
                session,
                project_id,
                records,
                file.filename or "upload.jsonl",
                settings=settings,
                storage=storage,
                images=source,
                actor_id=actor_id,
                skip_existing=skip_existing,
                update_existing=update_existing,
            )
        finally:
            source.close()
    if result.images:
        from app.worker import jobs

        after.add_task(jobs.defer_hashes, settings, project_id)
    return result
