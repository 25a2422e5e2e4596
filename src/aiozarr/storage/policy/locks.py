"""`KeyLocks`: one mutual-exclusion lock per key, for every thread and event loop.

A write's read-modify-write of a chunk or shard holds the key's lock, so two writers
in this process never lose each other's update, whatever thread or event loop each
runs on. anyio and asyncio locks belong to one loop, so the table is guarded by a
`threading.Lock`; a waiter parks on a future of its own loop and is woken with
`call_soon_threadsafe` (the pattern of `storage.budget.RequestBudget`).

An entry exists only while its key is held or waited for, so the table stays as
small as the writes in flight however many keys are ever written.

A task knows whether it runs inside a `hold` block, or was started by one
(`holds_any`): a read that would take locks of its own there does not, since taking
more keys in another order than sorted could deadlock.

    async with locks.hold(["c/0/0", "c/0/1"]):   # sorted order: no deadlock
        ...

A sync call made on the thread of a running event loop blocks that loop until it ends
(`blocking`): a wait of that call, here or in a store's budgets, for what a task of that
loop holds would never end, so it raises `SyncDeadlockError` instead
(`refuse_blocked_wait`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator

from aiozarr.errors import SyncDeadlockError

__all__ = ["HeldByLoop", "KeyLocks", "blocked_loops", "blocking", "refuse_blocked_wait"]

_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]

# Whether the running task is inside a `hold` block; tasks started in one inherit it.
_in_hold: contextvars.ContextVar[bool] = contextvars.ContextVar("aiozarr_in_hold", default=False)


# The event loop whose thread waits for the running sync call (None: the call came from
# a thread without one, or this is no sync call); set for the call's task, inherited by
# the tasks it starts. Only waits of that call can find that loop's tasks blocked: a
# loop blocked by another thread's call runs again when that call returns.
_caller_loop: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "aiozarr_caller_loop", default=None
)


def blocked_loops() -> frozenset[asyncio.AbstractEventLoop]:
    """The event loop whose thread waits for the running sync call, if any (its tasks
    cannot run until the call returns)."""
    loop = _caller_loop.get()
    return frozenset() if loop is None else frozenset((loop,))


@contextlib.contextmanager
def blocking(loop: asyncio.AbstractEventLoop | None) -> Iterator[None]:
    """For the block (a sync call's task): `loop`'s thread waits for it."""
    token = _caller_loop.set(loop)
    try:
        yield
    finally:
        _caller_loop.reset(token)


def refuse_blocked_wait(what: str) -> None:
    """Raise `SyncDeadlockError`: a wait for `what`, held by a task of a blocked loop."""
    raise SyncDeadlockError(
        f"a sync aiozarr call made on the thread of a running event loop waits for "
        f"{what}, held by a task of that same loop, which cannot run until the call "
        "returns; await the async API (`arr.async_array`, `await ...`) inside async "
        "code instead"
    )


class HeldByLoop:
    """How much of a budget (slots, bytes) the tasks of each event loop hold; the
    budget's own lock guards it."""

    def __init__(self) -> None:
        self._held: dict[asyncio.AbstractEventLoop | None, int] = {}

    def add(self, loop: asyncio.AbstractEventLoop | None, amount: int) -> None:
        self._held[loop] = self._held.get(loop, 0) + amount

    def remove(self, loop: asyncio.AbstractEventLoop | None, amount: int) -> None:
        left = self._held.get(loop, 0) - amount
        if left > 0:
            self._held[loop] = left
        else:
            self._held.pop(loop, None)

    def by(self, loops: frozenset[asyncio.AbstractEventLoop]) -> int:
        """What the tasks of `loops` hold together."""
        return sum(self._held.get(loop, 0) for loop in loops)


class KeyLocks:
    """A table of per-key locks usable from any thread and event loop (FIFO per key)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # key -> waiters queued behind the holder; present exactly while the key is held.
        self._held: dict[str, deque[_Waiter]] = {}
        self._holder: dict[str, asyncio.AbstractEventLoop] = {}  # the loop holding a key

    def _after_fork(self) -> None:
        # In a forked child no parent thread runs to release its keys, and the table's
        # lock may have been held at fork time: start with every key free.
        self._lock = threading.Lock()
        self._held = {}
        self._holder = {}

    def waiting(self, key: str) -> int:
        """Acquirers queued behind `key`'s holder now."""
        with self._lock:
            return len(self._held.get(key, ()))

    def __len__(self) -> int:
        """Keys held or waited for now."""
        with self._lock:
            return len(self._held)

    async def acquire(self, key: str) -> None:
        """Wait until `key` is free and take it; pair with `release`. Not reentrant."""
        loop = asyncio.get_running_loop()
        with self._lock:
            queue = self._held.get(key)
            if queue is None:
                self._held[key] = deque()
                self._holder[key] = loop
                return
            if (blocked := _caller_loop.get()) is not None and self._waits_on(key, queue, blocked):
                refuse_blocked_wait(f"the write lock of {key!r}")
            waiter: asyncio.Future[None] = loop.create_future()
            entry = (loop, waiter)
            queue.append(entry)
        try:
            await waiter
        except BaseException:
            with self._lock:
                if entry in queue:  # never granted: just leave the queue
                    queue.remove(entry)
                    raise
            # Granted as we were cancelled: if the grant landed we hold the key and give
            # it back; if the future was cancelled first, `_grant` passes it on.
            if waiter.done() and not waiter.cancelled():
                self.release(key)
            raise

    def release(self, key: str) -> None:
        """Give `key` back: hand it to the next waiter, whatever its loop or thread."""
        with self._lock:
            queue = self._held[key]
            while queue:
                loop, waiter = queue.popleft()
                try:
                    loop.call_soon_threadsafe(self._grant, key, waiter)
                    self._holder[key] = loop
                    return  # the key stays held, now on the waiter's behalf
                except RuntimeError:  # that loop is closed: nobody there will take it
                    continue
            del self._held[key]
            del self._holder[key]

    def _waits_on(
        self, key: str, queue: deque[_Waiter], blocked: asyncio.AbstractEventLoop
    ) -> bool:
        # Lock held. The key's holder, or a waiter granted it first, is on the loop that
        # waits for this sync call.
        return self._holder[key] is blocked or any(other is blocked for other, _ in queue)

    def _grant(self, key: str, waiter: asyncio.Future[None]) -> None:
        if waiter.done():  # cancelled while the grant was on its way: pass it on
            self.release(key)
        else:
            waiter.set_result(None)

    @contextlib.asynccontextmanager
    async def hold(self, keys: Iterable[str]) -> AsyncIterator[None]:
        """Hold every key of `keys` for the block, taken in sorted order (no deadlock)."""
        taken: list[str] = []
        try:
            for key in sorted(set(keys)):
                await self.acquire(key)
                taken.append(key)
            token = _in_hold.set(True)
            try:
                yield
            finally:
                _in_hold.reset(token)
        finally:
            for key in reversed(taken):
                self.release(key)

    @staticmethod
    def holds_any() -> bool:
        """Whether the running task runs inside a `hold` block (of any table), or was
        started by one: it must not wait for more keys (another order than sorted)."""
        return _in_hold.get()
