"""Importing items: read JSONL / JSON / CSV as it streams, validate the records, store their images,
and write their rows with COPY, a batch at a time (`app.services.imports.import_batches`), so that memory
does not grow with the file. Where images are read from and staged is `app.services.imports.import_sources`.

All or nothing: the rows are written inside a savepoint of the caller's transaction, rolled back
when any record or image is refused (the import goes on reading to report the first problems).

Images go to a staging prefix (`staging/<import>/...`; checked images wait in memory until 32 MB
of them do or their batch is written, so their bytes are never all in memory) and are promoted
only once everything has been checked and every row written: on a local directory the import's one
pack (`images/packs/<import>.pack`, each image named by its slice of it, `app.packs`), on S3 each
image to its content-addressed key. An image whose sha256 the assets table knows is not written
again. An import refused on the way (a bad record, the second image corrupt) deletes what it
staged, so nothing is left behind. Staging, not "store, then delete on rollback": on S3 images are
shared by content, and a concurrent import of the same bytes may already have found the object and
pointed a row at it, so an object under its final key is never deleted. What stays possible is a
failed commit after the promotion: the objects are then unreferenced (on S3 a later import of the
same bytes writes them again in place; a local pack no asset names is deleted by the worker's
periodic reconcile job once a day old, `sweep_packs`). A process killed mid-import leaves what it
staged under `staging/`, which nothing reads and the reconcile job deletes once it is a day old
(`sweep_staging`; no import runs that long).

An import checks its images but takes no perceptual hash: it records a request for the worker's
`hash_images` job in its own transaction, and the web handlers queue that job once the import has
committed (the reconcile job queues it should that fail), so hashes follow the storing within
seconds while a push spends nothing on them.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from sqlalchemy.orm import Session

from app.errors import Invalid
from app.services.annotation import sampling
from app.services.imports.import_batches import HASH_TASK, MAX_REPORTED_ERRORS, Batches, request_hashes
from app.services.imports.import_sources import ImageSource, Staging, staged_images, sweep_packs, sweep_staging
from app.services.imports.records import parse_records
from app.services.projects.projects import get_project, stages_of
from app.services.users.audit import record
from app.settings import Settings
from app.storage import Storage

__all__ = ["HASH_TASK", "ImageSource", "ImportResult", "Staging", "import_items", "sweep_packs", "sweep_staging"]

Progress = Callable[[str, int, int], None]


@dataclass
class ImportResult:
    created: int
    images: int
    new_images: int
    skipped: int = 0  # records whose id the project had already (with `skip_existing`)
    updated: int = 0  # of those, the items given their new record (with `update_existing`): a revision each


# -- the import ----------------------------------------------------------------------

# Records validated, checked and written together: an import holds one batch of records in memory.
# A batch's rows go in while the next batch is read, but the last one's are waited for; measured, a
# client's 10,000-record push went in a third faster in batches of 2,500 than of 5,000.
BATCH = 2500


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
    skip_existing: bool = False,
    update_existing: bool = False,
) -> ImportResult:
    """Import the records of `data` (bytes, or a seekable binary file, read as it streams) into the
    project, all or nothing. Records are validated, their images checked and staged, and their rows
    written with COPY a batch at a time, inside a savepoint of the caller's transaction that is
    rolled back if any record or image is refused; the error lists the first problems, each naming
    its line (or record) and field. `progress` hears ("importing", bytes read, file size).
    An id the project had before is an error, or with `skip_existing` (a client pushing a batch again,
    or resuming) that record is left out: the item stays as it is, whatever the record says now; with
    `update_existing` too, the item gets the record as a new revision where it differs (`record_revisions`)."""
    project = get_project(session, project_id)
    stages = stages_of(session, project.id)
    file = io.BytesIO(data) if isinstance(data, bytes) else data
    say = progress or (lambda phase, done, total: None)
    start = file.tell()
    total = file.seek(0, io.SEEK_END) - start
    file.seek(start)
    records = parse_records(file, filename, max_json_bytes=settings.max_json_bytes, max_json_depth=settings.max_json_depth)
    with staged_images(storage) as staging, session.begin_nested(), Batches(
        session, stages, settings, images, staging, skip_existing=skip_existing, update_existing=update_existing, actor_id=actor_id,
    ) as run:
        _add_records(run, records, lambda: say("importing", file.tell() - start, total))
        if run.errors:
            run.name_repeats(file, start, filename)
            raise Invalid(f"{filename}: nothing was imported.", run.errors[:MAX_REPORTED_ERRORS])
        run.finish()  # the last COPY ended: the connection takes queries again
        if run.checked:  # the images' perceptual hashes: the worker's, once this commits
            request_hashes(session, project.id)
        if not run.created:
            if run.skipped or run.updated:
                return ImportResult(created=0, images=len(run.checked), new_images=run.new_images, skipped=run.skipped, updated=run.updated)
            raise Invalid(f"{filename} holds no records.")
        sampling.draw(session, project.id)
        record(session, "project.import", actor_id=actor_id, target=f"project:{project.id}", file=filename,
               items=run.created, images=len(run.checked))
    say("importing", total, total)
    return ImportResult(created=run.created, images=len(run.checked), new_images=run.new_images, skipped=run.skipped,
                        updated=run.updated)


def _add_records(run: Batches, records, batch_written) -> None:
    """Add the records to the run, writing a batch at a time (`batch_written` hears each), until
    MAX_REPORTED_ERRORS problems; a file that breaks off after other problems is one more of them."""
    try:
        for where, rec, source in records:
            if len(run.batch) == BATCH:
                run.flush()
                batch_written()
            run.add(where, rec, source)
            if run.error_count() >= MAX_REPORTED_ERRORS:
                break
    except Invalid as exc:
        if not run.error_count():
            raise
        run.broken_off(exc.message)
    run.flush()
