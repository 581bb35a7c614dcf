"""Every API operation once, as a sans-I/O generator (see `_protocol`); `Client` and `AsyncClient` run them."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from vlcurate import records as rec
from vlcurate._dataset import image_page
from vlcurate._progress import progress_bar
from vlcurate._protocol import NEXT_LINE, Call, Emit, Op, Parallel, Reply, Sleep, T, expect_json
from vlcurate.errors import NotFound, VlcurateError
from vlcurate.models import (
    AgreementReport,
    ClaimOut,
    DraftEvaluation,
    DraftKindOut,
    ExportOut,
    FinalRecord,
    ItemOut,
    ItemPage,
    LeakJob,
    LeakReport,
    ProjectOut,
    ProjectSettings,
    PromptOut,
    RecordsOut,
    ReviewOut,
    ReviewRow,
    RunOut,
    SplitVersionListed,
    SplitVersionOut,
    SubmitOut,
    SuggestionsOut,
)

# Records a request: large batches where records come without image files (the server's import then
# writes one batch while it reads the next), smaller ones where each carries its images.
RECORD_BATCH = 10_000
IMAGE_BATCH = 2000
SUGGESTION_BATCH = 2000  # the server takes at most 5,000 a request
PAGE = 500
ProjectRef = int | str | ProjectOut  # a project by id, by name, or as the client returned it
IN_FLIGHT = 2  # requests at once where a push or a pull with images makes many (the server has threads to spare)
IMAGE_PAGE = 1000  # images a request when finals are pulled with their images (the server's most)


class Operations:
    """The API's operations; each returns a generator driven by a client."""

    # -- projects --------------------------------------------------------------------------------

    def _projects(self, archived: bool = False) -> Op[list[ProjectOut]]:
        reply = yield Call("GET", "/projects", params={"archived": "true"} if archived else None)
        return [ProjectOut.model_validate(p) for p in reply.json()]

    def _project_id(self, project: ProjectRef) -> Op[int]:
        """A project given by id or by name."""
        if isinstance(project, int):
            return project
        if isinstance(project, ProjectOut):
            return project.id
        found = [p for p in (yield from self._projects()) if p.name == project]
        if not found:
            raise NotFound(f"No project named {project!r}.", status=404)
        return found[0].id

    def _project(self, project: ProjectRef) -> Op[ProjectOut]:
        pid = yield from self._project_id(project)
        reply = yield Call("GET", f"/projects/{pid}")
        return ProjectOut.model_validate(reply.json())

    def _create_project(self, name: str, stages: list[dict[str, Any]], description: str = "", workspace: int | str | None = None) -> Op[ProjectOut]:
        body: dict[str, Any] = {"name": name, "description": description, "stages": stages}
        if workspace is not None:
            body["workspace_id"] = yield from self._workspace_id(workspace)  # type: ignore[attr-defined]  # WorkspaceOps has it
        reply = yield Call("POST", "/projects", json=body)
        return ProjectOut.model_validate(reply.json())

    def _settings(self, project: ProjectRef) -> Op[ProjectSettings]:
        pid = yield from self._project_id(project)
        reply = yield Call("GET", f"/projects/{pid}/settings")
        return ProjectSettings.model_validate(reply.json())

    def _stage_id(self, stage: int | str, project: ProjectRef | None = None) -> Op[int]:
        """A stage by id, or by name (or task name) within `project`."""
        if isinstance(stage, int):
            return stage
        if project is None:
            raise ValueError("A stage given by name needs its project.")
        settings = yield from self._settings(project)
        for s in settings.stages:
            if stage in (s.name, s.workflow):
                return s.id
        raise NotFound(f"No stage {stage!r} in project {settings.name!r}.", status=404)

    # -- records and suggestions -----------------------------------------------------------------

    def _push_records(self, project: ProjectRef, records: Any, images: str | Path | None = None,
                      batch_size: int | None = None, progress: bool = True, on_conflict: str = "skip") -> Op[RecordsOut]:
        if on_conflict not in ("skip", "update"):
            raise ValueError(f"on_conflict is 'skip' or 'update', not {on_conflict!r}")
        settings = yield from self._settings(project)
        if batch_size is None:
            batch_size = IMAGE_BATCH if images is not None or rec.has_image_column(records) else RECORD_BATCH
        source = rec.ImageSource(images)
        total = RecordsOut(created=0, images=0, new_images=0, skipped=0, updated=0)
        bar = progress_bar(progress, rec.total_of(records), "push")
        packed = rec.packed_batches(rec.plain_records(records), batch_size, settings.image_fields, source)
        try:
            group: list[tuple[int, Call]] = []
            for count, body, zipped in packed:
                files = {"file": ("records.jsonl", body, "application/x-ndjson")}
                if zipped is not None:
                    files["images"] = ("images.zip", zipped, "application/zip")
                # Idempotent: records whose id the project has are left out (or updated to the same
                # record, which makes no revision), so a retry adds nothing twice.
                call = Call("POST", f"/projects/{settings.id}/records", files=files, data={"on_conflict": on_conflict}, idempotent=True)
                group.append((count, call))
                if len(group) == IN_FLIGHT:
                    yield from self._send_batches(group, total, bar)
                    group = []
            if group:
                yield from self._send_batches(group, total, bar)
        finally:
            packed.close()  # waits for the batch being packed, which may be reading `source`
            source.close()
            if bar is not None:
                bar.close()
        return total

    def _send_batches(self, group: list[tuple[int, Call]], total: RecordsOut, bar: Any) -> Op[None]:
        """Batches of records sent at once (the server imports them in two threads: their images'
        decoding and storing overlap); their counts are added to `total`. A batch refused by a server
        error is sent once more alone: two batches naming the same new id or image at once can
        collide, and sent again, the one that lost finds them there."""
        replies = yield Parallel([call for _, call in group])
        for (count, call), reply in zip(group, replies, strict=True):
            if isinstance(reply, VlcurateError):
                if len(group) == 1 or reply.status < 500:
                    raise reply
                reply = yield call
            done = RecordsOut.model_validate(reply.json())
            for name in ("created", "images", "new_images", "skipped", "updated"):
                setattr(total, name, getattr(total, name) + getattr(done, name))
            if bar is not None:
                bar.update(count)

    def _push_suggestions(self, stage: int | str, model: str, version: str, rows: Iterable[dict[str, Any]],
                          project: ProjectRef | None = None, kind: str | None = None, batch_size: int = SUGGESTION_BATCH) -> Op[SuggestionsOut]:
        sid = yield from self._stage_id(stage, project)
        total = SuggestionsOut(stored=0, unchanged=0)
        for batch in rec.batches(rows, batch_size):
            body = [{"model": model, "model_version": version, **({"kind": kind} if kind else {}), **row} for row in batch]
            # Idempotent by model version on the server: the same rows again change nothing.
            reply = yield Call("POST", f"/stages/{sid}/suggestions", json={"suggestions": body}, idempotent=True)
            done = SuggestionsOut.model_validate(reply.json())
            total.stored += done.stored
            total.unchanged += done.unchanged
        return total

    # -- items -----------------------------------------------------------------------------------

    def _items(self, project: ProjectRef, *, stage: int | None = None, status: str | None = None,
               annotator: int | None = None, text: str | None = None, page_size: int = PAGE) -> Op[None]:
        pid = yield from self._project_id(project)
        params: dict[str, Any] = {"limit": page_size}
        for name, value in (("stage", stage), ("status", status), ("annotator", annotator), ("text", text)):
            if value not in (None, ""):
                params[name] = value
        while True:
            reply = yield Call("GET", f"/projects/{pid}/items", params=params)
            page = ItemPage.model_validate(reply.json())
            for row in page.items:
                yield Emit(row)
            if page.next is None:
                return None
            params["after"] = page.next

    def _item(self, item_id: int) -> Op[ItemOut]:
        reply = yield Call("GET", f"/items/{item_id}")
        return ItemOut.model_validate(reply.json())

    # -- annotating and reviewing ------------------------------------------------------------------

    def _claim(self, stage: int) -> Op[ClaimOut | None]:
        reply = yield Call("POST", f"/stages/{stage}/claim", idempotent=True)  # gives back a held lease
        return None if reply.status == 204 else ClaimOut.model_validate(reply.json())

    def _submit(self, assignment_id: int, payload: dict[str, Any], idempotency_key: str | None = None,
                seconds_spent: float | None = None, active_seconds: float | None = None) -> Op[SubmitOut]:
        body = {"payload": payload, "idempotency_key": idempotency_key or uuid.uuid4().hex, "seconds_spent": seconds_spent,
                "active_seconds": active_seconds}
        # The key makes a retried submit a replay, never a second annotation.
        reply = yield Call("POST", f"/assignments/{assignment_id}/submit", json=body, idempotent=True)
        return SubmitOut.model_validate(reply.json())

    def _review_queue(self, stage: int) -> Op[list[ReviewRow]]:
        reply = yield Call("GET", f"/stages/{stage}/review")
        return [ReviewRow.model_validate(r) for r in reply.json()]

    def _resolve(self, stage: int, item_id: int, *, accept: int | None = None, payload: dict[str, Any] | None = None,
                 comment: str = "") -> Op[ReviewOut]:
        body = {"accept_annotation_id": accept, "payload": payload, "comment": comment}
        reply = yield Call("POST", f"/stages/{stage}/review/{item_id}", json=body)
        return ReviewOut.model_validate(reply.json())

    def _send_back(self, stage: int, item_id: int, comment: str) -> Op[ReviewOut]:
        reply = yield Call("POST", f"/stages/{stage}/review/{item_id}/send-back", json={"comment": comment})
        return ReviewOut.model_validate(reply.json())

    def _take_back(self, stage: int, item_id: int) -> Op[ReviewOut]:
        reply = yield Call("POST", f"/stages/{stage}/review/{item_id}/take-back")
        return ReviewOut.model_validate(reply.json())

    # -- splits, finals and exports ----------------------------------------------------------------

    def _splits(self, project: ProjectRef) -> Op[list[SplitVersionListed]]:
        pid = yield from self._project_id(project)
        reply = yield Call("GET", f"/projects/{pid}/splits")
        return [SplitVersionListed.model_validate(r) for r in reply.json()]

    def _save_splits(self, project: ProjectRef, config: dict[str, Any]) -> Op[SplitVersionOut]:
        pid = yield from self._project_id(project)
        reply = yield Call("POST", f"/projects/{pid}/splits", json=config)
        return SplitVersionOut.model_validate(reply.json())

    def _final_records(self, project: ProjectRef, split: str | None = None, version: int | None = None) -> Op[None]:
        pid = yield from self._project_id(project)
        params = {k: v for k, v in (("split", split), ("version", version)) if v is not None}
        reply = yield Call("GET", f"/projects/{pid}/finals", params=params, stream=True, idempotent=True)
        expect_json(reply.status, reply.headers)
        while (line := (yield NEXT_LINE)) is not None:
            if line.strip():
                yield Emit(FinalRecord.model_validate_json(line))

    def _image(self, sha256: str) -> Op[bytes]:
        reply: Reply = yield Call("GET", f"/images/{sha256}")
        return reply.content

    def _download_finals(self, project: ProjectRef, split: str | None, folder: Path) -> Op[tuple[ProjectSettings, list[str], dict[str, int]]]:
        """Finals to `folder`: finals.jsonl, and the images they name in zips of a page each
        (`_dataset.ImagePages` reads them); returns the project's settings, the union of the
        records' keys in first-seen order and each image's page."""
        settings = yield from self._settings(project)
        keys: dict[str, None] = {}
        pages: dict[str, int] = {}  # sha256 -> page, in the order the records name them
        with (folder / "finals.jsonl").open("w", encoding="utf-8") as out:

            def keep(final: FinalRecord) -> None:
                keys.update(dict.fromkeys(final.record))
                for sha in final.images.values():
                    pages.setdefault(sha, len(pages) // IMAGE_PAGE)
                out.write(final.model_dump_json() + "\n")

            yield from _for_each(self._final_records(settings.id, split), keep)
        # A page of images a request (one request an image took ~3 ms of the server's CPU each):
        # in the records' order, so the Dataset is built reading one page after the other.
        calls = [Call("POST", "/images/batch", json={"sha256": page}, download_to=image_page(folder, number), idempotent=True)
                 for number, page in enumerate(rec.batches(iter(pages), IMAGE_PAGE))]  # a read: idempotent
        for group in rec.batches(calls, IN_FLIGHT):
            for reply in (yield Parallel(group)):
                if isinstance(reply, VlcurateError):
                    raise reply
        return settings, list(keys), pages

    def _start_export(self, project: ProjectRef, fmt: str, splits: bool = True, version: int | None = None, gold: bool = False) -> Op[ExportOut]:
        pid = yield from self._project_id(project)
        body = {"format": fmt, "splits": splits, "version": version, **({"gold": True} if gold else {})}
        reply = yield Call("POST", f"/projects/{pid}/exports", json=body)
        return ExportOut.model_validate(reply.json())

    def _export(self, project: ProjectRef, fmt: str, out: str | Path, *, splits: bool = True, version: int | None = None,
                poll: float = 1.0, timeout: float | None = None, gold: bool = False) -> Op[Path]:
        """Start an export, follow the job until it is done, download its files and manifest into `out`."""
        job = yield from self._start_export(project, fmt, splits, version, gold)
        deadline = None if timeout is None else time.monotonic() + timeout
        while job.status not in ("done", "failed"):
            if deadline is not None and time.monotonic() > deadline:
                raise VlcurateError(f"Export {job.id} is still {job.status} after {timeout} s ({job.done}/{job.total}).")
            yield Sleep(poll)
            job = yield from self._export_status(job.id)
        if job.status == "failed":
            raise VlcurateError(f"Export {job.id} failed: {job.error}")
        if job.target is not None:
            raise VlcurateError(f"Export {job.id} was written to {job.target}; read it there.")
        return (yield from self._download_export(job, Path(out)))

    def _export_status(self, export_id: int) -> Op[ExportOut]:
        reply = yield Call("GET", f"/exports/{export_id}")
        return ExportOut.model_validate(reply.json())

    def _download_export(self, job: ExportOut, out: Path) -> Op[Path]:
        out.mkdir(parents=True, exist_ok=True)
        for relative in (job.manifest or {}).get("files", {}):
            target = (out / relative).resolve()
            if not target.is_relative_to(out.resolve()):
                raise VlcurateError(f"The manifest names a file outside the output folder: {relative}")
            target.parent.mkdir(parents=True, exist_ok=True)
            # Followed redirects: a replica may answer with the file's address in object storage.
            yield Call("GET", f"/exports/{job.id}/files/{relative}", download_to=target, idempotent=True)
        (out / "manifest.json").write_text(json.dumps(job.manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return out

def _for_each(op: Op[T], fn: Callable[[Any], None]) -> Op[T]:
    """Run an iterating operation inside another, handing its calls through and `fn` what it emits."""
    step = next(op)
    while True:
        try:
            if isinstance(step, Emit):
                fn(step.value)
                step = next(op)
            else:
                step = op.send((yield step))
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # the operation's T
