"""One import's records a batch at a time: validated, their ids and images checked, and their rows
written with COPY while the next batch is read (`app.services.imports.imports.import_items` drives it).

A full batch is flushed: its images are checked and staged and its rows made ready while the server
still takes in the previous batch's COPY, which is then ended; the batch's ids are looked up among
the project's items, which holds the import's earlier batches as well, so memory keeps one batch
whatever the file's size; then, while nothing has been refused, its rows go into a new COPY that
stays open while the next batch is read. After the first problem nothing more is written, but
records are still read and validated to report up to MAX_REPORTED_ERRORS problems. Where the first
record of a repeated id was is found only then, by reading the file again (`name_repeats`).
`checked` (image reference -> sha256) grows with the number of distinct images, not of records.

A record is validated, routed and turned into its row's JSON text as it is read, and the batch
keeps only that (a tuple of strings and numbers, `Entry`), not the validated model, which the
garbage collector would walk again and again; while an import runs the collector's youngest
generation is collected rarely (`app.tuning.fewer_collections`; figures in docs/performance.md).
"""

from __future__ import annotations

from contextlib import ExitStack, closing, suppress
from dataclasses import replace
from types import SimpleNamespace
from typing import Any, BinaryIO, NamedTuple

import sqlalchemy as sa
from pydantic import ValidationError
from pydantic_core import to_json
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.datasets import dataset_of, get_workflow
from app.datasets.dataset import Dataset
from app.datasets.workflow import Workflow, is_external
from app.decision import first_applying
from app.errors import Invalid, format_validation_error
from app.images import CheckedImage, ImageRejected, check_image
from app.lifecycle import ITEM_START, ItemStatus
from app.models import JobRequest
from app.services.annotation import sampling
from app.services.imports import record_revisions
from app.services.imports.import_sources import ImageSource, Staging
from app.services.imports.records import parse_records
from app.settings import Settings
from app.tuning import fewer_collections

MAX_REPORTED_ERRORS = 20
HASH_TASK = "hash_images"  # the worker's job that takes the perceptual hashes of a project's new images

_STORED = sa.text("SELECT sha256, storage_key FROM assets WHERE sha256 = ANY(CAST(:shas AS text[]))")
_ITEM_COLUMNS = "project_id, external_id, data, source, assets, group_id, stage_id, status, slots_left"
# Ids the project has, each with whether it had it before this import (ids come from a sequence, so
# this import's rows are above `before`; without `before` the flag is null).
_KNOWN = sa.text(
    "SELECT external_id, id <= CAST(:before AS bigint) FROM items"
    " WHERE project_id = :project AND external_id = ANY(CAST(:ids AS text[]))"
)


class Entry(NamedTuple):
    """A valid record of the batch, ready for its row."""

    number: int  # record number in the file
    where: str
    id: str
    group_id: str | None
    data: str  # the schema's working copy as JSON text
    refs: tuple[tuple[str, str], ...]  # (JSON pointer, image reference) of each image it names
    route: tuple[int, str, int]  # stage, status, open slots
    source: str


class Batches:
    """The batch being read, the problems so far (in record order), and what has been written."""

    def __init__(self, session: Session, stages: list, settings: Settings, images: ImageSource | None, staging: Staging,
                 *, skip_existing: bool = False, update_existing: bool = False, actor_id: int | None = None):
        self.session, self.stages, self.settings, self.images, self.staging = session, stages, settings, images, staging
        self.first = stages[0]
        self.project_id = self.first.project_id
        self.dataset = dataset_of(self.first.workflow)
        self.errors: list[str] = []
        self.repeats: dict[int, tuple[int, str, str]] = {}  # index in errors -> (record number, where, id)
        self.read = 0  # records read so far, the good and the bad
        self.batch: list[Entry] = []
        # (record number, message, (where, id) of a record whose id was found among the items)
        self.batch_errors: list[tuple[int, str, tuple[str, str] | None]] = []
        self.seen: dict[str, str] = {}  # external id -> where, in this batch
        self.checked: dict[str, str] = {}  # image reference -> sha256
        self.created = self.new_images = self.skipped = self.updated = 0
        # With update_existing (and skip_existing), a record whose id the project had before the import
        # replaces that item's record as a new revision (`record_revisions`), its images checked as any.
        self.update_existing, self.actor_id, self.fresh = update_existing and skip_existing, actor_id, 0
        # With skip_existing, records whose id the project had before the import are left out.
        self.before = (
            session.scalar(sa.text("SELECT coalesce(max(id), 0) FROM items WHERE project_id = :p"), {"p": self.project_id})
            if skip_existing else None
        )
        # The stages' settings read once (the ORM's attributes are slow to read a record at a time).
        self.routes = [SimpleNamespace(id=s.id, workflow=s.workflow, config=s.config) for s in stages]
        self.slots = {s.id: sampling.entry_slots(s) for s in stages}
        self.done_in = stages[-1].id
        # Shortcuts where the dataset and the first stage's workflow keep the base class's behaviour: a
        # workflow that does not override `applies` takes every item, and the base `image_refs` reads
        # the image fields of the dumped item, which `add` has at hand (dumping twice was measured
        # at a tenth of a push's server time, routing at another).
        self.every_item = type(get_workflow(self.first.workflow)).applies is Workflow.applies
        self.refs_of_dump = type(self.dataset).image_refs is Dataset.image_refs
        self.raw = session.connection().connection.driver_connection
        self.copying = ExitStack()  # the COPY the server may still be taking in
        self.collecting = fewer_collections()
        staging.lookup = self._stored

    def _stored(self, shas: list[str]) -> dict[str, str]:
        """The storage keys of those of these images that are stored already (sha256 -> key)."""
        self.copying.close()  # the connection answers no query while a COPY is open
        return dict(self.session.execute(_STORED, {"shas": shas}).all())

    def __enter__(self) -> Batches:
        self.collecting.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            self.copying.__exit__(*exc_info)  # a COPY ended by an error is cancelled
        finally:
            self.collecting.__exit__(*exc_info)

    def error_count(self) -> int:
        return len(self.errors) + len(self.batch_errors)

    def add(self, where: str, rec: dict[str, Any], source: str) -> None:
        self.read += 1
        try:
            item = self.dataset.parse_item(rec, self.first.config)
        except ValidationError as exc:
            self.batch_errors.extend((self.read, e, None) for e in format_validation_error(exc, prefix=f"{where}: "))
            return
        except Invalid as exc:
            self.batch_errors.append((self.read, f"{where}: {exc.message}", None))
            return
        if item.id in self.seen:
            self.batch_errors.append((self.read, f"{where}: field 'id': '{item.id}' repeats the id of {self.seen[item.id]}", None))
        self.seen[item.id] = where
        data = item.model_dump(mode="json")
        if self.refs_of_dump:
            refs = tuple((pointer, ref) for pointer in self.dataset.image_fields if (ref := data.get(pointer.lstrip("/"))))
        else:
            refs = tuple(self.dataset.image_refs(item).items())
        self.batch.append(Entry(self.read, where, item.id, item.group_id, to_json(data).decode(), refs, self._entry(data), source))

    def _entry(self, data: dict[str, Any]) -> tuple[int, str, int]:
        """Where an imported item starts: the first stage whose workflow applies to it (the pipeline's
        routing), or done at once when none does (stage, status, open slots)."""
        stage = self.routes[0] if self.every_item else first_applying(self.routes, data, {})
        if stage is None:
            return self.done_in, ItemStatus.done.value, 0
        return stage.id, ITEM_START.value, self.slots[stage.id]

    def broken_off(self, message: str) -> None:
        """The file cannot be read past the records so far (it is not JSON there, say)."""
        self.batch_errors.append((self.read + 1, message, None))

    def flush(self) -> None:
        """Check the batch (images, then ids) and, while nothing was refused, start writing it."""
        rows, fresh, revised = [], [], []
        known = None
        if self.before is not None and self.seen:
            known = self._known()
            kept = [entry for entry in self.batch if not known.get(entry.id)]
            revised = [entry for entry in self.batch if known.get(entry.id)] if self.update_existing else []
            self.skipped += len(self.batch) - len(kept) - len(revised)
            self.batch = kept + revised
        self.fresh = len(self.batch) - len(revised)
        if not self.error_count():
            fresh = self._check_images()
            if not self.batch_errors:
                rows = self._rows()
        if self.seen:
            if known is None:  # looked up once the COPY of the batch before has ended
                known = self._known()
            for entry in self.batch[:self.fresh]:
                if entry.id in known:
                    message = f"{entry.where}: field 'id': '{entry.id}' is already in this project"
                    self.batch_errors.append((entry.number, message, (entry.where, entry.id)))
        self.copying.close()
        for number, message, repeated in sorted(self.batch_errors, key=lambda e: e[0]):
            if repeated is not None:
                self.repeats[len(self.errors)] = (number, *repeated)
            self.errors.append(message)
        if not self.errors:
            self.staging.write()
            self.new_images += _record_assets(self.session, fresh, self.staging.keys)
            if rows[self.fresh:]:  # records of items there before: a revision each where the record changed
                changed = record_revisions.revise(self.session, self.project_id, rows[self.fresh:], self.actor_id)
                self.updated += changed
                self.skipped += len(rows) - self.fresh - changed
                rows = rows[:self.fresh]
            if rows:
                cursor = self.copying.enter_context(self.raw.cursor())
                copy = self.copying.enter_context(cursor.copy(f"COPY items ({_ITEM_COLUMNS}) FROM STDIN"))
                for row in rows:
                    copy.write_row(row)
                self.created += len(rows)
        self.batch, self.batch_errors, self.seen = [], [], {}

    def _known(self) -> dict[str, bool | None]:
        """The batch's ids that the project has: whether it had each before this import."""
        self.copying.close()  # the connection answers no query while a COPY is open
        found = self.session.execute(_KNOWN, {"project": self.project_id, "ids": list(self.seen), "before": self.before})
        return {external_id: before for external_id, before in found}

    def _check_images(self) -> list[CheckedImage]:
        """Check and stage the images the batch names for the first time (returned, to be recorded
        as assets); each record's image pointers (JSON pointer -> sha256) are kept for its row."""
        self.pointers: list[dict[str, str] | None] = []
        fresh: dict[str, CheckedImage] = {}
        for number, where, _, _, _, refs, _, _ in self.batch:
            pointers = {}
            for pointer, ref in refs:
                if is_external(ref) and (self.images is None or not self.images.has_file_named(ref)):
                    continue  # an http(s) image stays a reference the browser loads; never fetched here
                if ref not in self.checked:
                    field = pointer.lstrip("/")
                    if self.images is None:
                        self.batch_errors.append((number, f"{where}: field '{field}': no images were given with this import", None))
                        continue
                    try:
                        image = check_image(
                            self.images.read(ref),
                            max_bytes=self.settings.max_image_bytes,
                            max_pixels=self.settings.max_image_pixels,
                        )
                    except ImageRejected as exc:
                        self.batch_errors.append((number, f"{where}: field '{field}': {ref}: {exc}", None))
                        continue
                    # Staged now (written once PENDING_BYTES wait, or at the flush), so that image
                    # bytes are not all held in memory at once.
                    self.staging.put(image)
                    fresh[image.sha256] = replace(image, data=b"")
                    self.checked[ref] = image.sha256
                pointers[pointer] = self.checked[ref]
            self.pointers.append(pointers or None)
            if self.error_count() >= MAX_REPORTED_ERRORS:
                break
        return list(fresh.values())

    def _rows(self) -> list[tuple]:
        """The batch's rows for COPY; `data` is the schema's working copy, `source` the text as it came."""
        return [
            (self.project_id, e.id, e.data, e.source, to_json(pointers).decode() if pointers else "{}", e.group_id, *e.route)
            for e, pointers in zip(self.batch, self.pointers, strict=True)
        ]

    def finish(self) -> None:
        self.copying.close()

    def name_repeats(self, file: BinaryIO, start: int, filename: str) -> None:
        """For each id found among the project's items, say whether it repeats an earlier record of
        this import (and which) or was there before, reading the file again up to the last of them."""
        if not self.repeats:
            return
        wanted = {item_id for _, _, item_id in self.repeats.values()}
        last = max(number for number, _, _ in self.repeats.values())
        first: dict[str, tuple[int, str]] = {}
        file.seek(start)
        limits = {"max_json_bytes": self.settings.max_json_bytes, "max_json_depth": self.settings.max_json_depth}
        # The records needed come before any place where the file breaks off.
        with suppress(Invalid), closing(parse_records(file, filename, **limits)) as records:
            for number, (where, rec, _) in enumerate(records, 1):
                if number > last:
                    break
                with suppress(ValidationError, Invalid):
                    if (item_id := self.dataset.parse_item(rec, self.first.config).id) in wanted:
                        first.setdefault(item_id, (number, where))
        for index, (number, where, item_id) in self.repeats.items():
            earlier, at = first.get(item_id, (number, where))
            why = f"'{item_id}' repeats the id of {at}" if earlier < number else f"an item with id '{item_id}' is already in this project"
            self.errors[index] = f"{where}: field 'id': {why}"


_INSERT_ASSETS = sa.text(
    "INSERT INTO assets (sha256, storage_key, mime, width, height, size_bytes)"
    " SELECT * FROM unnest(CAST(:sha AS text[]), CAST(:key AS text[]), CAST(:mime AS text[]), CAST(:width AS int[]),"
    " CAST(:height AS int[]), CAST(:size AS bigint[]))"
    " ON CONFLICT (sha256) DO NOTHING"
)


def _record_assets(session: Session, images: list[CheckedImage], keys: dict[str, str]) -> int:
    """Record the images first named by this import as assets (`keys`: where each is stored), in one
    statement (an image stored before is left as it is); returns how many assets are new. Their
    perceptual hashes are the worker's (`request_hashes`)."""
    if not images:
        return 0
    columns = {"sha": [c.sha256 for c in images], "key": [keys[c.sha256] for c in images], "mime": [c.mime for c in images],
               "width": [c.width for c in images], "height": [c.height for c in images], "size": [c.size_bytes for c in images]}
    return session.execute(_INSERT_ASSETS, columns).rowcount


def request_hashes(session: Session, project_id: int) -> None:
    """Ask, in the import's transaction, for the worker's `hash_images` job over the project: the
    request commits with the import's rows, and the reconcile job queues it should the defer made
    after the commit fail. One request a project waits at a time."""
    session.execute(pg_insert(JobRequest).values(task=HASH_TASK, key=project_id).on_conflict_do_nothing())
