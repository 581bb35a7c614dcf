"""The drivers of the operations (`_ops*`, sans I/O): `SyncDriver` over httpx's synchronous client,
`AsyncDriver` over its async one. A call that fails to connect is sent again when idempotent; a
`Parallel` step's calls go out at once (threads, or tasks)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, ExitStack
from typing import Any

import httpx

from vlcurate import _transport
from vlcurate._ops_admin import AdminOps
from vlcurate._ops_drafting import DraftingOps
from vlcurate._ops_quality import QualityOps
from vlcurate._ops_workspaces import WorkspaceOps
from vlcurate._protocol import NEXT_LINE, Call, Emit, Op, Parallel, Reply, Sleep, T, check
from vlcurate.errors import VlcurateError


class Operations(QualityOps, DraftingOps, AdminOps, WorkspaceOps):
    """Every operation of the API (sans I/O); the clients drive them."""


class SyncDriver(Operations):
    """Runs operations over httpx's synchronous client."""

    http: httpx.Client
    retries: int

    def _send(self, call: Call, stack: ExitStack) -> tuple[Reply, Iterator[str] | None]:
        for attempt in range(self.retries + 1):
            try:
                if call.stream or call.download_to is not None:
                    response = stack.enter_context(self.http.stream(call.method, call.path, **_transport.request_args(call)))
                    if response.status_code >= 400:
                        check(response.status_code, response.read(), dict(response.headers))
                    if call.download_to is not None:
                        with open(call.download_to, "wb") as fh:
                            for chunk in response.iter_bytes(1 << 20):
                                fh.write(chunk)
                        return Reply(response.status_code, headers=dict(response.headers)), None
                    return Reply(response.status_code, headers=dict(response.headers)), response.iter_lines()
                return _transport.reply_of(self.http.request(call.method, call.path, **_transport.request_args(call))), None
            except httpx.TransportError as exc:
                time.sleep(_transport.retry_delay(call, attempt, self.retries, exc))
        raise AssertionError("unreachable: the last attempt returns or raises")

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

    def _iter(self, op: Op[Any]) -> Generator[Any, None, Any]:
        with ExitStack() as stack:
            lines: Iterator[str] | None = None
            try:
                step = next(op)
                while True:
                    if isinstance(step, Emit):
                        yield step.value
                        step = next(op)
                    elif step is NEXT_LINE:
                        step = op.send(next(lines, None) if lines is not None else None)
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

    def _run(self, op: Op[T]) -> T:
        it = self._iter(op)
        while True:
            try:
                next(it)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]  # the operation's T


class AsyncDriver(Operations):
    """Runs operations over httpx's async client."""

    http: httpx.AsyncClient
    retries: int

    async def _send(self, call: Call, stack: AsyncExitStack) -> tuple[Reply, AsyncIterator[str] | None]:
        for attempt in range(self.retries + 1):
            try:
                if call.stream or call.download_to is not None:
                    response = await stack.enter_async_context(self.http.stream(call.method, call.path, **_transport.request_args(call)))
                    if response.status_code >= 400:
                        check(response.status_code, await response.aread(), dict(response.headers))
                    if call.download_to is not None:
                        with open(call.download_to, "wb") as fh:
                            async for chunk in response.aiter_bytes(1 << 20):
                                fh.write(chunk)
                        return Reply(response.status_code, headers=dict(response.headers)), None
                    return Reply(response.status_code, headers=dict(response.headers)), response.aiter_lines()
                return _transport.reply_of(await self.http.request(call.method, call.path, **_transport.request_args(call))), None
            except httpx.TransportError as exc:
                await asyncio.sleep(_transport.retry_delay(call, attempt, self.retries, exc))
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _send_one(self, call: Call) -> Reply | VlcurateError:
        try:
            async with AsyncExitStack() as stack:
                return (await self._send(call, stack))[0]
        except VlcurateError as exc:
            return exc

    async def _iter(self, op: Op[Any], result: list[Any] | None = None) -> AsyncIterator[Any]:
        async with AsyncExitStack() as stack:
            lines: AsyncIterator[str] | None = None
            try:
                step = next(op)
                while True:
                    if isinstance(step, Emit):
                        yield step.value
                        step = next(op)
                    elif step is NEXT_LINE:
                        step = op.send(await anext(lines, None) if lines is not None else None)
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

    async def _run(self, op: Op[T]) -> T:
        result: list[T] = []
        async for _ in self._iter(op, result):
            pass
        return result[0]
