"""`HeldInAThread`: something held by another thread of the process, on its own event
loop, from the start of a `with` block to its end (a writer in the middle of a change,
a parent thread holding locks as the process forks)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager


class HeldInAThread:
    """`hold()` entered on a daemon thread's own event loop as the block starts, and left
    as it ends."""

    def __init__(self, hold: Callable[[], AbstractAsyncContextManager[object]]) -> None:
        self._hold = hold
        self.ready, self.release = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=asyncio.run, args=(self._run(),), daemon=True)

    async def _run(self) -> None:
        async with self._hold():
            self.ready.set()
            await asyncio.to_thread(self.release.wait)

    def __enter__(self) -> HeldInAThread:
        self.thread.start()
        assert self.ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.thread.join(10)
