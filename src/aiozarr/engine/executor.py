"""Where codec work runs: a bounded thread pool, or inline for tiny chunks.

numcodecs releases the GIL in its heavy codecs, so threads give real parallelism.
A thread hop costs tens of microseconds; decoding a few KiB costs less than that,
so chunks under `INLINE_BYTES` are decoded on the event loop itself. So are the chunks
of a small read that runs alone in the process (`READS`): the pool would decode them
on one thread too, and nothing else waits for the loop meanwhile.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import os
import queue
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
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


class CodecPool:
    """The process's codec threads, sized by the `codec_threads` setting, shared by every
    event loop: daemon threads taking jobs from one queue.

    Not a `ThreadPoolExecutor`: concurrent.futures shuts those down as the main thread
    returns, before non-daemon threads end and `atexit` handlers run, so their writes
    would fail. A change of size never replaces the pool under a submitter: threads are
    added at once, and surplus ones end after their next job.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._alive = 0  # threads started and not ended
        self._idle = 0  # of those, waiting for a job
        self._queued = 0  # jobs no thread has taken yet
        self._size = 0

    @property
    def threads(self) -> int:
        """Threads alive now."""
        return self._alive

    def submit(self, fn: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
        """Run `fn(*args)` on a codec thread; raises RuntimeError when no thread exists
        and none can start (late in interpreter exit)."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        size = codec_threads()
        with self._lock:
            self._size = size
            self._queued += 1
            start = self._queued > self._idle and self._alive < size
            if start:
                self._alive += 1
        if start:
            try:
                threading.Thread(target=self._work, name="aiozarr-codec", daemon=True).start()
            except RuntimeError:  # "can't create new thread at interpreter shutdown"
                with self._lock:
                    self._alive -= 1
                    if self._alive == 0:
                        self._queued -= 1
                        raise
        self._jobs.put((future, fn, args))
        return future

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            job = self._jobs.get()
            with self._lock:
                self._idle -= 1
                self._queued -= 1
            future, fn, args = job
            if future.set_running_or_notify_cancel():  # else cancelled before it ran
                try:
                    future.set_result(fn(*args))
                except BaseException as error:
                    future.set_exception(error)
            del future, fn, args, job  # nothing of a job kept alive while idle
            with self._lock:
                if self._alive > self._size:  # the setting shrank: this one is surplus
                    self._alive -= 1
                    return

    def after_fork(self) -> None:
        """Forget the parent's threads and queue: the child has neither."""
        self._lock = threading.Lock()
        self._jobs = queue.SimpleQueue()
        self._alive = self._idle = self._queued = 0


_Job = tuple["concurrent.futures.Future[Any]", Callable[..., Any], tuple[Any, ...]]

POOL = CodecPool()
os.register_at_fork(after_in_child=POOL.after_fork)


class ReadsInProgress:
    """How many reads are in progress in this process, on any of its event loops."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    @contextlib.contextmanager
    def counted(self) -> Iterator[bool]:
        """Count one read while the block runs; gives whether it began alone."""
        with self._lock:
            self._count += 1
            alone = self._count == 1
        try:
            yield alone
        finally:
            with self._lock:
                self._count -= 1

    def after_fork(self) -> None:
        """The child runs none of the parent's reads."""
        self._lock = threading.Lock()
        self._count = 0


READS = ReadsInProgress()
os.register_at_fork(after_in_child=READS.after_fork)


def decodes_here(alone: bool, nbytes: int) -> bool:
    """Whether a read of `nbytes` decoded bytes in all decodes on its event loop's
    thread: when it began `alone` and the pool would decode it on one thread anyway
    (`split_for_threads`). A hop to the pool and back costs more CPU than it saves
    there: ~0.2 ms per single-chunk read at 0 ms latency (`benchmarks`, random)."""
    return alone and nbytes <= SPLIT_BYTES


async def run_codec(
    fn: Callable[..., T], *args: Any, nbytes: int | None = None, here: bool = False
) -> T:
    """Run `fn(*args)` on the codec pool, or inline when `nbytes` is small or `here`.

    A cancelled caller waits for a job already running to end (it writes into the
    caller's output), and is then cancelled; a job not yet started never runs.
    """
    if here or (nbytes is not None and nbytes <= INLINE_BYTES):
        return fn(*args)
    try:
        job = POOL.submit(contextvars.copy_context().run, fn, *args)
    except RuntimeError:  # no codec thread can start any more: do the work here
        return fn(*args)
    try:
        return await asyncio.wrap_future(job)
    except asyncio.CancelledError:
        while not job.done():  # running: cannot be stopped, so wait it out
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.shield(asyncio.wrap_future(job))
        raise
