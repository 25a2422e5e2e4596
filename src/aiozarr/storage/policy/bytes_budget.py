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

from aiozarr.storage.policy.locks import HeldByLoop, blocked_loops, refuse_blocked_wait

__all__ = ["ByteBudget", "HeldBytes"]

# The loop running on this thread, or None: a C call, cheap on every release.
_get_running_loop = asyncio._get_running_loop

_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[int]", int]


class ByteBudget:
    """Bytes in flight up to `capacity` (FIFO); records the peak so tests can check it."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(int(capacity), 1)
        self.held = 0
        self.peak = 0
        self._lock = threading.Lock()
        self._waiters: deque[_Waiter] = deque()
        # Bytes held per event loop (a sync call must not wait on a blocked one's).
        self._by_loop = HeldByLoop()

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
                return self._take(want, loop)
            blocked = blocked_loops()
            if blocked and self._stuck(blocked - {loop}) > self.capacity - want:
                refuse_blocked_wait("the store's bytes in flight (`max_inflight_bytes`)")
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
        loop = _get_running_loop()
        with self._lock:
            self._give(taken, loop)
            self._hand_over()

    def _take(self, want: int, loop: asyncio.AbstractEventLoop | None) -> int:
        self.held += want
        self.peak = max(self.peak, self.held)
        self._by_loop.add(loop, want)
        return want

    def _give(self, taken: int, loop: asyncio.AbstractEventLoop | None) -> None:
        self.held -= taken
        self._by_loop.remove(loop, taken)

    def _stuck(self, blocked: frozenset[asyncio.AbstractEventLoop]) -> int:
        # Lock held. Bytes that tasks of `blocked` loops hold, or will be granted first.
        held = self._by_loop.by(blocked)
        return held + sum(
            min(nbytes, self.capacity) for loop, _, nbytes in self._waiters if loop in blocked
        )

    def _hand_over(self) -> None:
        # Lock held. The bytes are counted for the waiter now, before its loop runs.
        while self._waiters:
            loop, waiter, nbytes = self._waiters[0]
            want = min(nbytes, self.capacity)
            if self.held + want > self.capacity:
                return
            self._waiters.popleft()
            self._take(want, loop)
            try:
                loop.call_soon_threadsafe(self._grant, waiter, want)
            except RuntimeError:  # that loop is closed: nobody will use the bytes
                self._give(want, loop)

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
        self._by_loop = HeldByLoop()


class HeldBytes:
    """Bytes one batch of a read took from a `ByteBudget`, given back as its answers are
    decoded (at most what was taken: a batch larger than the budget took all of it)."""

    def __init__(self, budget: ByteBudget, taken: int) -> None:
        self.budget, self.left = budget, taken

    def release(self, nbytes: int) -> None:
        """Give back `nbytes` of those held (fewer if fewer are left)."""
        nbytes = min(nbytes, self.left)
        self.left -= nbytes
        self.budget.release(nbytes)

    def release_all(self) -> None:
        """Give back every byte still held."""
        self.release(self.left)
