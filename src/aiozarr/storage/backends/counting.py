"""`CountingStore`: wraps a store and records every request it passes on.

Tests assert request counts with it ("one inner chunk of a cold shard costs 2
requests"); it never changes what the inner store does: it batches with the
inner store's capabilities (coalescing, parts) and waits on the inner store's budget.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

from aiozarr.byte_range import ByteRange
from aiozarr.storage.policy.backend import RangeListener, RangeSend, RangeSender
from aiozarr.storage.protocol import (
    Buffer,
    RangeRequest,
    Store,
    Unchanged,
    Version,
    Versioned,
)
from aiozarr.storage.protocol.wrapper import WrapperStore

__all__ = ["CountingStore"]


def _nbytes(data: Buffer | None) -> int:
    return 0 if data is None else memoryview(data).nbytes


class CountingStore(WrapperStore):
    """Delegates to `inner` and counts what reaches it.

    - `counts`: a `Counter` by operation. `"get"` is one per backend read: one per
      `read`, or one per (already coalesced) range handed to the inner `read_ranges`.
      `"conditional_get"`: a revalidation (`read_if_changed`; its bytes, none when
      unchanged where the server can tell, count in `bytes_read`).
      Also `"set"` (conditional ones too), `"delete"`, `"delete_prefix"`, `"exists"`,
      `"getsize"`, `"list"`.
    - `bytes_read` / `bytes_written`: bytes the backend returned / was given.
    - `requests`: `(operation, key, byte_range)` in the order they were made.
    - `batches`: the requests of each batch call (`get_partial_values`,
      `stream_partial_values` and their versioned twins), appended when it starts.
    - `events`: `("batch_start", n)` / `("batch_end", n)` in order, so a test can check
      that batch 2 started only after batch 1 ended.
    - `peak_inflight`: the most reads handed to the inner store and not yet answered
      (a read waiting for the inner store's limiter counts as in flight).
    """

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.counts: Counter[str] = Counter()
        self.bytes_read = 0
        self.bytes_written = 0
        self.requests: list[tuple[str, str, ByteRange | None]] = []
        self.batches: list[list[RangeRequest]] = []
        self.events: list[tuple[str, int]] = []
        self.inflight = 0
        self.peak_inflight = 0

    def reset(self) -> None:
        """Forget everything counted so far."""
        self.counts.clear()
        self.bytes_read = self.bytes_written = 0
        self.requests.clear()
        self.batches.clear()
        self.events.clear()
        self.peak_inflight = self.inflight

    def stats(self) -> dict[str, Any]:
        """The counters as a plain dict (for printing or comparing)."""
        return {
            "counts": dict(self.counts),
            "requests": len(self.requests),
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "batches": len(self.batches),
            "peak_inflight": self.peak_inflight,
        }

    def _record(self, operation: str, key: str, byte_range: ByteRange | None = None) -> None:
        self.counts[operation] += 1
        self.requests.append((operation, key, byte_range))

    def with_read_only(self, read_only: bool = True) -> CountingStore:
        """A new counting store (fresh counters) over `inner.with_read_only(read_only)`."""
        return CountingStore(self.inner.with_read_only(read_only))

    # -- reads -------------------------------------------------------------------------

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        self._record("get", key, byte_range)
        self._started(1)
        try:
            answer = await self.inner.read(key, byte_range, max_bytes)
        finally:
            self.inflight -= 1
        self.bytes_read += 0 if answer is None else _nbytes(answer[0])
        return answer

    async def read_ranges(
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None
    ) -> tuple[list[Buffer], Version | None] | None:
        for byte_range in byte_ranges:
            self._record("get", key, byte_range)
        self._started(len(byte_ranges))
        try:
            answer = await self.inner.read_ranges(key, byte_ranges, max_bytes)
        finally:
            self.inflight -= len(byte_ranges)
        self.bytes_read += sum(_nbytes(a) for a in answer[0]) if answer else 0
        return answer

    async def read_if_changed(
        self, key: str, byte_range: ByteRange | None, version: Version, max_bytes: int | None
    ) -> Versioned | Unchanged | None:
        self._record("conditional_get", key, byte_range)
        self._started(1)
        try:
            answer = await self.inner.read_if_changed(key, byte_range, version, max_bytes)
        finally:
            self.inflight -= 1
        self.bytes_read += _nbytes(answer[0]) if isinstance(answer, tuple) else 0
        return answer

    def range_sender(self) -> RangeSender | None:
        """The inner store's sender, its ranges counted as `read`'s are."""
        inner = self.inner.range_sender()
        return None if inner is None else _CountedSender(self, inner)

    def range_began(self, key: str) -> object:
        """A range of `key` was sent by the inner store's sender; what it returns is
        handed to `range_ended` once the range is answered or cancelled. For subclasses
        that watch requests as `read` does (nothing here)."""
        return None

    def range_ended(self, token: object, hand_on: Callable[[], None]) -> None:
        """The range `range_began` returned `token` for is over: `hand_on()` gives its
        answer to the reader (at once here; a subclass may hold it back a while)."""
        hand_on()

    def _started(self, n: int) -> None:
        self.inflight += n
        self.peak_inflight = max(self.peak_inflight, self.inflight)

    @contextlib.asynccontextmanager
    async def stream_versioned_values(self, requests: Sequence[RangeRequest]) -> AsyncIterator[Any]:
        """The base batching (inner settings), recorded as one batch with start/end events."""
        n = len(self.batches)
        self.batches.append(list(requests))
        self.events.append(("batch_start", n))
        try:
            async with super().stream_versioned_values(requests) as answers:
                yield answers
        finally:
            self.events.append(("batch_end", n))

    async def exists(self, key: str) -> bool:
        self._record("exists", key)
        return await self.inner.exists(key)

    async def getsize(self, key: str) -> int | None:
        self._record("getsize", key)
        return await self.inner.getsize(key)

    # -- writes ------------------------------------------------------------------------

    async def set(self, key: str, value: Buffer) -> None:
        self._record("set", key)
        await self.inner.set(key, value)
        self.bytes_written += _nbytes(value)

    async def set_if(
        self, key: str, value: Buffer, expected: Version | None, *, claim: bool = False
    ) -> None:
        self._record("set", key)
        await self.inner.set_if(key, value, expected, claim=claim)
        self.bytes_written += _nbytes(value)

    async def delete_if(self, key: str, expected: Version) -> None:
        self._record("delete", key)
        await self.inner.delete_if(key, expected)

    async def set_many(self, items: Iterable[tuple[str, Buffer]]) -> None:
        items = list(items)
        for key, _ in items:
            self._record("set", key)
        await self.inner.set_many(items)
        self.bytes_written += sum(_nbytes(value) for _, value in items)

    async def delete(self, key: str) -> None:
        self._record("delete", key)
        await self.inner.delete(key)

    async def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        for key in keys:
            self._record("delete", key)
        await self.inner.delete_many(keys)

    async def delete_prefix(self, prefix: str) -> None:
        self._record("delete_prefix", prefix)
        await self.inner.delete_prefix(prefix)

    # -- listing -----------------------------------------------------------------------

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        self._record("list", prefix)
        async for key in self.inner.list_prefix(prefix):
            yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        self._record("list", prefix)
        async for name in self.inner.list_dir(prefix):
            yield name

    async def list_dir_entries(self, prefix: str) -> AsyncIterator[tuple[str, bool | None]]:
        self._record("list", prefix)
        async for entry in self.inner.list_dir_entries(prefix):
            yield entry

    # -- identity ----------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"CountingStore({self.inner!r})"

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)


class _CountedSender:
    """The inner store's `RangeSender`, each range sent recorded as a "get"."""

    def __init__(self, counting: CountingStore, inner: RangeSender) -> None:
        self._counting, self._inner = counting, inner

    def sends(self, byte_range: ByteRange) -> bool:
        return self._inner.sends(byte_range)

    def send_range(self, key: str, byte_range: ByteRange, listener: RangeListener) -> RangeSend:
        counting = self._counting
        counting._record("get", key, byte_range)
        counting._started(1)
        counted = _CountedRange(counting, listener, counting.range_began(key))
        try:
            counted.send = self._inner.send_range(key, byte_range, counted)
        except BaseException:
            counted.cancel()
            raise
        return counted

    async def range_failed(
        self, key: str, byte_range: ByteRange, max_bytes: int | None, error: BaseException
    ) -> Versioned | None:
        return await self._inner.range_failed(key, byte_range, max_bytes, error)


def _nothing() -> None:
    pass


class _CountedRange:
    """One range in flight through `_CountedSender`: in flight until answered or cancelled."""

    __slots__ = ("_cancelled", "_counting", "_listener", "_open", "_token", "send")

    def __init__(self, counting: CountingStore, listener: RangeListener, token: object) -> None:
        self._counting, self._listener, self._token = counting, listener, token
        self._open, self._cancelled = True, False
        self.send: RangeSend | None = None

    def _close(self, hand_on: Callable[[], None]) -> None:
        if self._open:
            self._open = False
            self._counting.inflight -= 1
            self._counting.range_ended(self._token, hand_on)

    def began(self) -> None:
        self._listener.began()

    def done(self, answer: Versioned | BaseException) -> None:
        if isinstance(answer, tuple):
            self._counting.bytes_read += _nbytes(answer[0])

        def hand_on() -> None:
            if not self._cancelled:  # a range cancelled while its answer was held
                self._listener.done(answer)

        self._close(hand_on)

    def cancel(self) -> None:
        self._cancelled = True
        self._close(_nothing)
        if self.send is not None:
            self.send.cancel()
