"""A budget of bytes in flight: a read larger than it streams through it; and the
memory a read's result may take."""

from __future__ import annotations

import asyncio
import functools
import os
import weakref

import anyio

from aiozarr import config


class ByteBudget:
    """Weighted semaphore over bytes; records the peak held so tests can check the bound."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(int(capacity), 1)
        self.held = 0
        self.peak = 0
        self._changed = anyio.Condition()

    async def acquire(self, nbytes: int) -> int:
        """Wait until `nbytes` fit, take them, and return what was taken.

        A request larger than the whole budget waits for the budget to be empty and
        then takes all of it, so it still runs (alone).
        """
        want = min(int(nbytes), self.capacity)
        async with self._changed:
            while self.held + want > self.capacity:
                await self._changed.wait()
            self.held += want
            self.peak = max(self.peak, self.held)
        return want

    async def release(self, taken: int) -> None:
        async with self._changed:
            self.held -= taken
            self._changed.notify_all()


_budgets: weakref.WeakKeyDictionary[object, dict[int, ByteBudget]] = weakref.WeakKeyDictionary()


def budget_for(store: object) -> ByteBudget:
    """The byte budget shared by every read of `store` on the running event loop."""
    per_loop = _budgets.setdefault(store, {})
    loop_id = id(asyncio.get_running_loop())
    budget = per_loop.get(loop_id)
    if budget is None:
        budget = per_loop[loop_id] = ByteBudget(config.get().max_inflight_bytes)
    return budget


@functools.cache
def memory_bytes() -> int:
    """The memory this process may use: the machine's, or its container's when smaller."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:  # cgroup v2: "max" or a number of bytes
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
    except OSError:
        return total
    return min(total, int(limit)) if limit.isdigit() else total
