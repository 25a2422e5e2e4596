"""`ByteBudget`: compressed bytes that reads of one store may hold at once.

A weighted semaphore usable from any thread and event loop (the sync facade's loop
and an application's own loop share one store): a counter under a `threading.Lock`,
waiters parked on futures of their own loops and woken, in order, with
`call_soon_threadsafe` (the pattern of `storage.budget.RequestBudget`).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque

__all__ = ["ByteBudget"]

_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[int]", int]


class ByteBudget:
    """Bytes in flight up to `capacity` (FIFO); records the peak so tests can check it."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(int(capacity), 1)
        self.held = 0
        self.peak = 0
        self._lock = threading.Lock()
        self._waiters: deque[_Waiter] = deque()

    def set_capacity(self, capacity: int) -> None:
        """Change the capacity (a setting changed); waiters that now fit go ahead."""
        capacity = max(int(capacity), 1)
        if capacity == self.capacity:
            return
        with self._lock:
            self.capacity = capacity
            self._hand_over()

    async def acquire(self, nbytes: int) -> int:
        """Wait until `nbytes` fit, take them, and return what was taken (pass it to
        `release`). More than the whole budget waits for it to be empty and takes all
        of it, so it still runs (alone)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            want = min(int(nbytes), self.capacity)
            if not self._waiters and self.held + want <= self.capacity:
                return self._take(want)
            waiter: asyncio.Future[int] = loop.create_future()
            entry = (loop, waiter, int(nbytes))
            self._waiters.append(entry)
        try:
            return await waiter
        except BaseException:
            with self._lock:
                if entry in self._waiters:  # never granted: just leave the queue
                    self._waiters.remove(entry)
                    raise
            if waiter.done() and not waiter.cancelled():  # granted as we were cancelled
                self.release(waiter.result())
            raise

    def release(self, taken: int) -> None:
        """Give `taken` bytes back and wake the waiters that now fit, in order."""
        with self._lock:
            self.held -= taken
            self._hand_over()

    def _take(self, want: int) -> int:
        self.held += want
        self.peak = max(self.peak, self.held)
        return want

    def _hand_over(self) -> None:
        # Lock held. The bytes are counted for the waiter now, before its loop runs.
        while self._waiters:
            loop, waiter, nbytes = self._waiters[0]
            want = min(nbytes, self.capacity)
            if self.held + want > self.capacity:
                return
            self._waiters.popleft()
            self._take(want)
            try:
                loop.call_soon_threadsafe(self._grant, waiter, want)
            except RuntimeError:  # that loop is closed: nobody will use the bytes
                self.held -= want

    def _grant(self, waiter: asyncio.Future[int], want: int) -> None:
        if waiter.done():  # cancelled while the grant was on its way
            self.release(want)
        else:
            waiter.set_result(want)

    def _after_fork(self) -> None:
        # What parent threads held and waited for is not the child's.
        self._lock = threading.Lock()
        self.held = 0
        self._waiters = deque()
