"""`AsyncClient`: the same methods as `Client` (and the same types), awaited, over httpx's async client;
`items`, `final_records` and `annotation_rows` are async iterators. Kept in step with `Client` by
tests/client/test_typing.py (same names, same parameters, same return types)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterable
from datetime import date
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx

from vlcurate import _dataset, _transport
from vlcurate._driver import AsyncDriver
from vlcurate._ops_drafting import PromptRefs
from vlcurate._transport import RETRIES
from vlcurate.models import (
    AgreementReport,
    AnnotationRow,
    ClaimOut,
    DraftEvaluation,
    DraftKindOut,
    FinalRecord,
    GoldAccuracy,
    GoldImported,
    ItemOut,
    ItemRow,
    LeakReport,
    ProjectOut,
    ProjectSettings,
    PromptOut,
    RecordsHidden,
    RecordsOut,
    ReviewOut,
    ReviewRow,
    RunOut,
    SplitVersionListed,
    SplitVersionOut,
    SubmitOut,
    SuggestionsOut,
    TokenOut,
    UserCreated,
    UserOut,
    WorkLog,
    WorkLogRow,
    MemberOut,
    WorkspaceOut,
)

if TYPE_CHECKING:
    import datasets

    from vlcurate._ops import ProjectRef


class AsyncClient(AsyncDriver):
    """The asynchronous client of a vlcurate server: `AsyncClient(url, token)` (or VLCURATE_SERVER /
    VLCURATE_TOKEN); every method of `Client`, awaited."""

    def __init__(self, url: str | None = None, token: str | None = None, *, timeout: float = 60.0, retries: int = RETRIES,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        """Check the URL and token (ValueError, before any request) and open the connection pool."""
        self.retries = retries
        self.http = httpx.AsyncClient(base_url=_transport.base_url(url), headers=_transport.headers_for(token), timeout=timeout,
                                 follow_redirects=True, transport=transport)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def finals(self, project: ProjectRef, split: str | None = None, *, cache_dir: str | None = None) -> datasets.Dataset:
        """The finished records as a `datasets.Dataset`, images as `Image` features, their bytes pulled a
        page of 1,000 a request (see `final_records` for the records one at a time). Its Arrow files go to
        the `datasets` cache, or `cache_dir` (admin)."""
        folder = Path(tempfile.mkdtemp(prefix="vlcurate-finals-"))
        _dataset.preload()
        try:
            settings, keys, pages = await self._run(self._download_finals(project, split, folder))
            return await asyncio.to_thread(_dataset.build, folder, settings, keys, pages, cache_dir)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    async def annotations(self, project: ProjectRef, stage: int | str | None = None, *, cache_dir: str | None = None) -> datasets.Dataset:
        """Every submitted annotation revision as a `datasets.Dataset`, a row each (`AnnotationRow`'s
        fields): the annotator (a pseudonym unless you are an admin), the answer, when it was claimed and
        submitted, active seconds, the suggestions shown and what became of each, the review decision (reviewer)."""
        folder = Path(tempfile.mkdtemp(prefix="vlcurate-annotations-"))
        _dataset.preload()
        try:
            await self._run(self._download_annotations(project, stage, folder / "annotations.jsonl"))
            return await asyncio.to_thread(_dataset.annotation_table, folder / "annotations.jsonl", cache_dir)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    # -- projects ------------------------------------------------------------------------------------

    async def projects(self, *, archived: bool = False) -> list[ProjectOut]:
        """Every live project with its stages and progress counts; with `archived=True` (admin), the
        deleted (archived) ones instead, which `restore_project` brings back."""
        return await self._run(self._projects(archived))

    async def project(self, project: ProjectRef) -> ProjectOut:
        """A project, by id or name, with its stages and progress counts."""
        return await self._run(self._project(project))

    async def create_project(self, name: str, stages: list[dict[str, Any]], description: str = "", *,
                       workspace: int | str | None = None) -> ProjectOut:
        """A new project; `stages` as [{"workflow": "wikido.verify", "overlap": 1, ...}]; in `workspace` (id or
        name; default: the default workspace) (admin)."""
        return await self._run(self._create_project(name, stages, description, workspace))

    async def update_project(self, project: ProjectRef, *, name: str | None = None, description: str | None = None,
                       stages: list[dict[str, Any]] | None = None) -> ProjectSettings:
        """Rename the project, change its description, or its stages' settings: `stages` as [{"id": 3,
        "lease_seconds": 600, "guidelines": "...", "name": "..."}]; what is left out stays (admin)."""
        return await self._run(self._update_project(project, {"name": name, "description": description, "stages": stages or []}))

    async def delete_project(self, project: ProjectRef, *, confirm: str) -> None:
        """Delete the project: it is archived, gone from every list, queue and route (NotFound from then
        on), its items, annotations and exports kept in the database; `confirm` must be its name (admin).
        `restore_project` brings it back."""
        return await self._run(self._delete_project(project, confirm))

    async def restore_project(self, project: ProjectRef) -> ProjectOut:
        """Bring a deleted (archived) project back, by id or name, with everything it held (admin)."""
        return await self._run(self._restore_project(project))

    async def settings(self, project: ProjectRef) -> ProjectSettings:
        """The project's dataset, image fields, export formats and stage settings."""
        return await self._run(self._settings(project))

    # -- records and suggestions -----------------------------------------------------------------------

    async def push_records(self, project: ProjectRef, records: Any, images: str | Path | None = None, *,
                     batch_size: int | None = None, progress: bool = True, on_conflict: str = "skip") -> RecordsOut:
        """Import records (dicts, JSON texts, or a `datasets.Dataset`) in batches, with their images from a
        directory, a zip file, or the Dataset's Image columns (admin). A record whose id the project has
        already is left out (`on_conflict="skip"`: pushing again changes nothing, and an interrupted push
        resumes), or with `on_conflict="update"` replaces the item's record as a new revision (its
        history keeps the one before; the same record again changes nothing). `batch_size`: records a
        request; by default 10,000, or 2,000 where images go with them; two batches are in flight at once."""
        return await self._run(self._push_records(project, records, images, batch_size, progress, on_conflict))

    async def delete_records(self, project: ProjectRef, ids: Iterable[str], *, reason: str = "") -> RecordsHidden:
        """Hide the items with these external ids: out of the queues, finals and exports, their
        annotations and history kept (nothing is erased); `reason` goes into their history (admin).
        An id the project lacks raises Invalid naming it, and that request hides nothing (each request
        carries up to 10,000 ids; a call with more sends several)."""
        return await self._run(self._hide_records(project, ids, reason))

    async def push_suggestions(self, stage: int | str, model: str, version: str, rows: Iterable[dict[str, Any]], *,
                         project: ProjectRef | None = None, kind: str | None = None) -> SuggestionsOut:
        """Store an outside model's suggestions: rows of {external_id, kind, payload, score}, each payload
        checked against its kind's schema (Invalid names the row and field); the same model version
        pushed again changes nothing (a changed payload replaces the earlier one) (admin)."""
        return await self._run(self._push_suggestions(stage, model, version, rows, project, kind))

    # -- items, annotating, reviewing ---------------------------------------------------------------------

    def items(self, project: ProjectRef, *, stage: int | None = None, status: str | None = None, annotator: int | None = None,
              text: str | None = None, page_size: int = 500) -> AsyncIterator[ItemRow]:
        """Every item matching the filters (stage, status, annotator, text), page after page (reviewer)."""
        return self._iter(self._items(project, stage=stage, status=status, annotator=annotator, text=text, page_size=page_size))

    async def item(self, item_id: int) -> ItemOut:
        """One item with its history (reviewer)."""
        return await self._run(self._item(item_id))

    async def claim(self, stage: int) -> ClaimOut | None:
        """The next item for you in the stage (or the one you hold), None when nothing is left."""
        return await self._run(self._claim(stage))

    async def submit(self, assignment_id: int, payload: dict[str, Any], idempotency_key: str | None = None,
               seconds_spent: float | None = None, active_seconds: float | None = None) -> SubmitOut:
        """Submit your answer to a claimed item; the same `idempotency_key` again is a replay, never a
        second annotation (one is made up when None). `active_seconds`: your time at work on it (stored
        capped at the time since the claim and the stage's lease length)."""
        return await self._run(self._submit(assignment_id, payload, idempotency_key, seconds_spent, active_seconds))

    async def review_queue(self, stage: int) -> list[ReviewRow]:
        """The stage's items waiting for review, those where annotators disagree most first (reviewer)."""
        return await self._run(self._review_queue(stage))

    async def resolve(self, stage: int, item_id: int, *, accept: int | None = None, payload: dict[str, Any] | None = None,
                comment: str = "") -> ReviewOut:
        """Finalize a reviewed item with one annotation (`accept`: its id) or your own version (reviewer)."""
        return await self._run(self._resolve(stage, item_id, accept=accept, payload=payload, comment=comment))

    async def send_back(self, stage: int, item_id: int, comment: str) -> ReviewOut:
        """Send a reviewed item back to its annotators with a comment (reviewer)."""
        return await self._run(self._send_back(stage, item_id, comment))

    async def take_back(self, stage: int, item_id: int) -> ReviewOut:
        """Bring a sent-back item back to review (reviewer)."""
        return await self._run(self._take_back(stage, item_id))

    # -- quality: agreement, gold, leaks ----------------------------------------------------------------

    async def agreement(self, stage: int, samples: int = 1000, seed: int = 0, stored: bool = False) -> AgreementReport:
        """The stage's inter-annotator agreement with bootstrap 95 % intervals, per facet and annotator
        pair, computed now (or with `stored`, the worker's newest report) (reviewer)."""
        return await self._run(self._agreement(stage, samples, seed, stored))

    async def import_gold(self, stage: int, answers: str | Path | Iterable[dict[str, Any] | str]) -> GoldImported:
        """Mark items gold in the stage with their correct answers: rows of {"id": external id, "answer":
        payload}, or a JSONL file's path; validated like annotations, a bad row imports nothing (admin)."""
        return await self._run(self._import_gold(stage, answers))

    async def make_gold(self, item_id: int, stage: int) -> GoldImported:
        """Make the item's final record in the stage the truth of a gold item there (admin)."""
        return await self._run(self._make_gold(item_id, stage))

    async def gold_accuracy(self, stage: int, *, samples: int = 1000, seed: int = 0) -> GoldAccuracy:
        """Each annotator's accuracy on the stage's gold items, with bootstrap 95 % intervals and flags (reviewer)."""
        return await self._run(self._gold_accuracy(stage, samples, seed))

    async def draft_bias(self, stage: int, *, samples: int = 1000, seed: int = 0, parquet: str | Path | None = None) -> dict[str, Any]:
        """What drafts do to the stage's annotators (docs/draft-bias.md): acceptance with drafts shown and
        hidden, probe catch rate, label shift between the arms, per model version and annotator, each
        figure with its 95 % interval; `parquet` also downloads the figures as rows there (reviewer)."""
        return await self._run(self._draft_bias(stage, samples, seed, parquet))

    async def leaks(self, project: ProjectRef, *, keep_together: bool = False, poll: float = 1.0, timeout: float | None = None,
              progress: bool = True) -> LeakReport:
        """Find the leaks of the newest split version: the server's worker makes the report (a tqdm bar
        follows its steps when `progress` and tqdm is installed); returns the LeakReport. With
        `keep_together` and leaks found, each leaked group is put into one split (a new split
        version) and that version's report is returned (admin)."""
        return await self._run(self._leaks(project, keep_together, poll, timeout, progress))

    async def leak_report(self, project: ProjectRef, version: int | None = None) -> LeakReport:
        """The newest stored leak report of a split version (the newest when None), without a new job (admin)."""
        return await self._run(self._leak_report(project, version))

    async def keep_together(self, project: ProjectRef) -> SplitVersionOut:
        """Put each leaked group of the newest report into one split, saved as a new split version (admin)."""
        return await self._run(self._keep_together(project))

    # -- splits, finals, annotations, exports ---------------------------------------------------------------

    async def splits(self, project: ProjectRef) -> list[SplitVersionListed]:
        """The project's split versions, newest first, with their counts (admin)."""
        return await self._run(self._splits(project))

    async def save_splits(self, project: ProjectRef, config: dict[str, Any]) -> SplitVersionOut:
        """Save a new split version: {"ratios" or "counts": {...}, "seed", "rest", "held_out", "stratify"} (admin)."""
        return await self._run(self._save_splits(project, config))

    def final_records(self, project: ProjectRef, split: str | None = None, version: int | None = None) -> AsyncIterator[FinalRecord]:
        """Finished records as the published export writes them, streamed (admin)."""
        return self._iter(self._final_records(project, split, version))

    def annotation_rows(self, project: ProjectRef, stage: int | str | None = None) -> AsyncIterator[AnnotationRow]:
        """Every submitted annotation revision of the project (or of one stage), streamed (reviewer)."""
        return self._iter(self._annotation_rows(project, stage))

    async def image(self, sha256: str) -> bytes:
        """A stored image's bytes, by its sha256 (as items and finals name them)."""
        return await self._run(self._image(sha256))

    async def export(self, project: ProjectRef, format: str, out: str | Path, *, splits: bool = True, version: int | None = None,
               poll: float = 1.0, timeout: float | None = None, gold: bool = False) -> Path:
        """Export in `format`, follow the job, download its files and manifest into `out`; returns `out`.
        With `gold`, the stages' gold items come too, in `gold.jsonl` (never in the data files) (admin)."""
        return await self._run(self._export(project, format, out, splits=splits, version=version, poll=poll, timeout=timeout, gold=gold))

    # -- users and tokens ----------------------------------------------------------------------------------

    async def users(self) -> list[UserOut]:
        """Every user with their role (admin)."""
        return await self._run(self._users())

    async def create_user(self, username: str, password: str, role: str = "annotator", *, workspace: int | str | None = None,
                    member_role: str | None = None) -> UserCreated:
        """A new user: annotator, reviewer or admin; a member of `workspace` (id or name) as `member_role`
        (default: their role), else of the default workspace with their role (admin)."""
        return await self._run(self._create_user(username, role, password, workspace, member_role))

    async def create_token(self, user: int | str, name: str = "") -> TokenOut:
        """A new API token of a user (by id or username); its text is shown this once (admin)."""
        return await self._run(self._create_token(user, name))

    async def revoke_token(self, token_id: int) -> None:
        """Revoke a token: yours, or anyone's as an admin."""
        return await self._run(self._revoke_token(token_id))

    async def work_log(self, workspace: int, start: date | str | None = None, end: date | str | None = None, *, annotator: str | None = None,
                 project: int | None = None, download: str | Path | None = None, dataset: bool = False) -> WorkLog | datasets.Dataset:
        """The workspace's work log (docs/work-log.md): a `WorkLog` whose rows are (day, annotator, project) →
        items, answers, active and wall hours, gold answers right; days from `start` to `end` included
        (the last 30 days when neither is given). `download`: also save the rows as that .csv or .parquet
        file; `dataset`: the rows as a `datasets.Dataset` instead (the workspace's managers and admins)."""
        log = await self._run(self._work_log(workspace, start, end, annotator, project, download))
        return _dataset.rows_table([r.model_dump() for r in log.rows], WorkLogRow) if dataset else log

    # -- workspaces -------------------------------------------------------------------------------------

    async def workspaces(self) -> list[WorkspaceOut]:
        """The workspaces you manage (every one for an admin), with their counts of projects and members."""
        return await self._run(self._workspaces())

    async def create_workspace(self, name: str) -> WorkspaceOut:
        """A new, empty workspace (admin)."""
        return await self._run(self._create_workspace(name))

    async def rename_workspace(self, workspace: int | str, name: str) -> WorkspaceOut:
        """Rename a workspace, given by id or name (admin)."""
        return await self._run(self._rename_workspace(workspace, name))

    async def delete_workspace(self, workspace: int | str) -> None:
        """Delete an empty workspace (not the default one) with its memberships (admin)."""
        return await self._run(self._delete_workspace(workspace))

    async def members(self, workspace: int | str) -> list[MemberOut]:
        """The workspace's memberships (workspace manager)."""
        return await self._run(self._members(workspace))

    async def add_member(self, workspace: int | str, user: int | str, role: str = "annotator", *, project: ProjectRef | None = None) -> MemberOut:
        """Give a user (by id or username) `role` (annotator, reviewer, manager) in the workspace, or only in
        one of its projects; given again, the role changes (workspace manager)."""
        return await self._run(self._add_member(workspace, user, role, project))

    async def remove_member(self, workspace: int | str, member_id: int) -> None:
        """End a membership, by its id (`members`) (workspace manager)."""
        return await self._run(self._remove_member(workspace, member_id))

    async def move_project(self, project: ProjectRef, workspace: int | str) -> None:
        """Move a project to another workspace; its own memberships go along (manager of both)."""
        return await self._run(self._move_project(project, workspace))

    # -- drafting with a model ------------------------------------------------------------------------------

    async def draft_kinds(self, stage: int) -> list[DraftKindOut]:
        """What a model can draft for the stage (`DraftKindOut`: default prompt, template fields, answer schema) (admin)."""
        return await self._run(self._draft_kinds(stage))

    async def draft_prompts(self, stage: int) -> list[PromptOut]:
        """The stage's prompt versions (`PromptOut`), with what each drafted and its run's progress (admin)."""
        return await self._run(self._draft_prompts(stage))

    async def draft_prompt(self, stage: int, draft_kind: str, drafter: str, *, template: str | None = None, system: str | None = None,
                     max_tokens: int | None = None, temperature: float | None = None, seed: int | None = None,
                     note: str = "") -> PromptOut:
        """Save the next prompt version of `draft_kind` for the stage (`PromptOut`); what is left out comes
        from the kind's default prompt. `drafter` names one of the server's configured drafters (admin)."""
        fields = {"template": template, "system": system, "max_tokens": max_tokens, "temperature": temperature, "seed": seed, "note": note}
        return await self._run(self._draft_prompt(stage, draft_kind, drafter, fields))

    async def prompt(self, prompt_id: int, *, run: int | None = None) -> PromptOut:
        """A prompt version (`PromptOut`) with its counts and the progress of its newest run (or of `run`) (admin)."""
        return await self._run(self._prompt(prompt_id, run))

    async def draft(self, prompt_id: int, *, scope: str = "missing", sample: int | None = None, seed: int = 0, wait: bool = False,
              poll: float = 1.0, timeout: float | None = None, progress: bool = False) -> RunOut | PromptOut:
        """Run a prompt version over its stage's items: `scope` "missing" (items lacking a valid draft of
        it), "all", or "sample" (`sample` items, seeded). Returns the queued run (`RunOut`: its id and job
        ids); with `wait`, follows its jobs (a tqdm bar with `progress`) and returns the version
        (`PromptOut`) once none waits or runs, raising VlcurateError if a job failed or `timeout` passed (admin)."""
        return await self._run(self._draft(prompt_id, scope, sample, seed, wait=wait, poll=poll, timeout=timeout, progress=progress))

    async def draft_evaluation(self, stage: int, prompts: PromptRefs, *, gold: bool = False, samples: int = 1000, seed: int = 0,
                         parquet: str | Path | None = None) -> DraftEvaluation:
        """Prompt versions (ids, `PromptOut`s, or "1,2") against what people finished in the stage, or its
        gold answers with `gold` (`DraftEvaluation`: agreement with bootstrap 95 % intervals, share accepted
        unchanged, schema-valid share, latency, tokens); `parquet` also downloads the per-item rows there (admin)."""
        return await self._run(self._draft_evaluation(stage, prompts, gold, samples, seed, parquet))
