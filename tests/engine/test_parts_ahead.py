"""A shard needed whole, its index not cached: its first parts go out beside its index.

The shard's stored size is known only from its index, one round trip in; the parts
within `read_ahead_fraction` of its decoded size are asked for with the index, the rest
once it lands. Parts past the shard's data are dropped, every chunk is decoded from the
parts that hold it (joined where it spans two), and no byte is read twice beyond the
index and one chunk across the end of the parts ahead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace

import anyio
import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.byte_range import ByteRange
from aiozarr.emulator import Emulator
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.protocol import Versioned

pytestmark = pytest.mark.timeout(60)

SHAPE = (64, 64)
SHARDS = (32, 32)  # 4 shards of 8 x 8 inner chunks of 4 x 4 (int64: 128 bytes each)
CHUNKS = (4, 4)
INDEX_BYTES = 64 * 16 + 4


class CoalescingMemoryStore(MemoryStore):
    """A memory store that merges nearby ranges, as object stores do."""

    CAPABILITIES = replace(MemoryStore.CAPABILITIES, coalesce_gap_bytes=1 << 20)


def _values(seed: int = 0) -> np.ndarray:
    """Random values of varied ranges, so zstd stores chunks of different sizes that
    start anywhere within a part."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 1 << rng.integers(1, 40, size=SHAPE), dtype="i8")


async def _written(store, *, compressed: bool = True) -> np.ndarray:
    data = _values()
    options = {} if compressed else {"compressors": None}
    arr = await aiozarr.create_array_async(
        store, "a", shape=SHAPE, dtype="i8", chunks=CHUNKS, shards=SHARDS, **options
    )
    await arr.setitem(..., data)
    return data


async def _cold(counting: CountingStore) -> aiozarr.AsyncArray:
    arr = await aiozarr.open_array_async(counting, "a", mode="r")
    counting.reset()
    return arr


async def test_the_parts_ahead_are_asked_for_beside_the_index() -> None:
    counting = CountingStore(CoalescingMemoryStore())
    data = await _written(counting, compressed=False)  # 8 KiB of chunks per shard
    arr = await _cold(counting)
    with config.set(max_request_bytes=1024, read_ahead_fraction=0.25):
        got = await arr.getitem((slice(0, 32), slice(0, 32)))  # shard 0, whole
    assert np.array_equal(got, data[:32, :32])
    asked = [byte_range for _, _, byte_range in counting.requests]
    # The index, then 2 parts ahead (a quarter of 8 KiB) before it landed, then the
    # other 6 KiB as 6 parts of the coalesced run past them.
    assert asked[0] == ByteRange.last(INDEX_BYTES)
    assert asked[1:3] == [ByteRange.of(0, 1024), ByteRange.of(1024, 1024)]
    assert asked[3:] == [ByteRange.of(1024 * i, 1024) for i in range(2, 8)]
    assert counting.bytes_read == 8192 + INDEX_BYTES  # no byte read twice
    assert arr.store.runtime.bytes.held == 0


@pytest.mark.parametrize("part", [100, 333, 1000, 4096])
@pytest.mark.parametrize("fraction", [0.05, 0.3, 1.0, 4.0])
async def test_chunks_across_parts_are_joined_and_read_once(part: int, fraction: float) -> None:
    counting = CountingStore(CoalescingMemoryStore())
    data = await _written(counting)
    sizes = [await counting.inner.getsize(f"a/c/{i}/{j}") for i in (0, 1) for j in (0, 1)]
    arr = await _cold(counting)
    with config.set(max_request_bytes=part, read_ahead_fraction=fraction):
        assert np.array_equal(await arr.getitem(...), data)
    assert arr.store.runtime.bytes.held == 0
    # Each shard's bytes once, beyond its index (read alone, and again by a part that
    # reaches it) and the one chunk across the end of the parts ahead (at most 128 bytes
    # of int64 stored by zstd, with its frame).
    assert counting.bytes_read <= sum(sizes) + 4 * (2 * INDEX_BYTES + 160)


async def test_parts_past_the_end_of_a_small_shard_move_no_bytes(emulator: Emulator) -> None:
    store = from_url(emulator.s3_url("ahead.zarr"), storage_options=emulator.storage_options())
    arr = await aiozarr.create_array_async(
        store, shape=(256, 256), dtype="f8", chunks=(32, 32), shards=(256, 256)
    )
    data = np.zeros((256, 256))
    data[:32, :32] = np.random.default_rng(1).random((32, 32))  # one chunk of noise
    await arr.setitem(..., data)
    reader = await aiozarr.open_array_async(store, mode="r")
    emulator.set_network(latency_ms=20)
    emulator.reset_stats()
    # 512 KiB decoded: 8 parts of 64 KiB ahead, the whole shard inside the first.
    with config.set(max_request_bytes=64 << 10, read_ahead_fraction=1.0, hedge_reads=False):
        assert np.array_equal(await reader.getitem(...), data)
    stats = emulator.stats()
    assert stats["by_method"]["GET"] <= 1 + 8, stats
    # Data came in two answers, the index and the first part; the other parts were
    # dropped on their way or answered 416 (past the end: no bytes), each asking the
    # version it was past before it was dropped (a HEAD: no bytes either).
    assert stats["by_status"]["206"] == 2, stats
    assert stats["by_method"].get("HEAD", 0) <= stats["by_status"].get("416", 0), stats
    assert set(stats["by_status"]) <= {"200", "206", "416"}, stats
    assert reader.store.runtime.bytes.held == 0


async def test_a_missing_shard_reads_as_fill_and_gives_its_parts_back() -> None:
    counting = CountingStore(CoalescingMemoryStore())
    arr = await aiozarr.create_array_async(
        counting,
        "a",
        shape=SHAPE,
        dtype="i8",
        chunks=CHUNKS,
        shards=SHARDS,
        fill_value=-3,
        compressors=None,
    )
    await arr.setitem((slice(0, 32), slice(0, 32)), 5)  # shard 0 alone
    arr = await _cold(counting)
    with config.set(max_request_bytes=1024):
        got = await arr.getitem(...)
    assert np.all(got[:32, :32] == 5)
    got[:32, :32] = -3
    assert np.all(got == -3)
    assert arr.store.runtime.bytes.held == 0


async def test_a_tight_byte_budget_reads_many_shards_without_waiting_forever() -> None:
    counting = CountingStore(CoalescingMemoryStore())
    data = await _written(counting, compressed=False)
    arr = await _cold(counting)
    # Room for 2 parts: each shard takes one ahead; the rest wait for decoded parts.
    with config.set(max_request_bytes=1024, max_inflight_bytes=2048, read_ahead_fraction=1.0):
        with anyio.fail_after(20):
            assert np.array_equal(await arr.getitem(...), data)
        assert counting.stats()["bytes_read"] == 4 * (8192 + INDEX_BYTES)
    assert arr.store.runtime.bytes.held == 0


class RewrittenAfterItsIndex(CoalescingMemoryStore):
    """Answers a shard's index, then has the shard rewritten before any part is read."""

    def __init__(self) -> None:
        super().__init__()
        self.rewrite: Callable[[], Awaitable[None]] | None = None
        self.rewritten = anyio.Event()

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        if self.rewrite is None or byte_range is None:
            return await super().read(key, byte_range, max_bytes)
        if byte_range.suffix is None:  # a part: after the rewrite
            await self.rewritten.wait()
            return await super().read(key, byte_range, max_bytes)
        answer = await super().read(key, byte_range, max_bytes)  # the index: before it
        await self.rewrite()
        self.rewrite = None
        self.rewritten.set()
        return answer


async def test_parts_of_a_shard_rewritten_after_its_index_are_never_decoded() -> None:
    inner = RewrittenAfterItsIndex()
    store = CountingStore(inner)  # not read inline, as a bare memory store would be
    first = await _written(store)
    writer = await aiozarr.open_array_async(store, "a")
    reader = await aiozarr.open_array_async(store, "a", mode="r")
    second = _values(7)

    async def rewrite() -> None:
        await writer.setitem(..., second)  # every chunk changes size: the layout moves

    inner.rewrite = rewrite
    with config.set(max_request_bytes=1000, read_ahead_fraction=1.0):
        got = await reader.getitem((slice(0, 32), slice(32, 64)))
    assert not np.array_equal(first[:32, 32:], second[:32, 32:])
    assert np.array_equal(got, second[:32, 32:])
    assert inner.rewrite is None  # it was rewritten
    assert reader.store.runtime.bytes.held == 0


@pytest.mark.parametrize("fault", ["status", "truncate"])
async def test_a_failed_part_ahead_is_read_again_alone(emulator: Emulator, fault: str) -> None:
    store = from_url(
        emulator.s3_url(f"fault-{fault}.zarr"), storage_options=emulator.storage_options()
    )
    counting = CountingStore(store)
    data = np.random.default_rng(5).random((256, 256))  # 512 KiB, barely compressible
    arr = await aiozarr.create_array_async(
        counting, shape=data.shape, dtype="f8", chunks=(32, 32), shards=data.shape
    )
    await arr.setitem(..., data)
    reader = await aiozarr.open_array_async(counting, mode="r")
    counting.reset()
    # The first two answers fail: two of the first wave (the index and 4 parts ahead;
    # nothing else is asked for before the index lands), so at least one part ahead.
    emulator.inject(fault, count=2, methods=["GET"], key_glob="*c/0/0")
    with config.set(max_request_bytes=64 << 10, read_ahead_fraction=0.5, hedge_reads=False):
        assert np.array_equal(await reader.getitem(...), data)
    assert emulator.stats()["faults"] == 2
    asked = [byte_range for _, _, byte_range in counting.requests]
    twice = {r for r in asked if asked.count(r) == 2}
    assert len(twice) == 2 and all(asked.count(r) == 1 for r in set(asked) - twice)
    ahead = {ByteRange.of(i * (64 << 10), 64 << 10) for i in range(4)}
    assert twice & ahead, twice
    assert reader.store.runtime.bytes.held == 0


class HeldPartsAhead(MemoryStore):
    """Holds its answers to the first two parts of a shard until `release` is set; ranges
    one request each."""

    CAPABILITIES = replace(MemoryStore.CAPABILITIES, batched_reads=False)

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        if byte_range is not None and byte_range.suffix is None and byte_range.offset < 2048:
            await self.release.wait()
        return await super().read(key, byte_range, max_bytes)


async def test_the_rest_of_a_shard_is_read_in_parts_while_its_parts_ahead_are_in_flight() -> None:
    # The parts ahead still wait for their answers when the index lands (they are held
    # until every part was asked for): they are the read's own requests, not a busy
    # store's, and the rest of the shard (one run) is still cut into parts.
    inner = HeldPartsAhead()
    counting = CountingStore(inner)
    data = await _written(counting, compressed=False)  # 8 KiB of chunks per shard
    arr = await _cold(counting)
    with config.set(max_request_bytes=1024, read_ahead_fraction=0.25, connection_target=3):
        read = asyncio.ensure_future(arr.getitem((slice(0, 32), slice(0, 32))))  # shard 0
        try:
            with anyio.fail_after(10):  # the rest is asked for without the parts ahead
                while len(counting.requests) < 1 + 8:
                    await asyncio.sleep(0.005)
            assert not read.done()
        finally:
            inner.release.set()
        got = await read
    assert np.array_equal(got, data[:32, :32])
    asked = [byte_range for _, _, byte_range in counting.requests]
    assert asked[0] == ByteRange.last(INDEX_BYTES)
    assert sorted(asked[1:], key=lambda r: r.offset) == [
        ByteRange.of(1024 * i, 1024) for i in range(8)
    ]


async def test_a_budget_smaller_than_a_part_reads_a_shard_no_part_ahead_holds_a_chunk_of() -> None:
    # One part ahead takes the whole budget; no chunk (128 bytes) ends within it, so every
    # chunk is read after the index, and that read needs the budget the part ahead held.
    with config.set(max_request_bytes=100, max_inflight_bytes=50):
        counting = CountingStore(CoalescingMemoryStore())
        data = await _written(counting, compressed=False)
        arr = await _cold(counting)
        assert arr.store.runtime.bytes.capacity == 50
        with anyio.fail_after(20):
            got = await arr.getitem((slice(0, 32), slice(0, 32)))
    assert np.array_equal(got, data[:32, :32])
    assert arr.store.runtime.bytes.held == 0
