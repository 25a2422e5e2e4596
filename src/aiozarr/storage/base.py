"""The `Store` interface: the v3 abstract store operations, all async.

A backend implements a few primitives (`_get` or `_get_versioned`, `set`, `delete`,
`list_prefix`, ...). What every store does alike lives elsewhere, once:
`storage/batching.py` turns a batch of requests into backend requests (coalescing,
parts, slicing back), `storage/retry.py` is the request policy every request runs
under (budget, timeout, retries, hedging), `storage/runtime.py` holds what a store's
callers share (budgets, write locks, statistics), and `storage/wrapper.py` is the base
of stores that wrap stores.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

import anyio

# anyio imports its asyncio backend on first use, ~14 ms that would land on a process's
# first request (a cold open); take it with `import aiozarr` instead.
with contextlib.suppress(ImportError):
    import anyio._backends._asyncio

from aiozarr.byte_range import ByteRange
from aiozarr.errors import ReadOnlyError, UnsupportedError, unwrap_group
from aiozarr.storage import batching, retry
from aiozarr.storage.batching import TornReadError, check_size
from aiozarr.storage.budget import RequestBudget
from aiozarr.storage.keys import check_key
from aiozarr.storage.runtime import StoreRuntime, runtime_for

#: Anything with the buffer protocol: bytes, memoryview, obstore.Bytes, ...
Buffer: TypeAlias = Any
#: Which stored version of a value some bytes came from: an object store's ETag, a
#: file's inode, mtime and size, a memory value's write number. Opaque, compared with
#: `==`; None where a store cannot tell versions apart.
Version: TypeAlias = Hashable
#: A value read with the version it came from.
Versioned: TypeAlias = tuple[Buffer, Version | None]
T = TypeVar("T")

__all__ = [
    "Buffer",
    "ByteRange",
    "RangeRequest",
    "SizedReadStore",
    "Store",
    "TornReadError",
    "Version",
    "Versioned",
    "check_key",
    "check_size",
]


@dataclass(frozen=True, slots=True)
class RangeRequest:
    """One value to read: a key and, optionally, a byte range of it (None: all of it).

    `max_bytes`: for a whole-value read, the largest value the caller accepts (a chunk's
    bound from its codecs, a metadata document's from `max_metadata_bytes`); a larger
    one raises `ValueTooLargeError` before its bytes are read. None: no bound but the
    memory of the process (object stores) or none (values already in memory, files).
    """

    key: str
    byte_range: ByteRange | None = None
    max_bytes: int | None = None


class Store(ABC):
    """Abstract key/value store of the Zarr v3 core spec.

    Keys are `/`-separated strings without a leading `/`. A missing key reads as `None`.
    Subclasses must implement `_get`; writable ones `set`, `delete`; listable ones
    `list_prefix` and `list_dir`. Stores that can tell versions of a value apart
    implement `_get_versioned` (and `_get` through it), and `set_if` / `delete_if`
    where they can write on a condition.
    """

    #: Ranges of one key closer than this are fetched as one request; None: use config.
    coalesce_gap_bytes: int | None = None
    #: Requests larger than this are split; None: use config.
    max_request_bytes: int | None = None
    #: Send a second copy of a read that is far slower than its peers (config `hedge_*`).
    #: Worth it for remote stores, whose tail latency is the network's; not for local ones.
    hedge_reads: bool = False
    #: On a bounded range answered with fewer bytes than asked, ask `getsize` whether the
    #: value really ends there (clipped: fine) or the body was cut short (retried).
    verify_short_reads: bool = False

    def __init__(self, *, read_only: bool = False, max_concurrency: int | None = None) -> None:
        self._read_only = read_only
        self._max_concurrency = max_concurrency
        self._runtime: StoreRuntime | None = None  # this process's: not pickled

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

    @property
    def supports_conditional_writes(self) -> bool:
        """Whether `set_if` works: a write that happens only if the value is still the
        version it was read as (what makes a read-modify-write safe between processes)."""
        return False

    @property
    def supports_conditional_deletes(self) -> bool:
        """Whether `delete_if` works."""
        return False

    @property
    def conditions_from_server(self) -> bool:
        """Whether `set_if`'s condition and the versions reads carry come from a server
        (an object store's ETags and `If-Match`), which may drop them: the write path
        then trusts a read-modify-write to them only once a probe found them honoured
        and its read carried a version (`storage/conditions.py`)."""
        return False

    #: Whether `_get_ranges` is the backend's own: one call (one file open, one lookup)
    #: serves many ranges of a value, run as ONE request under the policy. Otherwise
    #: each coalesced range is a request of its own, with its own retries and hedging.
    reads_ranges_at_once: bool = False

    @property
    def reads_inline(self) -> bool:
        """Whether `get_inline` serves reads: the values are in this process, so a read
        never waits and needs no task, thread hop or request policy."""
        return False

    def get_inline(self, key: str, byte_range: ByteRange | None = None) -> Versioned | None:
        """`get_versioned`, answered on the calling thread (only where `reads_inline`)."""
        raise NotImplementedError(f"{type(self).__name__} cannot read inline")

    def with_read_only(self, read_only: bool = True) -> Store:
        """A store over the same data with another read-only flag."""
        raise NotImplementedError(f"{type(self).__name__} cannot change its read-only flag")

    @property
    def runtime(self) -> StoreRuntime:
        """What every caller of this store (and of stores equal to it) shares, whatever
        its thread or event loop: the request budget, the byte budget of reads, the write
        locks and the request statistics; the budgets' maxima follow the process-wide
        settings as they change."""
        runtime = self._runtime
        if runtime is None:
            runtime = self._runtime = runtime_for(self, self._max_concurrency)
        return runtime.follow()

    @property
    def limiter(self) -> RequestBudget:
        """The budget of requests in flight, shared by every caller of this store.

        `async with store.limiter:` holds one slot; it nests within a task, so a request
        made while holding it does not wait for a second slot.
        """
        return self.runtime.requests

    def stats(self) -> dict[str, float | None]:
        """Counters since creation (or `reset_stats`), every key always present: `requests`
        sent and finished by kind (`reads`, `writes`, `deletes`, `stats`, `lists`),
        `bytes_read` / `bytes_written` (downloaded from / uploaded to the store),
        `retries`, `errors`, `timeouts`, `throttled`, `hedges_issued` / `hedges_won`,
        `gave_up`; the request `limit`, `maximum`, `lowest_limit`, `inflight`,
        `peak_inflight` and `waiting`; and `latency_p50_ms` / `_p95_ms` / `_p99_ms` of
        recent reads (None before the first)."""
        runtime = self.runtime
        return {**runtime.requests.stats(), **runtime.statistics.snapshot()}

    def reset_stats(self) -> None:
        """Zero the counters, the in-flight peak, the lowest limit and the latency window."""
        runtime = self.runtime
        runtime.requests.reset_peaks()
        runtime.statistics.reset()

    @property
    def budget(self) -> RequestBudget:
        """The same object as `limiter`, by its name: limit, in flight, peak."""
        return self.limiter

    async def _request(
        self,
        action: str,
        key: str,
        operation: Callable[[], Awaitable[T]],
        *,
        nbytes: int | None = None,
        hedge: bool = False,
    ) -> T:
        """Run one idempotent backend request under this store's request policy.

        Backends call their own writes, deletes and HEADs through this too; reads get
        it from the base class. See `storage.retry.run_request`.
        """
        request = retry.Request(action, key, operation, nbytes, hedge)
        return await retry.run_request(self.runtime, request)

    def _check_writable(self, key: str) -> None:
        check_key(key, prefix=True)
        if not self.writable:
            raise ReadOnlyError(f"cannot write {key!r}: {self!r} is read-only")

    # -- the primitives a backend implements -------------------------------------------

    @abstractmethod
    async def _get(self, key: str, byte_range: ByteRange | None) -> Buffer | None:
        """One request: the value at `key` (or a range of it); None if missing."""

    async def _get_versioned(self, key: str, byte_range: ByteRange | None) -> Versioned | None:
        """`_get` with the version the bytes came from (one request; None if missing).

        This default cannot tell versions apart (version None); stores that can
        override it, taking the version from the same answer as the bytes.
        """
        data = await self._get(key, byte_range)
        return None if data is None else (data, None)

    async def _get_bounded(
        self, key: str, byte_range: ByteRange | None, max_bytes: int
    ) -> Versioned | None:
        """`_get_versioned`; a whole-value read (`byte_range` None) of a value longer
        than `max_bytes` raises `ValueTooLargeError` instead.

        This default can only tell once the bytes are in (fine for values already in
        memory); backends that learn the size first (a file's size, a response's
        headers) override it to refuse before reading the body.
        """
        answer = await self._get_versioned(key, byte_range)
        if answer is not None and byte_range is None:
            check_size(key, memoryview(answer[0]).nbytes, max_bytes, self)
        return answer

    async def _get_ranges(
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None = None
    ) -> tuple[list[Buffer], Version | None] | None:
        """The answers for ranges of one key, already coalesced, and the version they
        come from; None if the key is missing. `max_bytes`: the largest value accepted
        at `key` (see `RangeRequest`); backends check it before reading.

        Backends with a cheaper way to read many ranges of one value at once (one file
        open) override it and set `reads_ranges_at_once`. This default (one raw
        `_get_versioned` per range, concurrently, no budget) is for wrappers that call
        it directly.
        """
        if max_bytes is None:
            return await batching.gather_ranges(key, byte_ranges, self._get_versioned)

        async def bounded(key: str, byte_range: ByteRange) -> Versioned | None:
            return await self._get_bounded(key, byte_range, max_bytes)

        return await batching.gather_ranges(key, byte_ranges, bounded)

    # -- reads -------------------------------------------------------------------------

    async def get(
        self, key: str, byte_range: ByteRange | None = None, *, max_bytes: int | None = None
    ) -> Buffer | None:
        """The value at `key`, or the bytes of it in `byte_range`; None if missing.

        `max_bytes`: the largest value accepted at `key`; a larger one raises
        `ValueTooLargeError` before its bytes are read (see `RangeRequest`).
        """
        answer = await self.get_versioned(key, byte_range, max_bytes=max_bytes)
        return None if answer is None else answer[0]

    async def get_versioned(
        self, key: str, byte_range: ByteRange | None = None, *, max_bytes: int | None = None
    ) -> Versioned | None:
        """`get`, with the version the bytes came from (None where the store cannot tell)."""
        check_key(key)
        return await batching.read_one(self, key, byte_range, max_bytes)

    async def get_partial_values(self, requests: Sequence[RangeRequest]) -> list[Buffer | None]:
        """Answers to many requests at once, in request order (None where missing).

        Ranges of one key are coalesced and split as configured; keys run concurrently
        under the store's request budget.
        """
        out: list[Buffer | None] = [None] * len(requests)
        async with self.stream_versioned_values(requests) as answers:
            async for index, data, _ in answers:
                out[index] = data
        return out

    async def get_versioned_values(
        self, requests: Sequence[RangeRequest]
    ) -> list[Versioned | None]:
        """`get_partial_values`, each answer with the version it came from."""
        out: list[Versioned | None] = [None] * len(requests)
        async with self.stream_versioned_values(requests) as answers:
            async for index, data, version in answers:
                out[index] = None if data is None else (data, version)
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
        async with self.stream_versioned_values(requests) as answers:
            yield ((index, data) async for index, data, _ in answers)

    @contextlib.asynccontextmanager
    async def stream_versioned_values(
        self, requests: Sequence[RangeRequest]
    ) -> AsyncIterator[anyio.abc.ObjectReceiveStream[tuple[int, Buffer | None, Version | None]]]:
        """`stream_partial_values` yielding `(request index, answer, version)`: every
        answer of one key in one call comes from one version of its value. The one batch
        method wrappers and special stores override (`storage/batching.py`)."""
        async with batching.stream(self, requests) as answers:
            yield answers

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

    async def set_if(self, key: str, value: Buffer, expected: Version | None) -> None:
        """Store `value` at `key` only if the value there is still version `expected`
        (None: only if there is none); else raise `VersionConflictError`.

        Only where `supports_conditional_writes`.
        """
        raise UnsupportedError(f"cannot write {key!r} conditionally: {self!r} cannot")

    async def delete_if(self, key: str, expected: Version) -> None:
        """Remove `key` only if its value is still version `expected`; else raise
        `VersionConflictError`. Only where `supports_conditional_deletes`."""
        raise UnsupportedError(f"cannot delete {key!r} conditionally: {self!r} cannot")

    async def set_many(self, items: Iterable[tuple[str, Buffer]]) -> None:
        """Store many values concurrently under the request budget."""

        async def one(key: str, value: Buffer) -> None:
            async with self.limiter:
                await self.set(key, value)

        items = list(items)
        if items:  # one clear error, not one per key
            self._check_writable(items[0][0])
        with unwrap_group():
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
        with unwrap_group():
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

    async def list_dir_entries(self, prefix: str) -> AsyncIterator[tuple[str, bool | None]]:
        """`(name, is_directory)` for each name directly under `prefix`, in one listing.

        `is_directory` is True for a name with keys below it (`prefix/name/...`), False
        for a key, None where the store cannot tell (this default: `list_dir`'s names).
        A name that is both a key and a directory comes twice. Lets a group tell its
        child nodes from stray keys without a request per name.
        """
        async for name in self.list_dir(prefix):
            yield name, None

    # -- identity ----------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_runtime"] = None  # budgets and locks belong to this process
        return state


class SizedReadStore(Store):
    """A store whose one read primitive is `_get_bounded`: it learns a value's size before
    its body (a file's size, a response's headers), so an oversized value is refused
    unread; `_get` and `_get_versioned` are that read without a bound."""

    async def _get(self, key: str, byte_range: ByteRange | None) -> Buffer | None:
        answer = await self._get_bounded(key, byte_range, None)
        return None if answer is None else answer[0]

    async def _get_versioned(self, key: str, byte_range: ByteRange | None) -> Versioned | None:
        return await self._get_bounded(key, byte_range, None)

    @abstractmethod
    async def _get_bounded(  # type: ignore[override]
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        """One request, with its version; a whole value over `max_bytes` (None: no
        bound) raises `ValueTooLargeError` before its bytes are read."""


def dir_entries(keys: Iterable[str], prefix: str) -> list[tuple[str, bool | None]]:
    """`(name, is_directory)` directly under directory `prefix` among `keys`, sorted."""
    head = prefix.strip("/")
    head = f"{head}/" if head else ""
    found = set()
    for key in keys:
        if key.startswith(head):
            name, slash, _ = key[len(head) :].partition("/")
            if name:
                found.add((name, bool(slash)))
    return sorted(found)
