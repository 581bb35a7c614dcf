"""Every API operation once, as a sans-I/O generator (see `_protocol`); `Client` and `AsyncClient` run them."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from vlcurate import records as rec
from vlcurate._dataset import image_page
from vlcurate._protocol import NEXT_LINE, Call, Emit, Op, Parallel, Sleep, expect_json
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
IN_FLIGHT = 2  # requests at once where a push or a pull with images makes many (the server has threads to spare)
IMAGE_PAGE = 1000  # images a request when finals are pulled with their images (the server's most)


def _progress(enabled: bool, total: int | None, what: str, unit: str = "rec"):
    """A tqdm bar when tqdm is installed and wanted, else None."""
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=what, unit=unit)


def _show_step(bar, job: LeakJob) -> None:
    """Show a job's step on a tqdm bar: its name, and done of total where it counts more than one."""
    if bar is None:
        return
    step = job.step or job.status
    if bar.desc != step:
        bar.set_description(step)
        bar.reset(total=job.total if job.total > 1 else None)
    bar.n = job.done if job.total > 1 else 0
    bar.refresh()


class Operations:
    """The API's operations; each returns a generator driven by a client."""

    # -- projects --------------------------------------------------------------------------------

    def _projects(self) -> Op:
        reply = yield Call("GET", "/projects")
        return [ProjectOut.model_validate(p) for p in reply.json()]

    def _project_id(self, project: int | str) -> Op:
        """A project given by id or by name."""
        if isinstance(project, int):
            return project
        if isinstance(project, ProjectOut):
            return project.id
        found = [p for p in (yield from self._projects()) if p.name == project]
        if not found:
            raise NotFound(f"No project named {project!r}.", status=404)
        return found[0].id

    def _project(self, project: int | str) -> Op:
        pid = yield from self._project_id(project)
        reply = yield Call("GET", f"/projects/{pid}")
        return ProjectOut.model_validate(reply.json())

    def _create_project(self, name: str, stages: list[dict[str, Any]], description: str = "") -> Op:
        reply = yield Call("POST", "/projects", json={"name": name, "description": description, "stages": stages})
        return ProjectOut.model_validate(reply.json())

    def _settings(self, project: int | str) -> Op:
        pid = yield from self._project_id(project)
        reply = yield Call("GET", f"/projects/{pid}/settings")
        return ProjectSettings.model_validate(reply.json())

    def _stage_id(self, stage: int | str, project: int | str | None = None) -> Op:
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

    def _push_records(self, project: int | str, records: Any, images: str | Path | None = None,
                      batch_size: int | None = None, progress: bool = True) -> Op:
        settings = yield from self._settings(project)
        if batch_size is None:
            batch_size = IMAGE_BATCH if images is not None or rec.has_image_column(records) else RECORD_BATCH
        source = rec.ImageSource(images)
        total = RecordsOut(created=0, images=0, new_images=0, skipped=0)
        bar = _progress(progress, rec.total_of(records), "push")
        packed = rec.packed_batches(rec.plain_records(records), batch_size, settings.image_fields, source)
        try:
            group: list[tuple[int, Call]] = []
            for count, body, zipped in packed:
                files = {"file": ("records.jsonl", body, "application/x-ndjson")}
                if zipped is not None:
                    files["images"] = ("images.zip", zipped, "application/zip")
                # Idempotent: records whose id the project has are left out, so a retry adds nothing twice.
                group.append((count, Call("POST", f"/projects/{settings.id}/records", files=files, idempotent=True)))
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

    def _send_batches(self, group: list[tuple[int, Call]], total: RecordsOut, bar: Any) -> Op:
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
            for name in ("created", "images", "new_images", "skipped"):
                setattr(total, name, getattr(total, name) + getattr(done, name))
            if bar is not None:
                bar.update(count)

    def _push_suggestions(self, stage: int | str, model: str, version: str, rows: Iterable[dict[str, Any]],
                          project: int | str | None = None, kind: str | None = None, batch_size: int = SUGGESTION_BATCH) -> Op:
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

    def _items(self, project: int | str, *, stage: int | None = None, status: str | None = None,
               annotator: int | None = None, text: str | None = None, page_size: int = PAGE) -> Op:
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

    def _item(self, item_id: int) -> Op:
        reply = yield Call("GET", f"/items/{item_id}")
        return ItemOut.model_validate(reply.json())

    # -- annotating and reviewing ------------------------------------------------------------------

    def _claim(self, stage: int) -> Op:
        reply = yield Call("POST", f"/stages/{stage}/claim", idempotent=True)  # gives back a held lease
        return None if reply.status == 204 else ClaimOut.model_validate(reply.json())

    def _submit(self, assignment_id: int, payload: dict[str, Any], idempotency_key: str | None = None,
                seconds_spent: float | None = None) -> Op:
        body = {"payload": payload, "idempotency_key": idempotency_key or uuid.uuid4().hex, "seconds_spent": seconds_spent}
        # The key makes a retried submit a replay, never a second annotation.
        reply = yield Call("POST", f"/assignments/{assignment_id}/submit", json=body, idempotent=True)
        return SubmitOut.model_validate(reply.json())

    def _review_queue(self, stage: int) -> Op:
        reply = yield Call("GET", f"/stages/{stage}/review")
        return [ReviewRow.model_validate(r) for r in reply.json()]

    def _resolve(self, stage: int, item_id: int, *, accept: int | None = None, payload: dict[str, Any] | None = None,
                 comment: str = "") -> Op:
        body = {"accept_annotation_id": accept, "payload": payload, "comment": comment}
        reply = yield Call("POST", f"/stages/{stage}/review/{item_id}", json=body)
        return ReviewOut.model_validate(reply.json())

    def _send_back(self, stage: int, item_id: int, comment: str) -> Op:
        reply = yield Call("POST", f"/stages/{stage}/review/{item_id}/send-back", json={"comment": comment})
        return ReviewOut.model_validate(reply.json())

    def _take_back(self, stage: int, item_id: int) -> Op:
        reply = yield Call("POST", f"/stages/{stage}/review/{item_id}/take-back")
        return ReviewOut.model_validate(reply.json())

    def _agreement(self, stage: int, samples: int = 1000, seed: int = 0, stored: bool = False) -> Op:
        reply = yield Call("GET", f"/stages/{stage}/agreement", params={"samples": samples, "seed": seed, "stored": stored})
        return AgreementReport.model_validate(reply.json())

    # -- splits, finals and exports ----------------------------------------------------------------

    def _splits(self, project: int | str) -> Op:
        pid = yield from self._project_id(project)
        reply = yield Call("GET", f"/projects/{pid}/splits")
        return [SplitVersionListed.model_validate(r) for r in reply.json()]

    def _save_splits(self, project: int | str, config: dict[str, Any]) -> Op:
        pid = yield from self._project_id(project)
        reply = yield Call("POST", f"/projects/{pid}/splits", json=config)
        return SplitVersionOut.model_validate(reply.json())

    def _final_records(self, project: int | str, split: str | None = None, version: int | None = None) -> Op:
        pid = yield from self._project_id(project)
        params = {k: v for k, v in (("split", split), ("version", version)) if v is not None}
        reply = yield Call("GET", f"/projects/{pid}/finals", params=params, stream=True, idempotent=True)
        expect_json(reply.status, reply.headers)
        while (line := (yield NEXT_LINE)) is not None:
            if line.strip():
                yield Emit(FinalRecord.model_validate_json(line))

    def _image(self, sha256: str) -> Op:
        reply = yield Call("GET", f"/images/{sha256}")
        return reply.content

    def _download_finals(self, project: int | str, split: str | None, folder: Path) -> Op:
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

    def _start_export(self, project: int | str, fmt: str, splits: bool = True, version: int | None = None, gold: bool = False) -> Op:
        pid = yield from self._project_id(project)
        body = {"format": fmt, "splits": splits, "version": version, **({"gold": True} if gold else {})}
        reply = yield Call("POST", f"/projects/{pid}/exports", json=body)
        return ExportOut.model_validate(reply.json())

    def _export(self, project: int | str, fmt: str, out: str | Path, *, splits: bool = True, version: int | None = None,
                poll: float = 1.0, timeout: float | None = None, gold: bool = False) -> Op:
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

    def _export_status(self, export_id: int) -> Op:
        reply = yield Call("GET", f"/exports/{export_id}")
        return ExportOut.model_validate(reply.json())

    # -- leak reports (made by the worker) --------------------------------------------------------

    def _leak_report(self, project: int | str, version: int | None = None) -> Op:
        pid = yield from self._project_id(project)
        reply = yield Call("GET", f"/projects/{pid}/leaks", params={"version": version} if version is not None else None)
        return LeakReport.model_validate(reply.json())

    def _leaks(self, project: int | str, keep_together: bool = False, poll: float = 1.0, timeout: float | None = None,
               progress: bool = True) -> Op:
        """Queue the leak report job, follow it (a bar per step when `progress`), read its report; with
        `keep_together` and leaks found, keep the leaked groups together and report on the new version."""
        pid = yield from self._project_id(project)
        deadline = None if timeout is None else time.monotonic() + timeout
        bar = _progress(progress, None, "leaks", unit="")
        try:
            report = yield from self._leak_job(pid, poll, deadline, bar)
            if keep_together and report.leaked_groups:
                yield Call("POST", f"/projects/{pid}/leaks/keep-together")
                report = yield from self._leak_job(pid, poll, deadline, bar)
        finally:
            if bar is not None:
                bar.close()
        return report

    def _leak_job(self, pid: int, poll: float, deadline: float | None, bar) -> Op:
        # Asking again while a job waits returns that job: a resent POST queues nothing more.
        reply = yield Call("POST", f"/projects/{pid}/leaks", idempotent=True)
        first = job = LeakJob.model_validate(reply.json())
        # Done when this job (or, where none was queued yet, the one queued for the request) has ended.
        while not (job.status in ("succeeded", "failed") and job.job_id is not None and job.job_id >= (first.job_id or 0)):
            if deadline is not None and time.monotonic() > deadline:
                raise VlcurateError(f"The leak report of project {pid} is still {job.status} ({job.step or 'waiting'}).")
            _show_step(bar, job)
            yield Sleep(poll)
            job = LeakJob.model_validate((yield Call("GET", f"/projects/{pid}/leaks/job")).json())
        if job.status == "failed":
            raise VlcurateError(f"Leak report job {job.job_id} failed: {job.error}")
        return (yield from self._leak_report(pid))

    def _download_export(self, job: ExportOut, out: Path) -> Op:
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

    # -- drafting --------------------------------------------------------------------------------

    def _draft_kinds(self, stage: int) -> Op:
        reply = yield Call("GET", f"/stages/{stage}/draft-kinds")
        return [DraftKindOut.model_validate(k) for k in reply.json()]

    def _draft_prompts(self, stage: int) -> Op:
        reply = yield Call("GET", f"/stages/{stage}/prompts")
        return [PromptOut.model_validate(p) for p in reply.json()]

    def _draft_prompt(self, stage: int, draft_kind: str, drafter: str, fields: dict[str, Any]) -> Op:
        body = {"draft_kind": draft_kind, "drafter": drafter, **{k: v for k, v in fields.items() if v is not None}}
        reply = yield Call("POST", f"/stages/{stage}/prompts", json=body)
        return PromptOut.model_validate(reply.json())

    def _prompt(self, prompt_id: int, run: int | None = None) -> Op:
        reply = yield Call("GET", f"/prompts/{prompt_id}", params={} if run is None else {"run": run})
        return PromptOut.model_validate(reply.json())

    def _draft(self, prompt_id: int, scope: str = "missing", sample: int | None = None, seed: int = 0, *, wait: bool = False,
               poll: float = 1.0, timeout: float | None = None, progress: bool = False) -> Op:
        """Start a run; with `wait`, follow its jobs until none waits or runs and return the version then."""
        reply = yield Call("POST", f"/prompts/{prompt_id}/runs", json={"scope": scope, "sample": sample, "seed": seed})
        run = RunOut.model_validate(reply.json())
        if not wait:
            return run
        deadline = None if timeout is None else time.monotonic() + timeout
        bar = _progress(progress, run.items, f"draft {prompt_id}")
        try:
            while True:
                prompt = yield from self._prompt(prompt_id, run.run_id)
                if bar is not None:
                    bar.n = prompt.run.done
                    bar.refresh()
                if not prompt.run.active:
                    break
                if deadline is not None and time.monotonic() > deadline:
                    raise VlcurateError(f"Prompt {prompt_id}'s run still has {prompt.run.waiting + prompt.run.running} jobs "
                                        f"waiting or running after {timeout} s ({prompt.run.done}/{prompt.run.items} items).")
                yield Sleep(poll)
        finally:
            if bar is not None:
                bar.close()
        if prompt.run.failed:
            raise VlcurateError(f"{prompt.run.failed} of {prompt.run.jobs} draft jobs of prompt {prompt_id} failed: "
                                + "; ".join(prompt.run.errors))
        return prompt

    def _draft_evaluation(self, stage: int, prompts, gold: bool = False, samples: int = 1000, seed: int = 0,
                          parquet: str | Path | None = None) -> Op:
        if isinstance(prompts, str):
            ids = prompts
        else:
            ids = ",".join(str(getattr(p, "id", p)) for p in prompts)  # ids, or PromptOut rows
        params = {"prompts": ids, "gold": gold}
        reply = yield Call("GET", f"/stages/{stage}/drafts/evaluation", params={**params, "samples": samples, "seed": seed})
        found = DraftEvaluation.model_validate(reply.json())
        if parquet is not None:
            yield Call("GET", f"/stages/{stage}/drafts/evaluation.parquet", params=params, download_to=Path(parquet))
        return found


def _for_each(op: Op, fn) -> Op:
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
            return stop.value
