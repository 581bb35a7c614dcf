"""Operations on a project's quality: agreement, gold items and accuracy, leak reports (made by the
server's worker) and keeping leaked groups together, and the annotations as a table."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from vlcurate import records as rec
from vlcurate._ops import Operations, ProjectRef, _for_each
from vlcurate._progress import progress_bar, show_step
from vlcurate._protocol import NEXT_LINE, Call, Emit, Op, Sleep, expect_json
from vlcurate.errors import VlcurateError
from vlcurate.models import AgreementReport, AnnotationRow, GoldAccuracy, GoldImported, LeakJob, LeakReport, SplitVersionOut

GOLD_BATCH = 5000  # gold answers a request


class QualityOps(Operations):
    """Agreement, gold, leaks and annotations."""

    def _agreement(self, stage: int, samples: int = 1000, seed: int = 0, stored: bool = False) -> Op[AgreementReport]:
        reply = yield Call("GET", f"/stages/{stage}/agreement", params={"samples": samples, "seed": seed, "stored": stored})
        return AgreementReport.model_validate(reply.json())

    # -- gold items --------------------------------------------------------------------------------

    def _import_gold(self, stage: int, answers: Any) -> Op[GoldImported]:
        """Gold answers ({"id", "answer"} rows, or a JSONL file's path) in batches."""
        rows = rec.jsonl_rows(answers)
        total = 0
        for batch in rec.batches(rows, GOLD_BATCH):
            body = "".join(line + "\n" for line in batch).encode()
            # Marking an item gold again with the same answer changes nothing: safe to resend.
            reply = yield Call("POST", f"/stages/{stage}/gold", files={"file": ("gold.jsonl", body, "application/x-ndjson")},
                               idempotent=True)
            total += GoldImported.model_validate(reply.json()).imported
        return GoldImported(imported=total)

    def _make_gold(self, item_id: int, stage: int) -> Op[GoldImported]:
        reply = yield Call("POST", f"/items/{item_id}/gold", json={"stage_id": stage}, idempotent=True)
        return GoldImported.model_validate(reply.json())

    def _gold_accuracy(self, stage: int, samples: int = 1000, seed: int = 0) -> Op[GoldAccuracy]:
        reply = yield Call("GET", f"/stages/{stage}/gold/accuracy", params={"samples": samples, "seed": seed})
        return GoldAccuracy.model_validate(reply.json())

    # -- leak reports (made by the worker) --------------------------------------------------------

    def _leak_report(self, project: ProjectRef, version: int | None = None) -> Op[LeakReport]:
        pid = yield from self._project_id(project)
        reply = yield Call("GET", f"/projects/{pid}/leaks", params={"version": version} if version is not None else None)
        return LeakReport.model_validate(reply.json())

    def _keep_together(self, project: ProjectRef) -> Op[SplitVersionOut]:
        pid = yield from self._project_id(project)
        reply = yield Call("POST", f"/projects/{pid}/leaks/keep-together")
        return SplitVersionOut.model_validate(reply.json())

    def _leaks(self, project: ProjectRef, keep_together: bool = False, poll: float = 1.0, timeout: float | None = None,
               progress: bool = True) -> Op[LeakReport]:
        """Queue the leak report job, follow it (a bar per step when `progress`), read its report; with
        `keep_together` and leaks found, keep the leaked groups together and report on the new version."""
        pid = yield from self._project_id(project)
        deadline = None if timeout is None else time.monotonic() + timeout
        bar = progress_bar(progress, None, "leaks", unit="")
        try:
            report = yield from self._leak_job(pid, poll, deadline, bar)
            if keep_together and report.leaked_groups:
                yield from self._keep_together(pid)
                report = yield from self._leak_job(pid, poll, deadline, bar)
        finally:
            if bar is not None:
                bar.close()
        return report

    def _leak_job(self, pid: int, poll: float, deadline: float | None, bar: Any) -> Op[LeakReport]:
        # Asking again while a job waits returns that job: a resent POST queues nothing more.
        reply = yield Call("POST", f"/projects/{pid}/leaks", idempotent=True)
        first = job = LeakJob.model_validate(reply.json())
        # Done when this job (or, where none was queued yet, the one queued for the request) has ended.
        while not (job.status in ("succeeded", "failed") and job.job_id is not None and job.job_id >= (first.job_id or 0)):
            if deadline is not None and time.monotonic() > deadline:
                raise VlcurateError(f"The leak report of project {pid} is still {job.status} ({job.step or 'waiting'}).")
            show_step(bar, job)
            yield Sleep(poll)
            job = LeakJob.model_validate((yield Call("GET", f"/projects/{pid}/leaks/job")).json())
        if job.status == "failed":
            raise VlcurateError(f"Leak report job {job.job_id} failed: {job.error}")
        return (yield from self._leak_report(pid))

    # -- the annotations as a table -----------------------------------------------------------------

    def _annotation_rows(self, project: ProjectRef, stage: int | str | None = None) -> Op[None]:
        pid = yield from self._project_id(project)
        params = {} if stage is None else {"stage": (yield from self._stage_id(stage, pid))}
        reply = yield Call("GET", f"/projects/{pid}/annotations", params=params, stream=True, idempotent=True)
        expect_json(reply.status, reply.headers)
        while (line := (yield NEXT_LINE)) is not None:
            if line.strip():
                yield Emit(AnnotationRow.model_validate_json(line))

    def _download_annotations(self, project: ProjectRef, stage: int | str | None, path: Path) -> Op[int]:
        """The annotation rows as JSON lines in `path`; returns how many."""
        count = 0
        with path.open("w", encoding="utf-8") as out:

            def keep(row: AnnotationRow) -> None:
                nonlocal count
                out.write(row.model_dump_json() + "\n")
                count += 1

            yield from _for_each(self._annotation_rows(project, stage), keep)
        return count
