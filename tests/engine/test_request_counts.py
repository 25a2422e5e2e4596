"""Exact request counts of reads and writes, through CountingStore (no timings here)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import ValueTooLargeError
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore

SHAPE = (64, 64)
SHARDS = (16, 16)
CHUNKS = (4, 4)  # 16 inner chunks per shard, 16 shards


class CoalescingMemoryStore(MemoryStore):
    """A memory store that merges nearby ranges, as object stores do."""

    CAPABILITIES = replace(MemoryStore.CAPABILITIES, coalesce_gap_bytes=1 << 20)


async def make_sharded(store, **options) -> tuple[aiozarr.AsyncArray, np.ndarray]:
    data = np.arange(np.prod(SHAPE), dtype="int32").reshape(SHAPE)
    arr = await aiozarr.create_array_async(
        store, "a", shape=SHAPE, dtype="int32", chunks=CHUNKS, shards=SHARDS, **options
    )
    await arr.setitem(..., data)
    return arr, data


async def reopen(counting: CountingStore) -> aiozarr.AsyncArray:
    arr = await aiozarr.open_array_async(counting, "a")
    counting.reset()
    return arr


async def test_one_inner_chunk_of_a_cold_shard_costs_two_requests() -> None:
    counting = CountingStore(MemoryStore())
    _, data = await make_sharded(counting)
    arr = await reopen(counting)
    assert await arr.getitem((5, 6)) == data[5, 6]
    assert counting.counts["get"] == 2  # the shard index, then the inner chunk
    counting.reset()
    assert await arr.getitem((6, 7)) == data[6, 7]
    assert counting.counts["get"] == 1  # index cached


async def test_selection_across_shards_batches_indexes_then_data() -> None:
    counting = CountingStore(CoalescingMemoryStore())
    _, data = await make_sharded(counting)
    arr = await reopen(counting)
    # 2 x 2 inner chunks (adjacent) in each of 4 shards, none read whole.
    sel = (slice(8, 24), slice(8, 24))
    assert np.array_equal(await arr.getitem(sel), data[sel])
    assert counting.counts["get"] == 4 + 4  # 4 index reads, then 1 coalesced read per shard
    index_batch, data_batch = counting.batches
    assert len(index_batch) == 4 and len({r.key for r in index_batch}) == 4
    assert all(r.byte_range is not None and r.byte_range.is_suffix for r in index_batch)
    assert len(data_batch) == 16 and len({r.key for r in data_batch}) == 4
    # The data batch starts only after the index batch has returned.
    assert [e for e, _ in counting.events] == ["batch_start", "batch_end"] * 2


async def test_whole_shards_cost_one_request_each_and_no_index_read() -> None:
    counting = CountingStore(MemoryStore())
    _, data = await make_sharded(counting)
    arr = await reopen(counting)
    sel = (slice(0, 32), slice(16, 48))  # exactly 2 x 2 shards
    assert np.array_equal(await arr.getitem(sel), data[sel])
    assert counting.counts["get"] == 4
    assert all(r.byte_range is None for r in counting.batches[0])


async def test_as_many_whole_shards_as_the_connection_target_are_one_get_each() -> None:
    counting = CountingStore(CoalescingMemoryStore())
    _, data = await make_sharded(counting, compressors=None)  # 64-byte chunks, 1 KiB shards
    arr = await reopen(counting)
    # 16 shards keep 16 connections busy: parts would only add requests.
    with aiozarr.config.set(max_request_bytes=64, connection_target=16):
        assert np.array_equal(await arr.getitem(...), data)
        assert counting.counts["get"] == 16
        assert all(r is None for _, _, r in counting.requests)
        counting.reset()
        # Indexes now cached: 16 coalesced runs, one request each.
        assert np.array_equal(await arr.getitem(...), data)
        assert counting.counts["get"] == 16


async def test_whole_shards_larger_than_the_part_size_are_read_in_parts() -> None:
    counting = CountingStore(CoalescingMemoryStore())
    _, data = await make_sharded(counting, compressors=None)  # 64-byte chunks, 1 KiB shards
    arr = await reopen(counting)
    # far below a shard's 1 KiB, and fewer shards than the requests the read aims for
    with aiozarr.config.set(max_request_bytes=64, connection_target=17):
        assert np.array_equal(await arr.getitem(...), data)
        # Per shard: its index, alongside the first part; then the other 15 parts.
        assert counting.counts["get"] == 16 * (1 + 1024 // 64)
        index_size = 16 * 16 + 4
        assert counting.bytes_read == 16 * (1024 + index_size)  # no byte read twice
        counting.reset()
        # Indexes now cached: the exact chunk ranges, coalesced and cut into parts.
        assert np.array_equal(await arr.getitem((slice(0, 16), slice(0, 16))), data[:16, :16])
        assert counting.counts["get"] == 1024 // 64


async def test_whole_shards_within_the_part_size_are_one_get() -> None:
    counting = CountingStore(CoalescingMemoryStore())
    _, data = await make_sharded(counting, compressors=None)  # 1 KiB shards
    arr = await reopen(counting)
    with aiozarr.config.set(max_request_bytes=2048):
        assert np.array_equal(await arr.getitem(...), data)
    assert counting.counts["get"] == 16  # one per shard, as TensorStore reads them
    assert all(r is None for _, _, r in counting.requests)


async def test_missing_shard_costs_one_request_and_reads_fill() -> None:
    counting = CountingStore(MemoryStore())
    arr = await aiozarr.create_array_async(
        counting, "a", shape=SHAPE, dtype="int32", chunks=CHUNKS, shards=SHARDS, fill_value=-7
    )
    counting.reset()
    assert await arr.getitem((3, 3)) == -7
    assert counting.counts["get"] == 1
    counting.reset()
    assert np.all(await arr.getitem((slice(0, 16), slice(0, 16))) == -7)
    assert counting.counts["get"] == 1


async def test_unsharded_chunks_are_one_batch() -> None:
    counting = CountingStore(MemoryStore())
    arr = await aiozarr.create_array_async(
        counting, "u", shape=(40, 40), dtype="f4", chunks=(10, 10)
    )
    await arr.setitem(..., 1.5)
    counting.reset()
    await arr.getitem((slice(5, 35), slice(5, 35)))
    assert counting.counts["get"] == 16
    assert len(counting.batches) == 1 and len(counting.batches[0]) == 16


@pytest.mark.parametrize("index_location", ["start", "end"])
async def test_index_location_and_index_codecs(index_location: str) -> None:
    for index_codecs in (
        [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        [{"name": "bytes", "configuration": {"endian": "little"}}],
    ):
        store = MemoryStore()
        codecs = [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [2, 3],
                    "codecs": [
                        {"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "gzip", "configuration": {"level": 1}},
                    ],
                    "index_codecs": index_codecs,
                    "index_location": index_location,
                },
            }
        ]
        arr = await aiozarr.create_array_async(
            store, shape=(9, 10), dtype="u2", chunks=(4, 6), serializer=codecs[0], compressors=None
        )
        data = np.arange(90, dtype="u2").reshape(9, 10)
        await arr.setitem(..., data)
        again = await aiozarr.open_array_async(store)
        assert np.array_equal(await again.getitem(...), data)
        assert await again.getitem((8, 9)) == 89


async def test_nested_sharding_reads_and_writes() -> None:
    inner = {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [2, 2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_location": "start",
        },
    }
    outer = {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [4, 4],
            "codecs": [inner],
            "index_codecs": [
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "crc32c"},
            ],
            "index_location": "end",
        },
    }
    store = MemoryStore()
    arr = await aiozarr.create_array_async(
        store, shape=(10, 10), dtype="i8", chunks=(8, 8), serializer=outer, compressors=None
    )
    data = np.arange(100).reshape(10, 10)
    await arr.setitem((slice(1, 9), slice(None)), data[1:9])
    expected = np.zeros_like(data)
    expected[1:9] = data[1:9]
    again = await aiozarr.open_array_async(store)
    assert np.array_equal(await again.getitem(...), expected)
    assert np.array_equal(await again.getitem((slice(2, 7), 3)), expected[2:7, 3])


async def test_concurrent_writes_to_one_shard_lose_nothing() -> None:
    import anyio

    store = MemoryStore()
    arr = await aiozarr.create_array_async(
        store, shape=(50, 4), dtype="i4", chunks=(1, 4), shards=(50, 4), fill_value=0
    )

    async with anyio.create_task_group() as tg:
        for i in range(50):
            tg.start_soon(arr.setitem, (i, slice(None)), i + 1)
    expected = np.repeat(np.arange(1, 51, dtype="i4")[:, None], 4, axis=1)
    assert np.array_equal(await arr.getitem(...), expected)


async def test_concurrent_partial_writes_to_one_chunk_lose_nothing() -> None:
    import anyio

    store = MemoryStore()
    arr = await aiozarr.create_array_async(store, shape=(40,), dtype="i4", chunks=(40,))
    async with anyio.create_task_group() as tg:
        for i in range(40):
            tg.start_soon(arr.setitem, i, i + 1)
    assert np.array_equal(await arr.getitem(...), np.arange(1, 41))


async def test_fill_only_shard_is_deleted() -> None:
    store = MemoryStore()
    arr, _ = await make_sharded(store, fill_value=0)
    key = "a/c/0/0"
    assert await store.exists(key)
    await arr.setitem((slice(0, 16), slice(0, 16)), 0)
    assert not await store.exists(key)
    await arr.setitem((slice(16, 32), slice(0, 16)), 0)  # partial update to all-fill
    assert not await store.exists("a/c/1/0")


async def test_partial_shard_update_reads_once_writes_once() -> None:
    counting = CountingStore(MemoryStore())
    _, data = await make_sharded(counting)
    arr = await reopen(counting)
    await arr.setitem((slice(1, 3), slice(1, 3)), -1)
    assert counting.counts["get"] == 1
    assert counting.counts["set"] == 1
    data[1:3, 1:3] = -1
    assert np.array_equal(await arr.getitem(...), data)


async def test_reads_stream_through_a_small_inflight_budget() -> None:
    store = CountingStore(MemoryStore())  # a store with requests (memory is read inline)
    with aiozarr.config.set(max_inflight_bytes=4096):
        arr, data = await make_sharded(store, compressors=None)
        # 16 shards of 1 KiB each are far larger together than the 4 KiB budget.
        assert np.array_equal(await arr.getitem((slice(1, 63), slice(1, 63))), data[1:63, 1:63])
        budget = store.runtime.bytes
        assert 0 < budget.peak <= 4096
        assert np.array_equal(await arr.getitem(...), data)
        assert budget.peak <= 4096


async def test_writes_invalidate_the_cached_shard_index() -> None:
    counting = CountingStore(MemoryStore())
    _, data = await make_sharded(counting)
    arr = await reopen(counting)
    assert await arr.getitem((1, 1)) == data[1, 1]  # caches the index of shard 0/0
    await arr.setitem((slice(0, 4), slice(0, 4)), -5)  # rewrites shard 0/0: index changes
    counting.reset()
    assert await arr.getitem((1, 1)) == -5
    assert await arr.getitem((9, 9)) == data[9, 9]
    assert counting.counts["get"] == 3  # a fresh index read, then the two chunks


async def test_transpose_before_sharding_reads_inner_chunks_like_any_shard() -> None:
    # The stored shard is transposed; inner chunks are still found through one index read.
    counting = CountingStore(MemoryStore())
    sharding = {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [2, 4],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "crc32c"},
            ],
        },
    }
    arr = await aiozarr.create_array_async(
        counting,
        shape=(8, 8),
        dtype="i2",
        chunks=(8, 4),
        compressors=None,
        filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}],
        serializer=sharding,
    )
    data = np.arange(64, dtype="i2").reshape(8, 8)
    await arr.setitem(slice(None), data)
    assert arr.chunks == (4, 2)  # the stored (2, 4) on the array's axes
    counting.reset()
    assert await arr.getitem((5, 1)) == data[5, 1]
    assert counting.counts["get"] == 2  # the shard index, then the inner chunk
    counting.reset()
    np.testing.assert_array_equal(await arr.getitem((slice(4, 8), slice(0, 2))), data[4:, :2])
    assert counting.counts["get"] == 1  # index cached: the same inner chunk


async def test_a_burst_of_cold_reads_of_one_shard_reads_its_index_once(tmp_path) -> None:
    counting = CountingStore(LocalStore(tmp_path))  # its reads wait: the burst overlaps
    _, data = await make_sharded(counting)
    arr = await reopen(counting)
    # 50 requests for single elements of shard (0, 0), all before any index is cached:
    # one reads the index, the other 49 wait for it.
    points = [(i % 16, (i * 7) % 16) for i in range(50)]
    values = await asyncio.gather(*(arr.getitem(p) for p in points))
    assert values == [data[p] for p in points]
    index_reads = [r for r in counting.requests if r[2] is not None and r[2].is_suffix]
    assert len(index_reads) == 1
    assert counting.counts["get"] == 1 + 50


async def test_reads_waiting_for_an_index_read_it_themselves_when_its_reader_is_cancelled(
    tmp_path,
) -> None:
    counting = CountingStore(LocalStore(tmp_path))
    _, data = await make_sharded(counting)
    arr = await reopen(counting)
    leader = asyncio.ensure_future(arr.getitem((0, 0)))
    while not arr._stored.index_loads:  # the leader's index read is on its way
        await asyncio.sleep(0)
    followers = asyncio.gather(*(arr.getitem((i, i)) for i in range(1, 8)))
    await asyncio.sleep(0)
    leader.cancel()
    assert await followers == [data[i, i] for i in range(1, 8)]
    assert arr._stored.index_loads == {}


async def test_a_read_failing_on_a_cached_index_leaves_no_index_read_to_wait_for() -> None:
    # Shard 0's index (cached by the first read) says inner chunk 3 is longer than its
    # codecs can produce: a read of shards 0 and 1 fails on it as it locates shard 0's
    # chunks. Shard 1's index read was then promised to later reads, never made: they
    # waited for it forever.
    store = MemoryStore()
    arr = await aiozarr.create_array_async(
        store, "a", shape=(32,), dtype="i8", chunks=(4,), shards=(16,), compressors=None
    )
    await arr.setitem(..., np.arange(32))
    layout = arr._stored.layout
    shard = bytes(await store.get("a/c/0"))
    table = np.array(layout.decode_index(shard[-layout.index_size :]).offsets_and_lengths)
    table[:] = 2**64 - 1
    table[3] = (0, 64)  # 2 chunks' bytes, no other chunk's: only its length is wrong
    await store.set("a/c/0", shard[: -layout.index_size] + bytes(layout.index_chain.encode(table)))
    arr = await aiozarr.open_array_async(CountingStore(store), "a")
    with pytest.raises(ValueTooLargeError, match="'a/c/0'"):
        await arr.getitem(13)  # caches shard 0's index
    with pytest.raises(ValueTooLargeError, match="'a/c/0'"):
        await arr.getitem(slice(12, 20))  # inner chunk 3 of shard 0, 0 of shard 1
    assert arr._stored.index_loads == {}
    later = await asyncio.wait_for(arr.getitem(slice(16, 20)), 60)
    np.testing.assert_array_equal(later, [16, 17, 18, 19])


async def test_a_progress_callback_raising_leaves_no_index_read_to_wait_for() -> None:
    # The read fills shard 0's chunks not stored as soon as its cached index is handed
    # on, and the callback raises there: shard 1's index read, promised, was never made.
    store = MemoryStore()
    arr = await aiozarr.create_array_async(
        store, "a", shape=(32,), dtype="i8", chunks=(4,), shards=(16,), fill_value=-1
    )
    await arr.setitem(slice(0, 4), 7)  # shard 0: inner chunk 0 stored, 1-3 not
    await arr.setitem(slice(16, 32), 9)
    arr = await aiozarr.open_array_async(CountingStore(store), "a")
    assert await arr.getitem(1) == 7  # caches shard 0's index

    def stop(done: int, total: int) -> None:
        raise KeyError("the caller stops the read")

    with pytest.raises(KeyError, match="stops the read"):
        await arr.getitem(slice(2, 20), progress=stop)
    assert arr._stored.index_loads == {}
    later = await asyncio.wait_for(arr.getitem(slice(16, 18)), 60)
    np.testing.assert_array_equal(later, [9, 9])
