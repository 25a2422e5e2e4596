"""The `Store` interface: the v3 abstract store operations, all async.

A backend implements one read primitive, `read` (and, where one call serves many ranges
of a value, `read_ranges`), the writes it can do (`set`, `delete`, ...) and listing,
and declares its `Capabilities` (`storage/policy/backend.py`). Everything else is this class's
and the modules it uses, once: `storage/policy/batching.py` turns a batch of requests into
backend requests (coalescing, parts, slicing back), `storage/policy/fanin.py` streams the
answers, `storage/policy/retry.py` is the request policy every request runs under (budget,
timeout, retries, hedging), `storage/policy/runtime.py` holds what a store's callers share
(budgets, write locks, statistics), and `storage/protocol/wrapper.py` is the base of stores that
wrap stores. docs/decisions/store-protocol.md is the recipe for a new backend.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterable, Sequence
from typing import Any, ClassVar, TypeVar

import anyio
import anyio.abc

# anyio imports its asyncio backend on first use, ~14 ms that would land on a process's
# first request (a cold open); take it with `import aiozarr` instead.
with contextlib.suppress(ImportError):
    import anyio._backends._asyncio

from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.errors import ReadOnlyError, UnsupportedError, unwrap_group
from aiozarr.storage.policy import batching, retry
from aiozarr.storage.policy.backend import (
    Answer,
    Buffer,
    Capabilities,
    RangeRequest,
    RangeSender,
    TornReadError,
    Version,
    Versioned,
    check_size,
    lasting,
    sized_version,
    stored_size,
)
from aiozarr.storage.policy.budget import RequestBudget
from aiozarr.storage.policy.keys import check_key
from aiozarr.storage.policy.runtime import StoreRuntime, runtime_for

T = TypeVar("T")

__all__ = [
    "UNCHANGED",
    "Answer",
    "Buffer",
    "ByteRange",
    "Capabilities",
    "RangeRequest",
    "Store",
    "TornReadError",
    "Unchanged",
    "Version",
    "Versioned",
    "check_key",
    "check_size",
    "lasting",
    "sized_version",
    "stored_size",
]


class Unchanged:
    """The answer to a conditional read whose value is still the version named."""

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = Unchanged()


class Store(ABC):
    """Abstract key/value store of the Zarr v3 core spec.

    Keys are `/`-separated strings without a leading `/`. A missing key reads as `None`.
    A backend implements `read` (and `read_ranges` where it declares `batched_reads`);
    writable ones `set`, `delete` (`set_if` / `delete_if` where they can write on a
    condition); listable ones `list_prefix` and `list_dir`. It declares what it can do
    in `CAPABILITIES`. Callers read through `stream_versioned_values` and its sugar
    (`get`, `get_versioned`, `get_partial_values`, ...), which run the backend's reads
    under the store's request policy.
    """

    #: What this kind of store can do and how it is best read (see `Capabilities`).
    CAPABILITIES: ClassVar[Capabilities] = Capabilities()

    def __init__(self, *, read_only: bool = False, max_concurrency: int | None = None) -> None:
        self._read_only = read_only
        self._max_concurrency = max_concurrency
        self._runtime: StoreRuntime | None = None  # this process's: not pickled

    # -- capabilities ------------------------------------------------------------------

    @property
    def capabilities(self) -> Capabilities:
        """What this store can do and how it is best read: its class's `CAPABILITIES`,
        unless the backend knows more of one store (an HTTP server cannot list)."""
        return self.CAPABILITIES

    @property
    def read_only(self) -> bool:
        """Whether this store was opened read-only."""
        return self._read_only

    @property
    def readable(self) -> bool:
        return True

    @property
    def writable(self) -> bool:
        return self.capabilities.writes and not self.read_only

    @property
    def listable(self) -> bool:
        return self.capabilities.listing

    @property
    def supports_partial_reads(self) -> bool:
        return self.capabilities.partial_reads

    @property
    def supports_conditional_writes(self) -> bool:
        """Whether `set_if` works (`Capabilities.conditional_writes`)."""
        return self.capabilities.conditional_writes

    @property
    def supports_conditional_deletes(self) -> bool:
        """Whether `delete_if` works (`Capabilities.conditional_deletes`)."""
        return self.capabilities.conditional_deletes

    @property
    def reads_inline(self) -> bool:
        """Whether `get_inline` serves reads (`Capabilities.inline_reads`)."""
        return self.capabilities.inline_reads

    def get_inline(self, key: str, byte_range: ByteRange | None = None) -> Versioned | None:
        """`get_versioned`, answered on the calling thread (only where `reads_inline`)."""
        raise NotImplementedError(f"{type(self).__name__} cannot read inline")

    def with_read_only(self, read_only: bool = True) -> Store:
        """A store over the same data with another read-only flag."""
        raise NotImplementedError(f"{type(self).__name__} cannot change its read-only flag")

    def key_space(self) -> tuple[Hashable, str]:
        """The data this store's keys name, and the prefix it puts before them there:
        stores over the same data rooted apart (a group's store and one opened at an
        array inside it) give one space, a key's full name in it being prefix + key,
        whatever their read-only flag. Caches key what they hold by it."""
        if not self.read_only:
            return self, ""
        try:
            return self.with_read_only(False), ""
        except NotImplementedError:
            return self, ""

    # -- what its callers share --------------------------------------------------------

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
    def budget(self) -> RequestBudget:
        """The budget of requests in flight, shared by every caller of this store:
        limit, in flight, peak.

        `async with store.budget:` holds one slot; it nests within a task, so a request
        made while holding it does not wait for a second slot.
        """
        return self.runtime.requests

    def stats(self) -> dict[str, float | None]:
        """Counters since creation (or `reset_stats`), every key always present: `requests`
        sent and finished by kind (`reads`, `writes`, `deletes`, `stats`, `lists`),
        `bytes_read` / `bytes_written` (downloaded from / uploaded to the store),
        `retries`, `errors`, `timeouts`, `throttled`, `hedges_issued` / `hedges_won`,
        `gave_up`; the chunk cache's `cache_hits` (chunks served), `cache_misses`
        (chunks read and decoded), `cache_revalidations` (objects checked again) and
        `revalidates` (their conditional requests); the request `limit`, `maximum`,
        `lowest_limit`, `inflight`, `peak_inflight` and `waiting`; and `latency_p50_ms` /
        `_p95_ms` / `_p99_ms` of recent reads (None before the first)."""
        runtime = self.runtime
        return {**runtime.requests.stats(), **runtime.statistics.snapshot()}

    def reset_stats(self) -> None:
        """Zero the counters, the in-flight peak, the lowest limit and the latency window."""
        runtime = self.runtime
        runtime.requests.reset_peaks()
        runtime.statistics.reset()

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

        For a backend's own writes, deletes, HEADs and listings (reads get it from
        `storage/policy/batching.py`). See `storage.retry.run_request`.
        """
        request = retry.Request(action, key, operation, nbytes, hedge)
        return await retry.run_request(self.runtime, request, config.get())

    def _check_writable(self, key: str) -> None:
        check_key(key, prefix=True)
        if not self.writable:
            raise ReadOnlyError(f"cannot write {key!r}: {self!r} is read-only")

    # -- the read primitives a backend implements --------------------------------------

    @abstractmethod
    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        """One request, no retries: the value at `key` (or the bytes of it in
        `byte_range`, clipped to the value) with the version they came from; None if
        missing. A whole value (`byte_range` None) over `max_bytes` raises
        `ValueTooLargeError` (`check_size`): before its bytes are read where the backend
        learns the size first (a file's, a response's headers). Callers use `get` and
        `stream_versioned_values`, which run this under the request policy."""

    async def read_ranges(
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None
    ) -> tuple[list[Buffer], Version | None] | None:
        """The answers for ranges of one key (already coalesced) and the version they all
        come from, as ONE request; None if the key is missing; `TornReadError` if the
        value changed between them. Read only where `Capabilities.batched_reads`.

        Backends with one call for many ranges (one file open, one lookup) override it;
        this default reads them one after another with `read`.
        """
        out: list[Buffer] = []
        version: Version | None = None
        for i, byte_range in enumerate(byte_ranges):
            answer = await self.read(key, byte_range, max_bytes)
            if answer is None:
                return None
            if i and answer[1] != version:
                raise TornReadError(f"{key!r} changed while its ranges were read")
            out.append(answer[0])
            version = answer[1]
        return out, version

    def range_sender(self) -> RangeSender | None:
        """What sends this store's single ranges without a task each, if anything does
        (`RangeSender`; None: each is a `read` of its own)."""
        return None

    async def read_if_changed(
        self, key: str, byte_range: ByteRange | None, version: Version, max_bytes: int | None
    ) -> Versioned | Unchanged | None:
        """One request, no retries: `read`, or `UNCHANGED` where the value is still
        `version`. Backends that can ask the server to send nothing in that case (an
        HTTP `If-None-Match`, answered 304) override it; this one reads and compares."""
        answer = await self.read(key, byte_range, max_bytes)
        if answer is not None and answer[1] is not None and answer[1] == version:
            return UNCHANGED
        return answer

    # -- reads -------------------------------------------------------------------------

    async def get_if_changed(
        self,
        key: str,
        byte_range: ByteRange | None,
        version: Version,
        *,
        max_bytes: int | None = None,
    ) -> Versioned | Unchanged | None:
        """`get_versioned`, or `UNCHANGED` (nothing read, where the backend can) when the
        value is still `version`: revalidating a cached value. Under the request policy."""
        check_key(key)
        return await self._request(
            "revalidate", key, lambda: self.read_if_changed(key, byte_range, version, max_bytes)
        )

    @contextlib.asynccontextmanager
    async def stream_versioned_values(
        self, requests: Sequence[RangeRequest]
    ) -> AsyncIterator[anyio.abc.ObjectReceiveStream[Answer]]:
        """`(request index, answer, version)` for each request as it lands (answer None
        where missing). Ranges of one key are coalesced and split as configured; keys run
        concurrently under the store's request budget. The answers of one coalesced run
        come from one version of its value; two runs of one key replaced between them
        come from two, as their versions say (`get_partial_values` reads such a key
        again).

            async with store.stream_versioned_values(requests) as answers:
                async for index, data, version in answers:
                    ...

        Leaving the block early cancels the requests still in flight. The one batch
        read: the calls below are sugar over it, and only stores that read through
        other stores (`Capabilities.delegates_reads`) override it.
        """
        async with batching.stream(self, requests) as answers:
            yield answers

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
        """`get`, with the version the bytes came from (None where the store cannot tell).

        A batch of one, without the batch: one request under the policy."""
        check_key(key)
        return await batching.read_one(self, key, byte_range, max_bytes, config.get())

    async def get_partial_values(self, requests: Sequence[RangeRequest]) -> list[Buffer | None]:
        """Answers to many requests at once, in request order (None where missing);
        every answer of one key from one version of its value (a key replaced while its
        ranges were read is read again)."""
        answers = await self.get_versioned_values(requests)
        return [None if answer is None else answer[0] for answer in answers]

    async def get_versioned_values(
        self, requests: Sequence[RangeRequest]
    ) -> list[Versioned | None]:
        """`get_partial_values`, each answer with the version it came from."""
        return await batching.read_all(self.stream_versioned_values, requests, self)

    @contextlib.asynccontextmanager
    async def stream_partial_values(
        self, requests: Sequence[RangeRequest]
    ) -> AsyncIterator[AsyncIterator[tuple[int, Buffer | None]]]:
        """`stream_versioned_values` without the versions: `(request index, answer)`."""
        async with self.stream_versioned_values(requests) as answers:
            yield ((index, data) async for index, data, _ in answers)

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

    async def set_if(
        self, key: str, value: Buffer, expected: Version | None, *, claim: bool = False
    ) -> None:
        """Store `value` at `key` only if the value there is still version `expected`
        (None: only if there is none); else raise `VersionConflictError`.

        A retry after a try whose answer was lost that finds `value` stored takes it as
        its own write; with `claim`, where who wrote it matters (an append's growth
        claims rows), that is `WriteOutcomeUnknownError` instead.
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
            async with self.budget:
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
            async with self.budget:
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


async def read_as_batch(
    store: Store, key: str, byte_range: ByteRange | None, max_bytes: int | None
) -> Versioned | None:
    """`read` for a store that `delegates_reads`: a batch of one of its own
    `stream_versioned_values` (whose requests are the other stores' and run under their
    request policies)."""
    async with store.stream_versioned_values([RangeRequest(key, byte_range, max_bytes)]) as got:
        async for _, data, version in got:
            return None if data is None else (data, version)
    return None


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
