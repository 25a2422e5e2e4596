"""The `Store` interface: the v3 abstract store operations, all async.

A backend implements a few primitives (`_get`, `set`, `delete`, `list_prefix`,
...); batching, coalescing and slicing answers back live here, once, for all.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import anyio

from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.errors import ReadOnlyError
from aiozarr.storage import ranges

#: Anything with the buffer protocol: bytes, memoryview, obstore.Bytes, ...
Buffer: TypeAlias = Any

__all__ = ["Buffer", "ByteRange", "RangeRequest", "Store"]


@dataclass(frozen=True, slots=True)
class RangeRequest:
    """One value to read: a key and, optionally, a byte range of it (None: all of it)."""

    key: str
    byte_range: ByteRange | None = None


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    out: list[BaseException] = []
    for exc in group.exceptions:
        out.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return out


@contextlib.contextmanager
def single_failure() -> Iterator[None]:
    """Raise a task group's only failure as itself, not wrapped in an `ExceptionGroup`.

    Callers of a store expect `ReadOnlyError`, `StoreError`, ... (or their own exception
    from inside `stream_partial_values`), not a group of one.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = _leaves(group)
        if len(leaves) != 1:
            raise
        raise leaves[0] from leaves[0].__cause__


class Store(ABC):
    """Abstract key/value store of the Zarr v3 core spec.

    Keys are `/`-separated strings without a leading `/`. A missing key reads as `None`.
    Subclasses must implement `_get`; writable ones `set`, `delete`; listable ones
    `list_prefix` and `list_dir`.
    """

    #: Ranges of one key closer than this are fetched as one request; None: use config.
    coalesce_gap_bytes: int | None = None
    #: Requests larger than this are split; None: use config.
    max_request_bytes: int | None = None

    def __init__(self, *, read_only: bool = False, max_concurrency: int | None = None) -> None:
        self._read_only = read_only
        self._max_concurrency = max_concurrency
        self._limiter: anyio.CapacityLimiter | None = None

    # -- capabilities ------------------------------------------------------------------

    @property
    def readable(self) -> bool:
        return True

    @property
    def writable(self) -> bool:
        return not self._read_only

    @property
    def listable(self) -> bool:
        return True

    @property
    def supports_partial_reads(self) -> bool:
        return True

    @property
    def read_only(self) -> bool:
        return self._read_only

    def with_read_only(self, read_only: bool = True) -> Store:
        """A store over the same data with another read-only flag."""
        raise NotImplementedError(f"{type(self).__name__} cannot change its read-only flag")

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """The budget of requests in flight, shared by every caller of this store."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(
                self._max_concurrency or config.get().max_concurrency
            )
        return self._limiter

    def _check_writable(self, key: str) -> None:
        if not self.writable:
            raise ReadOnlyError(f"cannot write {key!r}: {self!r} is read-only")

    # -- the primitives a backend implements -------------------------------------------

    @abstractmethod
    async def _get(self, key: str, byte_range: ByteRange | None) -> Buffer | None:
        """One request: the value at `key` (or a range of it); None if missing."""

    async def _get_ranges(
        self, key: str, byte_ranges: Sequence[ByteRange]
    ) -> list[Buffer] | None:
        """The answers for ranges of one key, already coalesced; None if the key is missing.

        The default issues one `_get` per range, concurrently. Backends with a native
        multi-range call override it.
        """
        results: list[Buffer | None] = [None] * len(byte_ranges)

        async def one(i: int, byte_range: ByteRange) -> None:
            async with self.limiter:
                results[i] = await self._get(key, byte_range)

        with single_failure():
            async with anyio.create_task_group() as tg:
                for i, byte_range in enumerate(byte_ranges):
                    tg.start_soon(one, i, byte_range)
        if any(r is None for r in results):
            return None
        return results  # type: ignore[return-value]

    # -- reads -------------------------------------------------------------------------

    async def get(self, key: str, byte_range: ByteRange | None = None) -> Buffer | None:
        """The value at `key`, or the bytes of it in `byte_range`; None if missing."""
        async with self.limiter:
            return await self._get(key, byte_range)

    async def get_partial_values(self, requests: Sequence[RangeRequest]) -> list[Buffer | None]:
        """Answers to many requests at once, in request order (None where missing).

        Ranges of one key are coalesced and split as configured; keys run concurrently
        under the store's request budget.
        """
        out: list[Buffer | None] = [None] * len(requests)
        async with self.stream_partial_values(requests) as answers:
            async for index, data in answers:
                out[index] = data
        return out

    @contextlib.asynccontextmanager
    async def stream_partial_values(
        self, requests: Sequence[RangeRequest]
    ) -> AsyncIterator[AsyncIterator[tuple[int, Buffer | None]]]:
        """Like `get_partial_values`, but yields `(request index, answer)` as each key lands.

            async with store.stream_partial_values(requests) as answers:
                async for index, data in answers:
                    ...

        Leaving the block early cancels the requests still in flight.
        """
        by_key: dict[str, list[int]] = {}
        for i, request in enumerate(requests):
            by_key.setdefault(request.key, []).append(i)
        send, receive = anyio.create_memory_object_stream[tuple[int, Buffer | None]](
            max_buffer_size=max(len(requests), 1)
        )
        gap, most = self._coalescing()

        async def fetch_key(key: str, indices: list[int]) -> None:
            plan = ranges.plan(
                [requests[i].byte_range for i in indices], gap_bytes=gap, max_request_bytes=most
            )
            answers = await self._fetch_planned(key, plan)
            for i, data in zip(indices, answers, strict=True):
                send.send_nowait((i, data))

        async def fetch_all() -> None:
            async with send, anyio.create_task_group() as tg:
                for key, indices in by_key.items():
                    tg.start_soon(fetch_key, key, indices)

        # The stream closes only after the task group has stopped every fetch, so a fetch
        # finishing as the block is left never sends into a closed stream.
        with single_failure():
            async with receive, anyio.create_task_group() as tg:
                tg.start_soon(fetch_all)
                yield receive
                tg.cancel_scope.cancel()

    def _coalescing(self) -> tuple[int, int]:
        settings = config.get()
        gap = self.coalesce_gap_bytes
        most = self.max_request_bytes
        return (
            settings.coalesce_gap_bytes if gap is None else gap,
            settings.max_request_bytes if most is None else most,
        )

    async def _fetch_planned(
        self, key: str, plan: ranges.RangePlan
    ) -> list[Buffer | None]:
        fetched = await self._get_ranges(key, plan.fetch)
        if fetched is None:
            return [None] * len(plan.wanted)
        return plan.slice_back(fetched)

    async def exists(self, key: str) -> bool:
        """Whether a value is stored at `key`."""
        return await self.get(key, ByteRange.of(0, 0)) is not None

    async def getsize(self, key: str) -> int | None:
        """Size in bytes of the value at `key`, or None if missing."""
        data = await self.get(key)
        return None if data is None else memoryview(data).nbytes

    # -- writes ------------------------------------------------------------------------

    async def set(self, key: str, value: Buffer) -> None:
        """Store `value` at `key`, replacing any value there (atomically where possible)."""
        raise ReadOnlyError(f"cannot write {key!r}: {type(self).__name__} is read-only")

    async def set_many(self, items: Iterable[tuple[str, Buffer]]) -> None:
        """Store many values concurrently under the request budget."""
        async def one(key: str, value: Buffer) -> None:
            async with self.limiter:
                await self.set(key, value)

        items = list(items)
        if items:  # one clear error, not one per key
            self._check_writable(items[0][0])
        with single_failure():
            async with anyio.create_task_group() as tg:
                for key, value in items:
                    tg.start_soon(one, key, value)

    async def delete(self, key: str) -> None:
        """Remove `key`; removing a missing key is not an error."""
        raise ReadOnlyError(f"cannot delete {key!r}: {type(self).__name__} is read-only")

    async def delete_many(self, keys: Iterable[str]) -> None:
        """Remove many keys concurrently."""
        async def one(key: str) -> None:
            async with self.limiter:
                await self.delete(key)

        keys = list(keys)
        if keys:  # one clear error, not one per key
            self._check_writable(keys[0])
        with single_failure():
            async with anyio.create_task_group() as tg:
                for key in keys:
                    tg.start_soon(one, key)

    async def delete_prefix(self, prefix: str) -> None:
        """Remove every key that starts with `prefix`."""
        self._check_writable(prefix)
        await self.delete_many([key async for key in self.list_prefix(prefix)])

    # -- listing -----------------------------------------------------------------------

    def list(self) -> AsyncIterator[str]:
        """Every key in the store."""
        return self.list_prefix("")

    @abstractmethod
    def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        """Every key that starts with `prefix` (a plain string prefix)."""

    @abstractmethod
    def list_dir(self, prefix: str) -> AsyncIterator[str]:
        """The names directly under `prefix` (a directory path, "" for the root).

        Yields child key names and child "directory" names (without trailing `/`).
        """

    # -- identity ----------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)
