"""`RequestBudget`: the requests one store may have in flight, shared by every caller.

One budget per store serves every array, call and thread that uses the store: async
callers in any event loop and the sync facade's portal thread alike. anyio and asyncio
semaphores belong to one loop, so this one is a counter under a `threading.Lock`;
a waiter parks on a future of its own loop and is woken with `call_soon_threadsafe`.

The limit follows AIMD, like TCP's congestion window: a throttling answer (503
SlowDown, 429) halves it, at most once per round of requests (only a request that
started after the last cut can cut again, so one burst of 503s costs one halving per
round, not one per failed request); every `recovery_successes` successes add one back,
up to the configured maximum.

What the requests did (counts, latencies) is not kept here: see `storage/policy/statistics.py`.

    async with store.budget:           # one slot, reentrant within a task
        ...
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from aiozarr.storage.policy.locks import HeldByLoop, blocked_loops, refuse_blocked_wait

__all__ = ["RequestBudget", "Slot"]

# The loop running on this thread, or None: a C call, cheap on every slot's way.
_get_running_loop = asyncio._get_running_loop


@dataclass(frozen=True, slots=True)
class Slot:
    """A held request slot; `epoch` says which limit cut it started under."""

    epoch: int


class RequestBudget:
    """A thread-safe, loop-independent budget of requests in flight, with AIMD.

    `limit` is the current limit, `maximum` the configured one. `stats()` reports the
    limit and its lowest, requests in flight, their peak and the requests waiting.
    """

    def __init__(self, maximum: int, *, recovery_successes: int = 16) -> None:
        if maximum < 1:
            raise ValueError(f"a request budget needs at least 1 slot, got {maximum}")
        self.maximum = maximum
        self.recovery_successes = max(1, recovery_successes)
        self._lock = threading.Lock()
        self._limit = maximum
        self._inflight = 0
        self._peak = 0
        self._lowest = maximum
        self._epoch = 0
        self._successes = 0
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()
        self._holders: dict[asyncio.Task[Any], tuple[Slot, int]] = {}
        # Slots in flight per event loop (a sync call must not wait on a blocked one's).
        self._by_loop = HeldByLoop()

    def __reduce__(self) -> tuple[Any, ...]:
        # Requests in flight belong to this process: a copy starts afresh.
        return (RequestBudget, (self.maximum,), {"recovery_successes": self.recovery_successes})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.recovery_successes = state["recovery_successes"]

    # -- state -------------------------------------------------------------------------

    @property
    def limit(self) -> int:
        """Requests allowed in flight now (halved on throttling, regrown on success)."""
        return self._limit

    @property
    def inflight(self) -> int:
        return self._inflight

    @property
    def peak_inflight(self) -> int:
        return self._peak

    @property
    def lowest_limit(self) -> int:
        """The lowest the limit has been since creation or `reset_peaks`."""
        return self._lowest

    def stats(self) -> dict[str, int]:
        """Limit and lowest limit, in flight and peak, waiting, as a plain dict."""
        with self._lock:
            return {
                "limit": self._limit,
                "maximum": self.maximum,
                "lowest_limit": self._lowest,
                "inflight": self._inflight,
                "peak_inflight": self._peak,
                "waiting": len(self._waiters),
            }

    def reset_peaks(self) -> None:
        """Start the in-flight peak and the lowest limit afresh from where they are now
        (the limit and requests in flight stay)."""
        with self._lock:
            self._peak = self._inflight
            self._lowest = self._limit

    def set_maximum(self, maximum: int) -> None:
        """Change the configured maximum (a setting changed). A limit at the old maximum
        moves with it; a throttled one stays below the new maximum and regrows to it."""
        maximum = max(1, maximum)
        if maximum == self.maximum:
            return
        with self._lock:
            at_maximum = self._limit >= self.maximum
            self.maximum = maximum
            self._limit = maximum if at_maximum else min(self._limit, maximum)
            self._lowest = min(self._lowest, self._limit)
            self._hand_over()

    # -- AIMD --------------------------------------------------------------------------

    def throttled(self, slot: Slot) -> None:
        """A request holding `slot` was told to slow down (503 / 429): halve the limit.

        Only once per epoch: requests that started before the last cut saw the old,
        higher load and do not cut again.
        """
        with self._lock:
            if slot.epoch != self._epoch:
                return
            self._epoch += 1
            self._successes = 0
            self._limit = max(1, self._limit // 2)
            self._lowest = min(self._lowest, self._limit)

    def succeeded(self) -> None:
        """A request succeeded: one step toward growing the limit back by one."""
        with self._lock:
            self._step_up()

    def _step_up(self) -> None:
        # Lock held.
        if self._limit >= self.maximum:
            return
        self._successes += 1
        if self._successes >= self.recovery_successes:
            self._successes = 0
            self._limit += 1
            self._hand_over()

    # -- slots -------------------------------------------------------------------------

    async def acquire(self) -> Slot:
        """Wait for a slot (FIFO) and take it; pair with `release`."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._inflight < self._limit and not self._waiters:
                return self._take(loop)
            blocked = blocked_loops()
            if blocked and self._stuck(blocked - {loop}) >= self._limit:
                refuse_blocked_wait("a request slot of the store")
            waiter: asyncio.Future[None] = loop.create_future()
            entry = (loop, waiter)
            self._waiters.append(entry)
        try:
            await waiter
        except BaseException:
            with self._lock:
                if entry in self._waiters:  # never granted: just leave the queue
                    self._waiters.remove(entry)
                    raise
            # Granted as we were cancelled: if the grant landed, give the slot back;
            # if the future was cancelled first, `_grant` gives it back.
            if waiter.done() and not waiter.cancelled():
                self.release()
            raise
        with self._lock:
            return Slot(self._epoch)

    def take_free(self) -> Slot | None:
        """A slot if one is free now and nobody waits for one (pair with `release`);
        None, never waiting, if not."""
        with self._lock:
            if self._inflight < self._limit and not self._waiters:
                return self._take(_get_running_loop())
            return None

    def pass_on(self, succeeded: bool, want: int) -> tuple[int, Slot]:
        """`release` (and `succeeded`, if it did), then take up to `want` slots that are
        free with nobody waiting: a batch's next requests, for one lock. How many were
        taken, and the slot they hold."""
        loop = _get_running_loop()
        with self._lock:
            self._give(loop)
            if succeeded:
                self._step_up()
            self._hand_over()
            taken = 0
            while taken < want and self._inflight < self._limit and not self._waiters:
                self._take(loop)
                taken += 1
            return taken, Slot(self._epoch)

    def release(self) -> None:
        """Give a slot back and wake the next waiter, whatever loop or thread it is on."""
        loop = _get_running_loop()
        with self._lock:
            self._give(loop)
            self._hand_over()

    def _take(self, loop: asyncio.AbstractEventLoop | None) -> Slot:
        self._inflight += 1
        self._peak = max(self._peak, self._inflight)
        self._by_loop.add(loop, 1)
        return Slot(self._epoch)

    def _give(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self._inflight -= 1
        self._by_loop.remove(loop, 1)

    def _stuck(self, blocked: frozenset[asyncio.AbstractEventLoop]) -> int:
        # Lock held. Slots that tasks of `blocked` loops hold, or will be granted first.
        held = self._by_loop.by(blocked)
        return held + sum(loop in blocked for loop, _ in self._waiters)

    def _hand_over(self) -> None:
        # Lock held. The slot is counted for the waiter now, before its loop runs.
        while self._waiters and self._inflight < self._limit:
            loop, waiter = self._waiters.popleft()
            self._take(loop)
            try:
                loop.call_soon_threadsafe(self._grant, waiter)
            except RuntimeError:  # that loop is closed: nobody will use the slot
                self._give(loop)

    def _grant(self, waiter: asyncio.Future[None]) -> None:
        if waiter.done():  # cancelled while the grant was on its way
            self.release()
        else:
            waiter.set_result(None)

    # -- `async with budget:` ----------------------------------------------------------

    async def __aenter__(self) -> Slot:
        """Take a slot for this task; a task already holding one just nests."""
        task = asyncio.current_task()
        assert task is not None
        return await self.hold(task)

    async def __aexit__(self, *exc: object) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.let_go(task)

    async def hold(self, task: asyncio.Task[Any]) -> Slot:
        """`async with budget:` for `task` (the running one), found once by the caller:
        asking asyncio for it costs a system call on every ask (its fork check)."""
        with self._lock:  # one lock for the common case: a free slot, taken at once
            held = self._holders.get(task)
            if held is not None:
                self._holders[task] = (held[0], held[1] + 1)
                return held[0]
            if self._inflight < self._limit and not self._waiters:
                slot = self._take(task.get_loop())
                self._holders[task] = (slot, 1)
                return slot
        slot = await self.acquire()
        with self._lock:
            self._holders[task] = (slot, 1)
        return slot

    def let_go(self, task: asyncio.Task[Any]) -> None:
        """Leave what `hold(task)` entered."""
        with self._lock:
            slot, depth = self._holders[task]
            if depth > 1:
                self._holders[task] = (slot, depth - 1)
                return
            del self._holders[task]
            self._give(task.get_loop())  # `release`, under the lock already held
            self._hand_over()

    def _after_fork(self) -> None:
        """Forget what belonged to the parent: its requests in flight, its waiters (futures
        of loops whose threads the child does not have) and the lock, which a parent thread
        may have held at fork time. The limit stays."""
        self._lock = threading.Lock()
        self._inflight = 0
        self._waiters = deque()
        self._holders = {}
        self._by_loop = HeldByLoop()
