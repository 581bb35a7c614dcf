"""`Client` and `AsyncClient`: the operations of `_ops` run over httpx, sync and async. Each call gets a
typed error for a refusal, and idempotent calls are sent again after a connection error."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

import httpx

from vlcurate import _dataset
from vlcurate._ops import Operations
from vlcurate._protocol import NEXT_LINE, Call, Emit, Op, Parallel, Reply, Sleep, check
from vlcurate.errors import ConnectionFailed, VlcurateError

RETRIES = 3
BACKOFF = 0.5  # seconds before the first retry; doubled each time


def _base(url: str | None) -> str:
    """The API's base URL; ValueError at once (no request, no retry) for one that cannot be a server's."""
    url = url or os.environ.get("VLCURATE_SERVER")
    if not url:
        raise ValueError("Give the server's URL (or set VLCURATE_SERVER).")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"The server's URL {url!r} is not a URL: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"The server's URL {url!r} needs its scheme and host, as in http://localhost:8000 or https://{url.split('://')[-1]}")
    return url.rstrip("/") + "/api/v1"


def _headers(token: str | None) -> dict[str, str]:
    token = token or os.environ.get("VLCURATE_TOKEN")
    if not token:
        raise ValueError("Give an API token (or set VLCURATE_TOKEN): `vlcurate token create USERNAME` makes one.")
    return {"Authorization": f"Bearer {token}", "User-Agent": "vlcurate-client"}


def _retry_delay(call: Call, attempt: int, retries: int, exc: httpx.TransportError) -> float:
    """How long to wait before sending `call` again after a connection error, or ConnectionFailed when
    it may not be sent again (not idempotent) or has had its retries."""
    if not call.idempotent or attempt == retries:
        raise ConnectionFailed(f"{call.method} {call.path}: {exc}") from exc
    return BACKOFF * 2**attempt


def _reply(response: httpx.Response) -> Reply:
    check(response.status_code, response.content, dict(response.headers))
    return Reply(response.status_code, response.content, dict(response.headers))


def _request(call: Call) -> dict[str, Any]:
    return {k: v for k, v in (("params", call.params), ("json", call.json), ("files", call.files)) if v is not None}


class _Api:
    """The methods users call: each runs one operation (the drivers define `_run` and `_iter`)."""

    def projects(self):
        """Every project with its stages and progress counts."""
        return self._run(self._projects())

    def project(self, project: int | str):
        """A project, by id or name."""
        return self._run(self._project(project))

    def create_project(self, name: str, stages: list[dict[str, Any]], description: str = ""):
        """A new project; `stages` as [{"workflow": "wikido.verify", "overlap": 1, ...}] (admin)."""
        return self._run(self._create_project(name, stages, description))

    def settings(self, project: int | str):
        """The project's dataset, image fields, export formats and stage settings."""
        return self._run(self._settings(project))

    def push_records(self, project: int | str, records: Any, images: str | Path | None = None, *,
                     batch_size: int | None = None, progress: bool = True):
        """Import records (dicts, or a `datasets.Dataset`) in batches, with their images from a
        directory, a zip file, or the Dataset's Image columns. Records whose id the project has
        already are left out: pushing again changes nothing, and an interrupted push resumes.
        `batch_size`: records a request; by default 10,000, or 2,000 where images go with them."""
        return self._run(self._push_records(project, records, images, batch_size, progress))

    def push_suggestions(self, stage: int | str, model: str, version: str, rows, *, project: int | str | None = None,
                         kind: str | None = None):
        """Store an outside model's suggestions: rows of {external_id, kind, payload, score}; the same
        model version pushed again changes nothing (a changed payload replaces the earlier one)."""
        return self._run(self._push_suggestions(stage, model, version, rows, project, kind))

    def item(self, item_id: int):
        """One item with its history (reviewer)."""
        return self._run(self._item(item_id))

    def claim(self, stage: int):
        """The next item for you in the stage (or the one you hold), None when nothing is left."""
        return self._run(self._claim(stage))

    def submit(self, assignment_id: int, payload: dict[str, Any], idempotency_key: str | None = None,
               seconds_spent: float | None = None):
        return self._run(self._submit(assignment_id, payload, idempotency_key, seconds_spent))

    def review_queue(self, stage: int):
        return self._run(self._review_queue(stage))

    def resolve(self, stage: int, item_id: int, *, accept: int | None = None, payload: dict[str, Any] | None = None,
                comment: str = ""):
        """Finalize a reviewed item with one annotation (`accept`: its id) or your own version."""
        return self._run(self._resolve(stage, item_id, accept=accept, payload=payload, comment=comment))

    def send_back(self, stage: int, item_id: int, comment: str):
        return self._run(self._send_back(stage, item_id, comment))

    def take_back(self, stage: int, item_id: int):
        """Bring a sent-back item back to review."""
        return self._run(self._take_back(stage, item_id))

    def agreement(self, stage: int, samples: int = 1000, seed: int = 0, stored: bool = False):
        return self._run(self._agreement(stage, samples, seed, stored))

    def splits(self, project: int | str):
        return self._run(self._splits(project))

    def save_splits(self, project: int | str, config: dict[str, Any]):
        return self._run(self._save_splits(project, config))

    def image(self, sha256: str) -> bytes:
        return self._run(self._image(sha256))

    def leaks(self, project: int | str, *, keep_together: bool = False, poll: float = 1.0, timeout: float | None = None,
              progress: bool = True):
        """Find the leaks of the newest split version: the server's worker makes the report (a tqdm bar
        follows its steps when `progress` and tqdm is installed); returns the LeakReport. With
        `keep_together` and leaks found, each leaked group is put into one split (a new split
        version) and that version's report is returned."""
        return self._run(self._leaks(project, keep_together, poll, timeout, progress))

    def leak_report(self, project: int | str, version: int | None = None):
        """The newest stored leak report of a split version (the newest when None), without a new job."""
        return self._run(self._leak_report(project, version))

    def export(self, project: int | str, format: str, out: str | Path, *, splits: bool = True, version: int | None = None,
               poll: float = 1.0, timeout: float | None = None, gold: bool = False):
        """Export in `format`, follow the job, download its files and manifest into `out`; returns `out`.
        With `gold`, the stages' gold items come too, in `gold.jsonl` (never in the data files)."""
        return self._run(self._export(project, format, out, splits=splits, version=version, poll=poll, timeout=timeout, gold=gold))

    # -- drafting with a model -------------------------------------------------------------------------

    def draft_kinds(self, stage: int):
        """What a model can draft for the stage (`DraftKindOut`: default prompt, template fields, answer schema) (admin)."""
        return self._run(self._draft_kinds(stage))

    def draft_prompts(self, stage: int):
        """The stage's prompt versions (`PromptOut`), with what each drafted and its run's progress (admin)."""
        return self._run(self._draft_prompts(stage))

    def draft_prompt(self, stage: int, draft_kind: str, drafter: str, *, template: str | None = None, system: str | None = None,
                     max_tokens: int | None = None, temperature: float | None = None, seed: int | None = None, note: str = ""):
        """Save the next prompt version of `draft_kind` for the stage (`PromptOut`); what is left out comes
        from the kind's default prompt. `drafter` names one of the server's configured drafters (admin)."""
        fields = {"template": template, "system": system, "max_tokens": max_tokens, "temperature": temperature, "seed": seed, "note": note}
        return self._run(self._draft_prompt(stage, draft_kind, drafter, fields))

    def prompt(self, prompt_id: int, *, run: int | None = None):
        """A prompt version (`PromptOut`) with its counts and the progress of its newest run (or of `run`) (admin)."""
        return self._run(self._prompt(prompt_id, run))

    def draft(self, prompt_id: int, *, scope: str = "missing", sample: int | None = None, seed: int = 0, wait: bool = False,
              poll: float = 1.0, timeout: float | None = None, progress: bool = False):
        """Run a prompt version over its stage's items: `scope` "missing" (items lacking a valid draft of
        it), "all", or "sample" (`sample` items, seeded). Returns the queued run (`RunOut`: its id and job
        ids); with `wait`, follows its jobs (a tqdm bar with `progress`) and returns the version
        (`PromptOut`) once none waits or runs, raising VlcurateError if a job failed or `timeout` passed."""
        return self._run(self._draft(prompt_id, scope, sample, seed, wait=wait, poll=poll, timeout=timeout, progress=progress))

    def draft_evaluation(self, stage: int, prompts, *, gold: bool = False, samples: int = 1000, seed: int = 0,
                         parquet: str | Path | None = None):
        """Prompt versions (ids, `PromptOut`s, or "1,2") against what people finished in the stage, or its
        gold answers with `gold` (`DraftEvaluation`: agreement with bootstrap 95 % intervals, share accepted
        unchanged, schema-valid share, latency, tokens); `parquet` also downloads the per-item rows there."""
        return self._run(self._draft_evaluation(stage, prompts, gold, samples, seed, parquet))


class Client(Operations, _Api):
    """A synchronous client of a vlcurate server: `Client(url, token)` (or VLCURATE_SERVER / VLCURATE_TOKEN)."""

    def __init__(self, url: str | None = None, token: str | None = None, *, timeout: float = 60.0, retries: int = RETRIES,
                 transport: httpx.BaseTransport | None = None):
        self.retries = retries
        self.http = httpx.Client(base_url=_base(url), headers=_headers(token), timeout=timeout, follow_redirects=True,
                                 transport=transport)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def items(self, project: int | str, **filters) -> Iterator[Any]:
        """Every item matching the filters (stage, status, annotator, text), page after page."""
        return self._iter(self._items(project, **filters))

    def final_records(self, project: int | str, split: str | None = None, version: int | None = None) -> Iterator[Any]:
        """Finished records as the published export writes them, streamed (FinalRecord each)."""
        return self._iter(self._final_records(project, split, version))

    def finals(self, project: int | str, split: str | None = None, *, cache_dir: str | None = None):
        """The finished records as a `datasets.Dataset`, images as `Image` features (see `final_records`
        for the records one at a time). Its Arrow files go to the `datasets` cache, or `cache_dir`."""
        folder = Path(tempfile.mkdtemp(prefix="vlcurate-finals-"))
        _dataset.preload()
        try:
            settings, keys, pages = self._run(self._download_finals(project, split, folder))
            return _dataset.build(folder, settings, keys, pages, cache_dir)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    # -- the driver --------------------------------------------------------------------------------

    def _send(self, call: Call, stack: ExitStack):
        for attempt in range(self.retries + 1):
            try:
                if call.stream or call.download_to is not None:
                    response = stack.enter_context(self.http.stream(call.method, call.path, **_request(call)))
                    if response.status_code >= 400:
                        check(response.status_code, response.read(), dict(response.headers))
                    if call.download_to is not None:
                        with open(call.download_to, "wb") as fh:
                            for chunk in response.iter_bytes(1 << 20):
                                fh.write(chunk)
                        return Reply(response.status_code, headers=dict(response.headers)), None
                    return Reply(response.status_code, headers=dict(response.headers)), response.iter_lines()
                return _reply(self.http.request(call.method, call.path, **_request(call))), None
            except httpx.TransportError as exc:
                time.sleep(_retry_delay(call, attempt, self.retries, exc))

    def _send_one(self, call: Call) -> Reply | VlcurateError:
        try:
            with ExitStack() as stack:
                return self._send(call, stack)[0]
        except VlcurateError as exc:
            return exc

    def _send_all(self, calls: list[Call]) -> list[Reply | VlcurateError]:
        """The calls sent at once, from threads (httpx's client and its connection pool are thread-safe)."""
        if len(calls) == 1:
            return [self._send_one(calls[0])]
        with ThreadPoolExecutor(len(calls), thread_name_prefix="vlcurate-send") as pool:
            return list(pool.map(self._send_one, calls))

    def _iter(self, op: Op) -> Iterator[Any]:
        with ExitStack() as stack:
            lines = None
            try:
                step = next(op)
                while True:
                    if isinstance(step, Emit):
                        yield step.value
                        step = next(op)
                    elif step is NEXT_LINE:
                        step = op.send(next(lines, None))
                    elif isinstance(step, Sleep):
                        time.sleep(step.seconds)
                        step = next(op)
                    elif isinstance(step, Parallel):
                        step = op.send(self._send_all(step.calls))
                    else:
                        reply, lines = self._send(step, stack)
                        step = op.send(reply)
            except StopIteration as stop:
                return stop.value
            finally:
                op.close()

    def _run(self, op: Op) -> Any:
        it = self._iter(op)
        while True:
            try:
                next(it)
            except StopIteration as stop:
                return stop.value


class AsyncClient(Operations, _Api):
    """The asynchronous client: the same methods as `Client`, awaited (`items` and `final_records`
    are async iterators)."""

    def __init__(self, url: str | None = None, token: str | None = None, *, timeout: float = 60.0, retries: int = RETRIES,
                 transport: httpx.AsyncBaseTransport | None = None):
        self.retries = retries
        self.http = httpx.AsyncClient(base_url=_base(url), headers=_headers(token), timeout=timeout, follow_redirects=True,
                                      transport=transport)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    def items(self, project: int | str, **filters) -> AsyncIterator[Any]:
        return self._iter(self._items(project, **filters))

    def final_records(self, project: int | str, split: str | None = None, version: int | None = None) -> AsyncIterator[Any]:
        return self._iter(self._final_records(project, split, version))

    async def finals(self, project: int | str, split: str | None = None, *, cache_dir: str | None = None):
        folder = Path(tempfile.mkdtemp(prefix="vlcurate-finals-"))
        _dataset.preload()
        try:
            settings, keys, pages = await self._run(self._download_finals(project, split, folder))
            return await asyncio.to_thread(_dataset.build, folder, settings, keys, pages, cache_dir)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    # -- the driver --------------------------------------------------------------------------------

    async def _send(self, call: Call, stack: AsyncExitStack):
        for attempt in range(self.retries + 1):
            try:
                if call.stream or call.download_to is not None:
                    response = await stack.enter_async_context(self.http.stream(call.method, call.path, **_request(call)))
                    if response.status_code >= 400:
                        check(response.status_code, await response.aread(), dict(response.headers))
                    if call.download_to is not None:
                        with open(call.download_to, "wb") as fh:
                            async for chunk in response.aiter_bytes(1 << 20):
                                fh.write(chunk)
                        return Reply(response.status_code, headers=dict(response.headers)), None
                    return Reply(response.status_code, headers=dict(response.headers)), response.aiter_lines()
                return _reply(await self.http.request(call.method, call.path, **_request(call))), None
            except httpx.TransportError as exc:
                await asyncio.sleep(_retry_delay(call, attempt, self.retries, exc))

    async def _send_one(self, call: Call) -> Reply | VlcurateError:
        try:
            async with AsyncExitStack() as stack:
                return (await self._send(call, stack))[0]
        except VlcurateError as exc:
            return exc

    async def _iter(self, op: Op, result: list | None = None) -> AsyncIterator[Any]:
        async with AsyncExitStack() as stack:
            lines = None
            try:
                step = next(op)
                while True:
                    if isinstance(step, Emit):
                        yield step.value
                        step = next(op)
                    elif step is NEXT_LINE:
                        step = op.send(await anext(lines, None))
                    elif isinstance(step, Sleep):
                        await asyncio.sleep(step.seconds)
                        step = next(op)
                    elif isinstance(step, Parallel):
                        step = op.send(list(await asyncio.gather(*(self._send_one(c) for c in step.calls))))
                    else:
                        reply, lines = await self._send(step, stack)
                        step = op.send(reply)
            except StopIteration as stop:
                if result is not None:
                    result.append(stop.value)
            finally:
                op.close()

    async def _run(self, op: Op) -> Any:
        result: list[Any] = []
        async for _ in self._iter(op, result):
            pass
        return result[0] if result else None


__all__ = ["AsyncClient", "Client", "VlcurateError"]
