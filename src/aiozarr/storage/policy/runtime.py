"""`StoreRuntime`: what every caller of one store shares, whatever its thread or loop.

A store's runtime holds its request budget (requests in flight, with AIMD), its byte
budget (compressed bytes reads may hold at once), its write locks (one per key being
written) and its statistics (what its requests did: counts, bytes, latencies). Every
array, task, thread and event loop using the store, or an equal store (the same
directory, bucket and prefix, ...), gets the same runtime, so "one budget per store"
holds however the store was opened.

A runtime takes its maxima from the settings in force where its store is first used,
then follows the process-wide settings as they change: `config.set(max_concurrency=2)`
(a plain call) after a first read takes effect on the open store. A `with
config.set(...)` block does not reach a runtime made outside it: one store serves
callers in and out of the block at once, and cannot be sized for both.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

from aiozarr import config
from aiozarr.storage.policy.budget import RequestBudget
from aiozarr.storage.policy.bytes_budget import ByteBudget
from aiozarr.storage.policy.locks import KeyLocks
from aiozarr.storage.policy.statistics import RequestStats
from aiozarr.storage.policy.whole_reads import WholeReads

__all__ = ["ConditionVerdict", "StoreRuntime", "runtime_for", "runtime_in_use"]


class ConditionVerdict:
    """What a store's server was found to do with write conditions (one per runtime).

    `probed`: a probe finished; `problem`: None where conditions are honoured, else
    what the server did instead."""

    def __init__(self) -> None:
        self.probed = False
        self.problem: str | None = None

    def record(self, problem: str | None) -> None:
        self.problem = problem
        self.probed = True  # last: a reader that sees it probed sees the problem


class StoreRuntime:
    """One store's request budget, byte budget, write locks and request statistics, and
    what its server was found to do (honour write conditions? ignore ranges?).

    `max_concurrency` pins the request maximum (a store's own argument); None follows
    the `max_concurrency` setting. `where` names the store in the policy's errors.
    """

    def __init__(self, *, max_concurrency: int | None = None, where: str = "") -> None:
        settings = config.get()
        self.where = where  # the store, in words: what a timeout names beside the key
        self._pinned = max_concurrency
        self._seen = config.process_settings()
        self.requests = RequestBudget(
            max_concurrency or settings.max_concurrency,
            recovery_successes=settings.throttle_recovery_successes,
        )
        self.bytes = ByteBudget(settings.max_inflight_bytes)
        self.locks = KeyLocks()
        self.statistics = RequestStats()
        # What its server was found to do: with write conditions, with ranges.
        self.conditions = ConditionVerdict()
        self.whole_reads = WholeReads()

    def _after_fork(self) -> None:
        self.requests._after_fork()
        self.bytes._after_fork()
        self.locks._after_fork()
        self.statistics._after_fork()
        self.whole_reads._after_fork()

    def key_in(self, key: str) -> str:
        """`key` and the store it is in, as an error names them."""
        return f"{key!r} in {self.where}" if self.where else repr(key)

    def follow(self) -> StoreRuntime:
        """Take up process-wide settings that changed since the last look; return self."""
        now = config.process_settings()
        if now is self._seen:  # the common case: one identity check per use
            return self
        before, self._seen = self._seen, now
        if now.max_concurrency != before.max_concurrency and self._pinned is None:
            self.requests.set_maximum(now.max_concurrency)
        if now.max_inflight_bytes != before.max_inflight_bytes:
            self.bytes.set_capacity(now.max_inflight_bytes)
        return self


# Equal stores share a runtime. Keys are weak: a runtime lives as long as the store that
# made it (stores holding it keep it alive through their own reference).
_runtimes: weakref.WeakKeyDictionary[Any, StoreRuntime] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def runtime_in_use(store: Any) -> StoreRuntime | None:
    """The runtime of a store equal to `store` in use now, if any (none is made)."""
    with _lock:
        return _runtimes.get(store)


def runtime_for(store: Any, max_concurrency: int | None = None) -> StoreRuntime:
    """The runtime shared by `store` and every store equal to it."""
    with _lock:
        runtime = _runtimes.get(store)
    if runtime is not None:
        return runtime
    made = StoreRuntime(max_concurrency=max_concurrency, where=repr(store))  # not under the lock
    with _lock:
        return _runtimes.setdefault(store, made)


def _reset_after_fork() -> None:
    # What parent threads held or waited for is not the child's, and any lock may have
    # been held at fork time: each runtime's parts start afresh (limits and counts stay).
    global _lock
    _lock = threading.Lock()
    for runtime in list(_runtimes.values()):
        runtime._after_fork()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_reset_after_fork)
