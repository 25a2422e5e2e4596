"""How one batch of read requests becomes backend requests, and the answers come back.

    async with batching.stream(store, requests) as answers:
        async for index, data, version in answers: ...

Requests are grouped by key; the ranges of one key are coalesced and cut into parts
as the batch's `RequestShape` says (`storage/policy/shaping.py`; the range algebra is
`storage/policy/ranges.py`, pure); each resulting request runs under the store's request
policy (`storage/policy/retry.py`), concurrently, at most `parts_per_object` of one key at once;
answers are sliced back into the ranges asked for and yielded as each key lands
(`storage/policy/fanin.py`), each with the version it came from. The answers of one run of
coalesced ranges come from one version of its value: parts that came from different
versions (the value was replaced between them) are read again. Runs of one key are
answered as each lands, so two of them may come from two versions; `read_all`, which
waits for every answer, reads such a key again (the engine compares each answer with
its shard index's version instead).

Backends never see a batch: a store is read here through its `ReadBackend` protocol
alone (`storage/policy/backend.py`): `read` (one range) and, where one open serves many ranges
of a value (a file, a dict) and its capabilities say `batched_reads`, `read_ranges`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from functools import partial
from typing import Any

import anyio.abc

from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.errors import StoreError, unwrap_group
from aiozarr.sizes import batched_by_size
from aiozarr.storage.policy import ranges, retry
from aiozarr.storage.policy.backend import (
    Answer,
    Buffer,
    Capabilities,
    RangeRequest,
    RangeSender,
    ReadBackend,
    TornReadError,
    Version,
    Versioned,
    check_size,
)
from aiozarr.storage.policy.budget import Slot
from aiozarr.storage.policy.fanin import Emit, Spawn, fan_in
from aiozarr.storage.policy.keys import check_key
from aiozarr.storage.policy.pump import RangePump
from aiozarr.storage.policy.shaping import RequestShape

__all__ = ["read_all", "read_one", "stream"]

# Times the ranges of one value are read again when its parts came from different
# versions (a writer replaced it between them) before the read fails.
_TORN_RETRIES = 5


def _total_bytes(byte_ranges: Sequence[ByteRange]) -> int | None:
    sizes = [ranges.requested_bytes(r) for r in byte_ranges]
    return None if any(n is None for n in sizes) else sum(sizes)  # type: ignore[misc]


def _loosest(bounds: Iterable[int | None]) -> int | None:
    """The bound that admits every request of a fetch (None: any is unbounded)."""
    most = 0
    for bound in bounds:
        if bound is None:
            return None
        most = max(most, bound)
    return most


def _one_version(key: str, answers: Sequence[Versioned]) -> Version | None:
    """The version every answer of `key` comes from; `TornReadError` if they differ. An
    empty answer without a version (a part past the value's end: the same for every
    version) agrees with any."""
    versions = {v for data, v in answers if v is not None or memoryview(data).nbytes}
    if len(versions) > 1:
        raise TornReadError(f"{key!r} changed while its ranges were read")
    return versions.pop() if versions else None


#: A missing value: a version of its own (it was deleted, or not yet written).
_MISSING = object()


def _torn_keys(requests: Sequence[RangeRequest], answers: Sequence[Versioned | None]) -> set[str]:
    """The keys whose answers come from more than one version of their value (`_one_version`'s
    rule; missing is a version too)."""
    first: dict[str, object] = {}
    torn: set[str] = set()
    for request, answer in zip(requests, answers, strict=True):
        version: object = _MISSING
        if answer is not None:
            data, version = answer
            if version is None and not memoryview(data).nbytes:
                continue  # past the value's end: the same for every version that short
        if first.setdefault(request.key, version) != version:
            torn.add(request.key)
    return torn


async def read_all(
    stream: Callable[[Sequence[RangeRequest]], contextlib.AbstractAsyncContextManager[Any]],
    requests: Sequence[RangeRequest],
    where: object,
) -> list[Versioned | None]:
    """The answers to `requests` (None where missing), in order, read through `stream`
    (a store's `stream_versioned_values`), every answer of one key from one version of
    its value: the requests of a key replaced between two of its runs are read again."""
    out: list[Versioned | None] = [None] * len(requests)
    pending = list(range(len(requests)))
    for _ in range(_TORN_RETRIES):
        async with stream([requests[i] for i in pending]) as answers:
            async for index, data, version in answers:
                out[pending[index]] = None if data is None else (data, version)
        torn = _torn_keys([requests[i] for i in pending], [out[i] for i in pending])
        if not torn:
            return out
        pending = [i for i in pending if requests[i].key in torn]
    raise StoreError(
        f"cannot read {requests[pending[0]].key!r} in {where!r}: it was replaced while its "
        f"ranges were read, {_TORN_RETRIES} times in a row"
    )


async def _gather_ranges(
    key: str,
    byte_ranges: Sequence[ByteRange],
    fetch: Callable[[str, ByteRange], Awaitable[Versioned | None]],
    limiter: asyncio.Semaphore,
) -> tuple[list[Buffer], Version | None] | None:
    """`fetch` the ranges of `key` in order, `limiter` bounding those in flight: the
    answers and the version they all come from; None if the key is missing.
    `TornReadError` if the versions differ.

    No range is sent once an answer came back short: the value ends there, and the
    ranges after it lie past its end (`RangePlan.slice_back` reads them as empty), so a
    length claimed far beyond the value's end costs one window of requests, not one
    request per part of the claim. The answers are those of the ranges sent, in order."""
    if len(byte_ranges) == 1:
        async with limiter:
            answer = await fetch(key, byte_ranges[0])
        return None if answer is None else ([answer[0]], answer[1])
    results: list[Versioned | None] = []
    ended = False  # an answer was short (or missing): send nothing more

    async def one(i: int, byte_range: ByteRange) -> None:
        nonlocal ended
        try:
            results[i] = answer = await fetch(key, byte_range)
            if answer is None or ranges.is_short(byte_range, answer[0]):
                ended = True
        finally:
            limiter.release()

    with unwrap_group():
        async with anyio.create_task_group() as tg:
            for byte_range in byte_ranges:  # each part made as it is sent
                await limiter.acquire()
                if ended:
                    limiter.release()
                    break
                results.append(None)
                tg.start_soon(one, len(results) - 1, byte_range)
    if any(r is None for r in results):
        return None
    answers: list[Versioned] = results  # type: ignore[assignment]
    return [data for data, _ in answers], _one_version(key, answers)


async def read_one(
    store: ReadBackend,
    key: str,
    byte_range: ByteRange | None,
    max_bytes: int | None,
    settings: config.Config,
    capabilities: Capabilities | None = None,
    *,
    failed: Exception | None = None,
    started: float | None = None,
) -> Versioned | None:
    """One read of `store` under its request policy (budget, timeout, retries, hedging),
    a short answer told apart from a clipped one. A store that `delegates_reads` is
    read as it is: the stores it reads apply their own policies. `failed`, `started`:
    a first try made elsewhere, as `retry.run_request` takes them."""
    caps = store.capabilities if capabilities is None else capabilities
    if caps.delegates_reads:
        return await store.read(key, byte_range, max_bytes)
    if failed is None and byte_range is not None:
        sender = _sender_of(store, caps)
        if sender is not None and sender.sends(byte_range):
            request = RangeRequest(key, byte_range, max_bytes)
            return await _read_sent(store, sender, request, settings, caps)

    async def attempt() -> Versioned | None:
        answer = await store.read(key, byte_range, max_bytes)
        if answer is not None and byte_range is not None:
            await _check_length(store, key, byte_range, answer[0])
        return answer

    # Where no length needs checking, the backend's read is the operation itself: one
    # coroutine less for every step of every read.
    operation = (
        attempt if caps.verify_short_reads else partial(store.read, key, byte_range, max_bytes)
    )
    request = retry.Request(
        "read", key, operation, ranges.requested_bytes(byte_range), caps.hedge_reads
    )
    return await retry.run_request(store.runtime, request, settings, failed=failed, started=started)


def _sender_of(store: ReadBackend, caps: Capabilities) -> RangeSender | None:
    """What sends the store's single ranges without a task each, where one request is
    one range and its answer's length needs no check (`storage/policy/pump.py`)."""
    if caps.batched_reads or caps.delegates_reads or caps.verify_short_reads:
        return None
    return store.range_sender()


async def _read_sent(
    store: ReadBackend,
    sender: RangeSender,
    request: RangeRequest,
    settings: config.Config,
    caps: Capabilities,
) -> Versioned | None:
    """`request` read alone, its first try sent by a `RangePump`."""
    answers: list[Answer] = []
    handed: list[tuple[int, Exception, float, Slot]] = []
    pump = RangePump(
        store, sender, [request], settings, 1, answers.append, lambda *a: handed.append(a)
    )
    await pump.run([0])
    if handed:
        _, error, started, slot = handed[0]
        return await _after_failure(store, sender, request, settings, caps, error, started, slot)
    _, data, version = answers[0]
    return None if data is None else (data, version)


async def _after_failure(
    store: ReadBackend,
    sender: RangeSender,
    request: RangeRequest,
    settings: config.Config,
    caps: Capabilities,
    error: Exception,
    started: float,
    slot: Slot,
) -> Versioned | None:
    """The answer to `request`, whose first try (sent by a `RangePump` at `started`, in
    `slot`) failed with `error`: what the backend makes of the failure (a missing key,
    a server that ignores ranges), or the policy's retries after that try."""
    key, byte_range, max_bytes = request.key, request.byte_range, request.max_bytes
    assert byte_range is not None
    nbytes = ranges.requested_bytes(byte_range)
    runtime = store.runtime
    try:
        answer = await sender.range_failed(key, byte_range, max_bytes, error)
    except Exception as failure:
        if not isinstance(failure, retry.RequestTimeoutError):  # counted as a timeout
            retry.try_failed(runtime, slot, failure, "read", key, nbytes)
        answer = await read_one(
            store, key, byte_range, max_bytes, settings, caps, failed=failure, started=started
        )
    else:  # the try's answer after all: a read, as `run_request` counts one
        received = 0 if answer is None else memoryview(answer[0]).nbytes
        seconds = time.monotonic() - started
        retry.read_succeeded(runtime.statistics, nbytes, received, seconds, None, started)
    if answer is not None:
        ranges.refuse_long(byte_range, answer[0])
    return answer


async def _check_length(store: ReadBackend, key: str, byte_range: ByteRange, data: Buffer) -> None:
    """Raise `ShortReadError` if `data` is shorter than asked and the value is not."""
    wanted = ranges.requested_bytes(byte_range)
    got = memoryview(data).nbytes
    if wanted is None or got >= wanted:
        return
    size = await store.getsize(key)
    if size is None:  # deleted meanwhile: the short answer is all there was
        return
    start, stop = byte_range.resolve(size)  # a value ending inside the range clips it
    expected = stop - start
    if got < expected:
        raise retry.ShortReadError(
            f"cannot read {key!r}: {byte_range} answered with {got} bytes, "
            f"expected {expected} (the value has {size})"
        )


@contextlib.asynccontextmanager
async def stream(
    store: ReadBackend, requests: Sequence[RangeRequest]
) -> AsyncIterator[anyio.abc.ObjectReceiveStream[Answer]]:
    """`(request index, answer, version)` for each of `requests` as its key lands.

    Leaving the block early cancels the requests still in flight. The settings in
    force when the batch starts are its settings, to its last request.
    """
    by_key: dict[str, list[int]] = {}
    for i, request in enumerate(requests):
        if request.key not in by_key:
            check_key(request.key)
        by_key.setdefault(request.key, []).append(i)
    batch = _Batch(store, requests, by_key, config.get())
    async with fan_in(batch.produce) as answers:
        yield answers


class _Batch:
    """One batch of reads of one store: its requests, grouped into backend requests,
    each answered into the batch's stream (`emit`) as it lands."""

    def __init__(
        self,
        store: ReadBackend,
        requests: Sequence[RangeRequest],
        by_key: dict[str, list[int]],
        settings: config.Config,
    ) -> None:
        self.store = store
        self.requests = requests
        self.by_key = by_key
        self.settings = settings
        self.caps = store.capabilities
        self.shape = RequestShape.of(self.caps, settings, store.runtime.statistics.link())
        # Parts of one object in flight at once, across every group of its ranges.
        # (An asyncio semaphore: it takes a free slot without a turn of the loop, where
        # anyio's CapacityLimiter yields once per acquire; this is paid per request.)
        self.parts: dict[str, asyncio.Semaphore] = {}
        self.emit: Emit  # the batch's stream, and its tasks, once `produce` runs
        self.spawn: Spawn
        # What the pump sends: the requests, and after them one request for each run of
        # ranges of a key that coalesce into one (`sent_run`), with how to cut it back.
        self.pumped: Sequence[RangeRequest] = requests
        self.run_requests: list[RangeRequest] = []
        self.runs: dict[int, tuple[list[int], ranges.Run]] = {}
        self.sender = _sender_of(store, self.caps)

    async def produce(self, emit: Emit, spawn: Spawn) -> None:
        """Start one task per backend request (per key where `batched_reads`); send the
        single ranges the store's `RangeSender` takes from this task, by callbacks."""
        self.emit, self.spawn = emit, spawn
        requests, by_key = self.requests, self.by_key
        groups = self.shape.groups(requests, by_key)
        if self.caps.batched_reads:  # one request (one file open) serves every range of a key
            part_of: dict[str, int] = {}
            for key, _, part in groups:
                part_of[key] = min(part, part_of.get(key, part))
            for key, indices in by_key.items():
                spawn(self.fetch, key, indices, part_of[key])
            return
        sent: list[int] = []
        for key, members, part in groups:
            if self.sends(members, part):
                sent.append(members[0])
            elif (run := self.sent_run(key, members, part)) is not None:
                sent.append(run)
            else:
                spawn(self.fetch, key, members, part)  # each answered as it lands
        if sent:
            assert self.sender is not None
            if self.run_requests:
                self.pumped = [*requests, *self.run_requests]
            pump = RangePump(
                self.store,
                self.sender,
                self.pumped,
                self.settings,
                self.shape.parts_per_object,
                self.answered,
                self.hand_on,
            )
            await pump.run(sent)

    def sends(self, members: list[int], part: int) -> bool:
        """Whether `members` is one range within a part that the sender takes."""
        if self.sender is None or len(members) != 1:
            return False
        byte_range = self.requests[members[0]].byte_range
        if byte_range is None:
            return False
        wanted = ranges.requested_bytes(byte_range)
        return wanted is not None and wanted <= part and self.sender.sends(byte_range)

    def sent_run(self, key: str, members: list[int], part: int) -> int | None:
        """Where the ranges `members` coalesce into one request the sender takes: that
        request's index among `pumped` (its answer cut back by `answered`)."""
        if self.sender is None:
            return None
        run = ranges.Run.of([self.requests[i].byte_range for i in members], part)
        if run is None or not self.sender.sends(run.fetch):
            return None
        index = len(self.requests) + len(self.run_requests)
        self.runs[index] = (members, run)
        self.run_requests.append(RangeRequest(key, run.fetch))
        return index

    def answered(self, answer: Answer) -> None:
        """A pumped request's answer: a request's own, or a run's, cut back into its
        members' (one version for all: one request)."""
        i, data, version = answer
        found = self.runs.get(i)
        if found is None:
            self.emit(answer)
            return
        members, run = found
        if data is None:
            for member in members:
                self.emit((member, None, None))
            return
        for member, piece in zip(members, run.cut(data), strict=True):
            self.emit((member, piece, version))

    def hand_on(self, i: int, error: Exception, started: float, slot: Slot) -> None:
        """Answer `requests[i]`, whose first try the pump sent, in a task of its own."""
        self.spawn(self.fetch_after_failure, i, error, started, slot)

    async def fetch_after_failure(
        self, i: int, error: Exception, started: float, slot: Slot
    ) -> None:
        assert self.sender is not None
        request = self.pumped[i]
        answer = await _after_failure(
            self.store, self.sender, request, self.settings, self.caps, error, started, slot
        )
        self.answered((i, None, None) if answer is None else (i, *answer))

    async def fetch(self, key: str, indices: list[int], part: int) -> None:
        """Answer `requests[indices]` of `key`, read in requests of at most `part` bytes."""
        requests, store = self.requests, self.store
        if len(indices) == 1:
            request = requests[indices[0]]
            if request.byte_range is None:
                await self.fetch_whole(key, indices[0])
                return
            wanted = ranges.requested_bytes(request.byte_range)
            if not self.caps.batched_reads and wanted is not None and wanted <= part:
                await self.fetch_one_range(key, indices[0])
                return
        asked = [requests[i].byte_range for i in indices]
        plan = ranges.plan(asked, gap_bytes=self.shape.gap_bytes, max_request_bytes=part)
        bound = _loosest(requests[i].max_bytes for i in indices)
        answers, version = await self.fetch_planned(key, plan, bound)
        for i, data in zip(indices, answers, strict=True):
            if data is not None and requests[i].byte_range is None:  # each its own bound
                check_size(key, memoryview(data).nbytes, requests[i].max_bytes, store)
            self.emit((i, data, version))

    def part_limiter(self, key: str) -> asyncio.Semaphore:
        limiter = self.parts.get(key)
        if limiter is None:
            limiter = self.parts[key] = asyncio.Semaphore(self.shape.parts_per_object)
        return limiter

    async def fetch_one_range(self, key: str, i: int) -> None:
        # One range within a part (an inner chunk, a shard index): one request, with
        # nothing to plan, coalesce or slice back.
        byte_range = self.requests[i].byte_range
        async with self.part_limiter(key):
            answer = await read_one(
                self.store, key, byte_range, self.requests[i].max_bytes, self.settings, self.caps
            )
        if answer is not None:
            ranges.refuse_long(byte_range, answer[0])
        self.emit((i, None, None) if answer is None else (i, *answer))

    async def fetch_whole(self, key: str, i: int) -> None:
        # One whole value (a metadata document, an unsharded chunk): one request, with
        # nothing to plan, coalesce or slice back.
        max_bytes = self.requests[i].max_bytes
        answer = await self.read(key, None, max_bytes)
        if answer is None:
            self.emit((i, None, None))
            return
        data, version = answer
        check_size(key, memoryview(data).nbytes, max_bytes, self.store)
        self.emit((i, data, version))

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        """`read_one` with the batch's store, settings and capabilities."""
        return await read_one(self.store, key, byte_range, max_bytes, self.settings, self.caps)

    async def fetch_planned(
        self, key: str, plan: ranges.RangePlan, max_bytes: int | None
    ) -> tuple[list[Buffer | None], Version | None]:
        """The ranges `plan` fetches of `key`, from one version of it, sliced back."""
        store, caps = self.store, self.caps
        for attempt in range(_TORN_RETRIES):
            try:
                if caps.batched_reads:
                    fetched = await self.read_windows(key, plan.fetch, max_bytes)
                else:
                    fetched = await self.read_parts(key, plan.fetch, max_bytes)
                break
            except TornReadError as exc:
                if attempt == _TORN_RETRIES - 1:
                    raise StoreError(
                        f"cannot read {key!r} in {store!r}: it was replaced while its "
                        f"ranges were read, {_TORN_RETRIES} times in a row"
                    ) from exc
        if fetched is None:
            return [None] * len(plan.wanted), None
        answers, version = fetched
        return plan.slice_back(answers), version

    async def read_windows(
        self, key: str, byte_ranges: Sequence[ByteRange | None], max_bytes: int | None
    ) -> tuple[list[Buffer], Version | None] | None:
        """The ranges of `key` from a store that reads many with one open: a window of
        them at a time (at most `max_inflight_bytes`, one request under the policy),
        until an answer is short (the value ends there: the rest lie past its end)."""
        store, caps = self.store, self.caps
        answers: list[Versioned] = []
        most = self.settings.max_inflight_bytes
        for window in batched_by_size(byte_ranges, _requested, most):

            async def read(window: list[ByteRange | None] = window) -> Any:
                return await _read_ranges_checked(store, caps, key, window, max_bytes)

            request = retry.Request("read", key, read, _total_bytes(window))
            fetched = await retry.run_request(store.runtime, request, self.settings)
            if fetched is None:
                return None
            answers += [(data, fetched[1]) for data in fetched[0]]
            if any(ranges.is_short(r, d) for r, d in zip(window, fetched[0], strict=False)):
                break
        return [data for data, _ in answers], _one_version(key, answers)

    async def read_parts(
        self, key: str, byte_ranges: Sequence[ByteRange], max_bytes: int | None
    ) -> tuple[list[Buffer], Version | None] | None:
        """Each range as its own request under the policy, concurrently: at most
        `parts_per_object` of this key at once."""
        return await _gather_ranges(
            key, byte_ranges, partial(self.read, max_bytes=max_bytes), self.part_limiter(key)
        )


async def _read_ranges_checked(
    store: ReadBackend,
    caps: Capabilities,
    key: str,
    byte_ranges: Sequence[ByteRange | None],
    max_bytes: int | None,
) -> tuple[list[Buffer], Version | None] | None:
    answer = await store.read_ranges(key, byte_ranges, max_bytes)
    if answer is not None and caps.verify_short_reads:
        for byte_range, data in zip(byte_ranges, answer[0], strict=False):
            await _check_length(store, key, byte_range, data)
    return answer


def _requested(byte_range: ByteRange | None) -> int:
    return ranges.requested_bytes(byte_range) or 0  # a whole value counts nothing
