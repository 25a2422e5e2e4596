"""Where codec work runs: a bounded thread pool, or inline for tiny chunks.

numcodecs releases the GIL in its heavy codecs, so threads give real parallelism.
A thread hop costs tens of microseconds; decoding a few KiB costs less than that,
so chunks under `INLINE_BYTES` are decoded on the event loop itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import anyio

from aiozarr import config

T = TypeVar("T")

# Decoded bytes below which a codec call runs inline (no thread hop): a hop is ~50 us,
# decoding 64 KiB with zstd is ~20 us (benchmarks: random single-element reads).
INLINE_BYTES = 64 << 10

_CPUS = os.cpu_count() or 1

#: Decoded bytes each codec thread must get before a burst of chunks is split between
#: threads: below it, one hop serves the burst (a hop and its task cost the event loop
#: ~50 us; the other bursts of a read keep the other threads busy meanwhile).
SPLIT_BYTES = 1 << 20


def codec_threads() -> int:
    """Threads in the codec pool: the `codec_threads` setting, or one per CPU."""
    return config.get().codec_threads or _CPUS


def split_for_threads(items: Sequence[T], nbytes: int) -> list[Sequence[T]]:
    """`items` (`nbytes` decoded bytes in all) cut into groups of one codec call each: a
    group per codec thread, but no more groups than whole `SPLIT_BYTES` in them."""
    groups = max(1, min(codec_threads(), nbytes // SPLIT_BYTES, len(items)))
    size = max(-(-len(items) // groups), 1)
    return [items[start : start + size] for start in range(0, len(items), size)]


async def run_in_groups(
    items: Sequence[T], nbytes: int, run: Callable[[Sequence[T]], Awaitable[None]]
) -> None:
    """`run(group)` for each group `split_for_threads` cuts `items` into, concurrently
    (no task group for one)."""
    groups = split_for_threads(items, nbytes)
    if len(groups) == 1:
        await run(groups[0])
        return
    async with anyio.create_task_group() as tg:
        for group in groups:
            tg.start_soon(run, group)


class _Pool:
    """The process's codec threads, sized by the `codec_threads` setting, shared by every
    event loop. A plain thread pool: a hop through it is a submit and one wake of the
    loop, where anyio's worker threads add a limiter and checkpoints to each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._threads = 0

    def executor(self) -> ThreadPoolExecutor:
        threads = codec_threads()
        executor = self._executor
        if executor is None or self._threads != threads:
            with self._lock:
                if self._executor is None or self._threads != threads:
                    old = self._executor
                    self._executor = ThreadPoolExecutor(threads, "aiozarr-codec")
                    self._threads = threads
                    if old is not None:  # its jobs finish; its threads then end
                        old.shutdown(wait=False)
                executor = self._executor
        return executor

    def _after_fork(self) -> None:
        # The parent's threads are not the child's: a pool that thinks it has them
        # would never start one.
        self._lock = threading.Lock()
        self._executor = None


_POOL = _Pool()
os.register_at_fork(after_in_child=_POOL._after_fork)


async def run_codec(fn: Callable[..., T], *args: Any, nbytes: int | None = None) -> T:
    """Run `fn(*args)` on the codec pool, or inline when `nbytes` is small.

    A cancelled caller waits for a job already running to end (it writes into the
    caller's output), and is then cancelled; a job not yet started never runs.
    """
    if nbytes is not None and nbytes <= INLINE_BYTES:
        return fn(*args)
    job = _POOL.executor().submit(contextvars.copy_context().run, fn, *args)
    try:
        return await asyncio.wrap_future(job)
    except asyncio.CancelledError:
        while not job.done():  # running: cannot be stopped, so wait it out
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.shield(asyncio.wrap_future(job))
        raise
