"""Inputs prepared in a thread pool sized to the machine, a batch ahead of the model that consumes them.

The worker's model backends hand this module a list of sources (encoded images, or functions that
return an image) and a `prepare` function (decode, resize, crop: the CPU work before a forward
pass). Pillow releases the GIL while it decodes and resizes, and torch and onnxruntime release it
while they compute, so the pool's threads run beside each other and beside the model: while the
model works on one batch the pool prepares the next (`ahead` batches in advance, so memory stays
bounded by a few batches whatever the job's size).

A source that cannot be prepared (a corrupt or truncated file, something that is not an image) is
reported with its position and a one-line reason; the other sources of its batch go on.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def cpus() -> int:
    """The CPUs this process may run on (a container's or taskset's share, not the host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@lru_cache(maxsize=1)
def pool() -> ThreadPoolExecutor:
    """One pool per process, shared by the backends, with one thread per CPU."""
    return ThreadPoolExecutor(max_workers=cpus(), thread_name_prefix="vlcurate-prepare")


def reason(exc: BaseException) -> str:
    """One line saying why a source could not be prepared (no memory addresses, no traceback)."""
    from PIL import UnidentifiedImageError

    if isinstance(exc, UnidentifiedImageError):
        return "not an image Pillow can read (corrupt, or an unsupported format)"
    text = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass
class Batch(Generic[T]):
    """One batch of prepared sources: `positions[k]` is where `values[k]` came from in the input."""

    positions: list[int] = field(default_factory=list)
    values: list[T] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)


def batches(sources: Sequence[Any], prepare: Callable[[Any], T], size: int, *, ahead: int = 1) -> Iterator[Batch[T]]:
    """`prepare(source)` for every source, yielded in order in batches of `size`, with the pool
    working on up to `ahead` batches beyond the one being consumed."""
    starts = list(range(0, len(sources), max(1, size)))
    pending: deque[tuple[int, list[Future]]] = deque()

    def submit(start: int) -> None:
        chunk = range(start, min(start + size, len(sources)))
        pending.append((start, [pool().submit(prepare, sources[i]) for i in chunk]))

    following = iter(starts)
    try:
        for start in following:
            submit(start)
            if len(pending) > ahead:
                break
        while pending:
            start, futures = pending.popleft()
            nxt = next(following, None)
            if nxt is not None:
                submit(nxt)
            batch: Batch[T] = Batch()
            for offset, future in enumerate(futures):
                try:
                    value = future.result()
                except Exception as exc:  # one bad source fails only itself
                    batch.errors[start + offset] = reason(exc)
                    continue
                batch.positions.append(start + offset)
                batch.values.append(value)
            yield batch
    finally:
        for _, futures in pending:  # the consumer stopped early: drop the work not yet started
            for future in futures:
                future.cancel()


def run_all(sources: Sequence[Any], work: Callable[[Any], T]) -> tuple[list[T | None], dict[int, str]]:
    """`work(source)` for every source on the pool: the results in order (None where it failed)
    and the reasons of the failures by position."""
    results: list[T | None] = [None] * len(sources)
    errors: dict[int, str] = {}
    for batch in batches(sources, work, max(1, len(sources)), ahead=0):
        for position, value in zip(batch.positions, batch.values, strict=True):
            results[position] = value
        errors.update(batch.errors)
    return results, errors
