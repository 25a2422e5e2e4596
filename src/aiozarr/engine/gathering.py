"""The reads of many `getitem` calls handed over to be read as one plan (`read_many`).

`engine/read.py::read` asks `gathering()` first. Where a gathering is in force (a context
variable: tasks started inside inherit it) the read hands its plan over and waits.

- `Collector`: `aiozarr.read_many` knows how many reads it starts; once each has handed
  its plan over (or ended without one), they are read as one.
- `Window`: `aiozarr.batch()` and xarray's `load_async` cannot know how many reads will
  come. The first read opens a window and yields to the event loop until a turn brings
  no new read (a few turns at most: reads that keep arriving, as a thread pool's, do not
  hold the first back for long); the reads in the window are read as one, and the next
  read opens a new window. A read alone in its window is read on its own (a large
  shard in parts); where the window's read fails, each of its reads is made again on its
  own, so an error is only the read's that met it.

A gathering belongs to the event loop it was made on (else the loop of its first read):
a read on another loop (a sync call's, on aiozarr's loop, made inside the caller's
`batch()`) reads on its own, as futures of one loop cannot be awaited on another.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import weakref
from collections.abc import Iterator, Sequence

import anyio
import anyio.lowlevel
import numpy as np

from aiozarr.engine.many import Selected, read_many
from aiozarr.engine.stored_array import StoredArray
from aiozarr.selection.indexing import ChunkProjection

#: The most loop turns a window stays open.
MOST_TURNS = 8

_gathering: contextvars.ContextVar[Collector | Window | None] = contextvars.ContextVar(
    "aiozarr_gathering", default=None
)
_joined: contextvars.ContextVar[bool] = contextvars.ContextVar("aiozarr_joined", default=False)


class _Owner:
    """The event loop a gathering belongs to: the one running where it was made, else
    the loop of its first read."""

    def __init__(self) -> None:
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._lock = threading.Lock()

    def is_running(self) -> bool:
        """Whether the running event loop is the owner (binding it when there is none yet)."""
        loop = asyncio.get_running_loop()
        if self._loop is None:
            with self._lock:  # two loops' first reads at once: one of them owns it
                if self._loop is None:
                    self._loop = loop
        return self._loop is loop


class Collector:
    """The reads of `expected` tasks, gathered to be read as one."""

    def __init__(self, expected: int) -> None:
        self.owner = _Owner()
        self.expected = expected
        self.entries: list[tuple[Selected, asyncio.Future[frozenset[str]]]] = []
        self.passed = 0  # tasks that ended without a read to gather
        self.ready = anyio.Event()
        self._check()

    async def join(
        self, array: StoredArray, projections: Sequence[ChunkProjection], out: np.ndarray
    ) -> frozenset[str] | None:
        """Hand this read over and wait until all of them have been read; None (read it
        on its own) on an event loop other than the collector's."""
        if not self.owner.is_running():
            return None
        future: asyncio.Future[frozenset[str]] = asyncio.get_running_loop().create_future()
        self.entries.append((Selected(array, projections, out), future))
        _joined.set(True)
        self._check()
        return await future

    def task_ended(self) -> None:
        """A task of the `expected` ended; one that read nothing through `join` counts as done."""
        if not _joined.get():
            self.passed += 1
            self._check()

    def _check(self) -> None:
        if len(self.entries) + self.passed >= self.expected:
            self.ready.set()

    async def read(self) -> None:
        """Once every task has handed its read over (or ended), read them all as one."""
        await self.ready.wait()
        missing = await read_many([selected for selected, _ in self.entries])
        for (_, future), keys in zip(self.entries, missing, strict=True):
            future.set_result(keys)


class _ReadAlone(Exception):
    """The window's read failed or was cancelled: each of its reads reads on its own."""


class Window:
    """Reads started while it is in force, read together a window at a time."""

    def __init__(self) -> None:
        self.owner = _Owner()
        self._open: list[tuple[Selected, asyncio.Future[frozenset[str]]]] | None = None

    async def join(
        self, array: StoredArray, projections: Sequence[ChunkProjection], out: np.ndarray
    ) -> frozenset[str] | None:
        """Read with the others of this read's window; None: read it on its own (as on
        an event loop other than the window's)."""
        if not self.owner.is_running():
            return None
        entry = (Selected(array, projections, out), asyncio.get_running_loop().create_future())
        if self._open is not None:  # a window is open: join it
            self._open.append(entry)
            try:
                return await entry[1]
            except _ReadAlone:
                return None
        window = self._open = [entry]
        try:
            try:
                seen, turns = 0, 0
                while seen != len(window) and turns < MOST_TURNS:
                    seen, turns = len(window), turns + 1
                    await anyio.lowlevel.checkpoint()
            finally:
                self._open = None
            if len(window) > 1:
                missing = await read_many([selected for selected, _ in window])
                for (_, future), keys in zip(window[1:], missing[1:], strict=True):
                    if not future.done():  # (a reader that was cancelled)
                        future.set_result(keys)
                return missing[0]
        except Exception:
            pass  # read on its own below: the error, if it is this read's, comes again
        finally:
            for _, future in window[1:]:
                if not future.done():
                    future.set_exception(_ReadAlone())
        return None


_loop_windows: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Window] = (
    weakref.WeakKeyDictionary()
)


def loop_window() -> Window:
    """The window every read on the running event loop may join (reads that callers
    started apart, such as xarray's one per variable)."""
    loop = asyncio.get_running_loop()
    window = _loop_windows.get(loop)
    if window is None:
        window = _loop_windows[loop] = Window()
    return window


def gathering() -> Collector | Window | None:
    """The gathering in force here, if any."""
    return _gathering.get()


@contextlib.contextmanager
def gather(gathering: Collector | Window | None) -> Iterator[None]:
    """Reads started in this block (and in tasks it starts) join `gathering`; None: they
    read on their own, outside any gathering in force around the block."""
    token = _gathering.set(gathering)
    try:
        yield
    finally:
        _gathering.reset(token)
