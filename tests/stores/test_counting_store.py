"""`CountingStore` counts what reaches the store it wraps; `LRUByteCache` bounds by bytes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from aiozarr.byte_cache import LRUByteCache
from aiozarr.byte_range import ByteRange
from aiozarr.errors import CodecError
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.protocol import Capabilities, RangeRequest, Store, Versioned

BLOB = bytes(range(256)) * 4


class CoalescingMemoryStore(MemoryStore):
    CAPABILITIES = replace(MemoryStore.CAPABILITIES, coalesce_gap_bytes=1 << 20)


class SplittingMemoryStore(MemoryStore):
    CAPABILITIES = replace(MemoryStore.CAPABILITIES, max_request_bytes=10)


class DefaultRangesStore(Store):
    """Only `read`: each range is a request of its own, run concurrently."""

    CAPABILITIES = Capabilities(coalesce_gap_bytes=0)

    def __init__(self, data: dict[str, bytes], max_concurrency: int) -> None:
        super().__init__(max_concurrency=max_concurrency)
        self.data = data

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        for _ in range(5):  # let every other started request run too
            await anyio.lowlevel.checkpoint()
        value = self.data.get(key)
        if value is None or byte_range is None:
            return None if value is None else (value, None)
        return value[slice(*byte_range.resolve(len(value)))], None

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for key in self.data:
            yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        for key in self.data:
            yield key


class RangeIgnoringStore(DefaultRangesStore):
    """A server that answers every ranged GET with the whole value."""

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        value = self.data.get(key)
        return None if value is None else (value, None)


@pytest.mark.parametrize(
    "wanted",
    [
        [ByteRange.of(4, 8)],  # one range: one request, nothing planned
        [ByteRange.last(8)],  # a suffix (a shard index)
        [ByteRange.of(0, 4), ByteRange.of(100, 4)],  # two requests, sliced back
    ],
)
async def test_an_answer_longer_than_its_range_is_refused(wanted: list[ByteRange]) -> None:
    # Placing the whole value where a range was asked for would be silently wrong data.
    store = RangeIgnoringStore({"k": BLOB}, max_concurrency=4)
    with pytest.raises(CodecError, match="long read"):
        await store.get_partial_values([RangeRequest("k", r) for r in wanted])


async def counting_with(inner: Store) -> CountingStore:
    await inner.set("k", BLOB)
    return CountingStore(inner)


async def test_adjacent_ranges_on_a_coalescing_store_are_one_request() -> None:
    counting = await counting_with(CoalescingMemoryStore())
    wanted = [ByteRange.of(0, 10), ByteRange.of(10, 10), ByteRange.of(20, 10)]
    answers = await counting.get_partial_values([RangeRequest("k", r) for r in wanted])
    assert [bytes(a) for a in answers] == [BLOB[0:10], BLOB[10:20], BLOB[20:30]]
    assert counting.counts["get"] == 1
    assert counting.requests == [("get", "k", ByteRange.of(0, 30))]
    assert counting.bytes_read == 30


async def test_gap_zero_keeps_separate_ranges_apart() -> None:
    counting = await counting_with(MemoryStore())
    wanted = [ByteRange.of(0, 10), ByteRange.of(20, 10), ByteRange.of(40, 10)]
    await counting.get_partial_values([RangeRequest("k", r) for r in wanted])
    assert counting.counts["get"] == 3
    assert [r for _, _, r in counting.requests] == wanted
    assert counting.bytes_read == 30


async def test_far_ranges_on_a_coalescing_store_read_the_gap() -> None:
    counting = await counting_with(CoalescingMemoryStore())
    await counting.get_partial_values(
        [RangeRequest("k", ByteRange.of(0, 4)), RangeRequest("k", ByteRange.of(1000, 4))]
    )
    assert counting.counts["get"] == 1 and counting.bytes_read == 1004


async def test_inner_max_request_bytes_splits() -> None:
    counting = await counting_with(SplittingMemoryStore())
    (answer,) = await counting.get_partial_values([RangeRequest("k", ByteRange.of(5, 25))])
    assert bytes(answer) == BLOB[5:30]
    assert counting.counts["get"] == 3


async def test_local_store_ranges_are_counted_per_range(tmp_path: Path) -> None:
    counting = await counting_with(LocalStore(tmp_path))
    wanted = [ByteRange.of(0, 1), ByteRange.of(5, 1), ByteRange.last(1)]
    await counting.get_partial_values([RangeRequest("k", r) for r in wanted])
    assert counting.counts["get"] == 3 and counting.bytes_read == 3


async def test_every_operation_is_counted() -> None:
    counting = CountingStore(MemoryStore())
    await counting.set("a/1", b"12345")
    await counting.set_many([("a/2", b"12"), ("b", b"1")])
    assert await counting.get("a/1", ByteRange.last(2)) is not None
    assert await counting.get("missing") is None
    assert await counting.exists("a/1")
    assert await counting.getsize("a/2") == 2
    assert [k async for k in counting.list()] == ["a/1", "a/2", "b"]
    assert [k async for k in counting.list_dir("")] == ["a", "b"]
    await counting.delete("b")
    await counting.delete_many(["a/2"])
    await counting.delete_prefix("a/")
    assert counting.counts == {
        "set": 3,
        "get": 2,
        "exists": 1,
        "getsize": 1,
        "list": 2,
        "delete": 2,
        "delete_prefix": 1,
    }
    assert counting.bytes_written == 8
    assert counting.bytes_read == 2  # the missing read returned nothing
    assert counting.requests[3] == ("get", "a/1", ByteRange.last(2))
    assert counting.stats()["counts"] == dict(counting.counts)
    assert counting.stats()["bytes_written"] == 8
    assert [k async for k in counting.inner.list()] == []


async def test_batches_and_their_order() -> None:
    counting = await counting_with(MemoryStore())
    first = [RangeRequest("k", ByteRange.of(0, 1)), RangeRequest("missing")]
    second = [RangeRequest("k")]
    assert await counting.get_partial_values(first) == [BLOB[:1], None]
    async with counting.stream_partial_values(second) as answers:
        assert [i async for i, _ in answers] == [0]
    assert counting.batches == [first, second]
    assert counting.events == [
        ("batch_start", 0),
        ("batch_end", 0),
        ("batch_start", 1),
        ("batch_end", 1),
    ]


async def test_concurrent_batches_show_as_overlapping_events() -> None:
    counting = await counting_with(MemoryStore())
    async with anyio.create_task_group() as tg:
        for _ in range(2):
            tg.start_soon(counting.get_partial_values, [RangeRequest("k")])
    assert [event for event, _ in counting.events] == [
        "batch_start",
        "batch_start",
        "batch_end",
        "batch_end",
    ]


async def test_batch_end_is_recorded_when_the_block_fails() -> None:
    counting = await counting_with(MemoryStore())
    with pytest.raises(RuntimeError, match="boom"):
        async with counting.stream_partial_values([RangeRequest("k")]):
            raise RuntimeError("boom")
    assert counting.events == [("batch_start", 0), ("batch_end", 0)]


async def test_peak_inflight_is_bounded_by_the_inner_limiter() -> None:
    inner = DefaultRangesStore({f"k{i}": BLOB for i in range(10)}, max_concurrency=3)
    counting = CountingStore(inner)
    assert counting.budget is inner.budget
    requests = [
        RangeRequest(f"k{i}", ByteRange.of(j * 100, 10)) for i in range(10) for j in range(2)
    ]
    answers = await counting.get_partial_values(requests)
    assert [bytes(a) for a in answers] == [BLOB[r.byte_range.offset :][:10] for r in requests]
    assert counting.counts["get"] == 20
    assert counting.peak_inflight == 3
    assert counting.inflight == 0


async def test_reset_forgets_everything() -> None:
    counting = await counting_with(MemoryStore())
    await counting.get_partial_values([RangeRequest("k")])
    await counting.set("x", b"1")
    counting.reset()
    assert counting.stats() == {
        "counts": {},
        "requests": 0,
        "bytes_read": 0,
        "bytes_written": 0,
        "batches": 0,
        "peak_inflight": 0,
    }
    assert counting.events == [] and counting.batches == []


async def test_capabilities_follow_the_inner_store(tmp_path: Path) -> None:
    counting = CountingStore(LocalStore(tmp_path, read_only=True))
    assert counting.read_only and not counting.writable
    assert counting.capabilities.coalesce_gap_bytes == 0
    assert not counting.with_read_only(False).read_only


# -- LRUByteCache (the engine's shard-index cache) -------------------------------------


def test_cache_evicts_least_recently_used_by_bytes() -> None:
    cache = LRUByteCache(100)
    cache.put("a", "A", 40)
    cache.put("b", "B", 40)
    assert cache.get("a") == "A"  # now b is the least recently used
    cache.put("c", "C", 40)
    assert cache.get("b") is None and cache.get("a") == "A" and cache.get("c") == "C"
    assert cache.nbytes == 80 and len(cache) == 2


def test_cache_replace_invalidate_clear() -> None:
    cache = LRUByteCache(100)
    cache.put("a", 1, 60)
    cache.put("a", 2, 30)  # replacing frees the old size
    assert cache.get("a") == 2 and cache.nbytes == 30
    cache.put("b", 3, 70)
    assert "a" in cache and "b" in cache
    cache.invalidate("a")
    cache.invalidate("never")
    assert cache.get("a", "default") == "default" and cache.nbytes == 70
    cache.clear()
    assert len(cache) == 0 and cache.nbytes == 0


def test_cache_skips_values_larger_than_itself() -> None:
    cache = LRUByteCache(10)
    cache.put("small", 1, 5)
    cache.put("huge", 2, 11)
    assert cache.get("huge") is None and cache.get("small") == 1
    disabled = LRUByteCache(0)
    disabled.put("a", 1, 1)
    assert disabled.get("a") is None
    with pytest.raises(ValueError, match="nbytes"):
        cache.put("bad", 1, -1)
