"""Servers that ignore `Range`: found out once per store, then each value read whole once.

A server (or a proxy before it) that ignores `Range` answers a range GET with the whole
value (200). obstore refuses that answer ("non-partial response") and `ObjectStore` reads
the value whole and slices the range out of it. Done once per range, reading 33 ranges
of a 64 MiB shard moved 2.1 GB. So:

- a store's runtime remembers that its server ignores ranges (`ignored`, set by the
  first range answered with more than it asked for; a 200 for an empty value says
  nothing), and from then on the store reads all the ranges of one key in a batch as
  ONE whole read, sliced (`ObjectStore.capabilities` say `batched_reads`);
- whole reads of one key that overlap in time share one GET (`read`): the ranges of the
  batch that found out were all sent before the first answer came, and each falls
  back at once. A sync call made on the thread of a running event loop never joins a
  GET of a task of that loop (`locks.blocked_loops`): the loop takes that answer only
  once the call has returned, so the call sends its own.

What moved is counted: the request policy counts the bytes each read returns (a slice),
so a read served from a whole value adds the difference (`moved`) to `bytes_read`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any

from aiozarr.byte_range import ByteRange
from aiozarr.storage.policy.locks import blocked_loops
from aiozarr.storage.policy.statistics import RequestStats

__all__ = ["WholeReads"]


class WholeReads:
    """One store's knowledge that its server ignores ranges, and its whole reads in
    flight (shared by every thread and event loop, as the runtime is)."""

    def __init__(self) -> None:
        #: The server answered a range with the whole value: read whole from now on.
        self.ignored = False
        self._lock = threading.Lock()
        # The whole reads in flight, each with the event loop whose task sends it.
        self._in_flight: dict[Hashable, tuple[concurrent.futures.Future[Any], object]] = {}

    def _after_fork(self) -> None:
        # The parent's reads in flight are not the child's; what the server does stays.
        self._lock = threading.Lock()
        self._in_flight = {}

    async def read(self, key: Hashable, fetch: Callable[[], Awaitable[Any]]) -> tuple[Any, bool]:
        """`(await fetch(), True)`, or, while another caller's `fetch` of `key` is in
        flight, `(its answer, False)`: the bytes did not move for this caller. Should
        that read fail or be cancelled, this caller reads for itself. (`key` names what
        is read: a value's key, with whatever else tells its answer apart.)"""
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                sending = self._in_flight.get(key)
                if sending is None:
                    shared: concurrent.futures.Future[Any] = concurrent.futures.Future()
                    self._in_flight[key] = (shared, loop)
                    break
            shared, sender = sending
            if sender in blocked_loops():  # its answer waits for this very call to end
                return await fetch(), True
            # Shielded: a caller cancelled while waiting leaves the read to the others.
            answer = await asyncio.shield(asyncio.wrap_future(shared))
            if answer is not _FAILED:
                return answer, False
            # That read's failure was its caller's to report: read again.
        try:
            answer = await fetch()
        except BaseException:
            self._done(key, shared, _FAILED)
            raise
        self._done(key, shared, answer)
        return answer, True

    async def slices(
        self,
        key: Hashable,
        byte_ranges: Sequence[ByteRange],
        fetch: Callable[[], Awaitable[Any]],
        statistics: RequestStats,
    ) -> tuple[list[memoryview], Any] | None:
        """`byte_ranges` of the value at `key` cut from one whole read (`fetch`: `(bytes,
        version)`, None if missing; shared with overlapping reads of `key`) with its
        version; None if missing. A value longer than the range asked for shows that the
        server ignores ranges (`ignored`). `bytes_read` gets the bytes that moved beyond
        the slices (which the request policy counts as the read's answer)."""
        answer, moved = await self.read(key, fetch)
        if answer is None:
            return None
        data, version = answer
        whole = memoryview(data).cast("B")
        parts = [whole[slice(*r.resolve(whole.nbytes))] for r in byte_ranges]
        returned = sum(part.nbytes for part in parts)
        if whole.nbytes > returned:
            self.ignored = True
        statistics.count("bytes_read", (whole.nbytes if moved else 0) - returned)
        return parts, version

    def _done(self, key: Hashable, shared: concurrent.futures.Future[Any], answer: Any) -> None:
        with self._lock:  # a read starting from now on sends its own GET
            self._in_flight.pop(key, None)
        shared.set_result(answer)


# What callers sharing a read that failed (or was cancelled) are told.
_FAILED = object()
