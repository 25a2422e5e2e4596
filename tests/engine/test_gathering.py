"""`aiozarr.batch()`: reads under way at the same time read as one plan (request counts),
each still returning its own values or raising its own error."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import numpy as np
import pytest
from tests.batch_shapes import assert_indexes_then_data, is_index

import aiozarr
from aiozarr.errors import CodecError
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.protocol import Store

NAMES = ("a", "b", "c", "d")


def _values(name: str) -> np.ndarray:
    return np.random.default_rng(ord(name)).integers(0, 1000, size=(64, 64), dtype="i4")


async def _arrays(inner: Store) -> tuple[CountingStore, dict[str, aiozarr.AsyncArray]]:
    """Four sharded arrays (2 x 2 shards of 32 x 32, inner chunks of 8 x 8), opened
    through one counting store whose counters start at zero."""
    for name in NAMES:
        await aiozarr.create_array_async(
            inner, name, data=_values(name), chunks=(8, 8), shards=(32, 32)
        )
    store = CountingStore(inner)
    arrays = {name: await aiozarr.open_array_async(store, name, mode="r") for name in NAMES}
    store.reset()
    return store, arrays


#: Two windows on each array, across all four shards of each.
SELECTIONS = [(n, (slice(i, i + 5), slice(3, 50))) for n in NAMES for i in (0, 40)]


def _check(got: list[np.ndarray]) -> None:
    for (name, sel), values in zip(SELECTIONS, got, strict=True):
        assert np.array_equal(values, _values(name)[sel])


async def test_reads_gathered_in_a_batch_are_one_plan(
    emulator_s3_store: Callable[[], Store],
) -> None:
    inner = emulator_s3_store()
    store, arrays = await _arrays(inner)
    async with aiozarr.batch():
        got = await asyncio.gather(*(arrays[n].getitem(sel) for n, sel in SELECTIONS))
    _check(got)
    assert_indexes_then_data(store.batches, 16)
    assert store.counts["get"] == 16 + 16  # one coalesced run per shard
    # the control: the same reads on arrays opened afresh, without the block
    apart_store, apart_arrays = await _arrays_again(inner)
    _check(await asyncio.gather(*(apart_arrays[n].getitem(sel) for n, sel in SELECTIONS)))
    indexes = [b for b in apart_store.batches if all(is_index(r) for r in b)]
    assert len(indexes) == len(SELECTIONS)  # an index batch each, then their data


async def _arrays_again(inner: Store) -> tuple[CountingStore, dict[str, aiozarr.AsyncArray]]:
    store = CountingStore(inner)
    arrays = {name: await aiozarr.open_array_async(store, name, mode="r") for name in NAMES}
    store.reset()
    return store, arrays


async def test_tasks_started_inside_are_gathered_when_awaited_after() -> None:
    store, arrays = await _arrays(MemoryStore())
    with aiozarr.batch():
        tasks = [asyncio.create_task(arrays[n].getitem(sel)) for n, sel in SELECTIONS]
    _check([await task for task in tasks])
    assert_indexes_then_data(store.batches, 16)


async def test_reads_one_after_another_in_a_batch_read_as_alone() -> None:
    store, arrays = await _arrays(MemoryStore())
    _check([await arrays[n].getitem(sel) for n, sel in SELECTIONS])  # the indexes known
    store.reset()
    async with aiozarr.batch():
        got = [await arrays[n].getitem(sel) for n, sel in SELECTIONS]
    _check(got)
    inside = [len(batch) for batch in store.batches]
    store.reset()
    _check([await arrays[n].getitem(sel) for n, sel in SELECTIONS])
    assert inside == [len(batch) for batch in store.batches]  # as without the block
    assert len(inside) == len(SELECTIONS)


async def test_shared_batches_of_separate_tasks_read_together() -> None:
    store, arrays = await _arrays(MemoryStore())

    async def handler(name: str, sel: tuple[slice, slice], shared: bool) -> np.ndarray:
        with aiozarr.batch(shared=shared):  # each task its own block, as a service's
            return await arrays[name].getitem(sel)

    together = await asyncio.gather(*(handler(n, sel, True) for n, sel in SELECTIONS))
    _check(together)
    assert_indexes_then_data(store.batches, 16)
    store, arrays = await _arrays_again(arrays["a"].store)
    apart = await asyncio.gather(*(handler(n, sel, False) for n, sel in SELECTIONS))
    _check(apart)
    assert len(store.batches) > 2  # batches not shared: each read plans alone


async def test_an_error_is_only_the_read_that_met_it() -> None:
    inner = MemoryStore()
    _, arrays = await _arrays(inner)
    await inner.set("b/c/0/0", b"not a shard: too short to hold its index")
    async with aiozarr.batch():
        got = await asyncio.gather(
            *(arrays[n].getitem(sel) for n, sel in SELECTIONS), return_exceptions=True
        )
    failed = [i for i, value in enumerate(got) if isinstance(value, BaseException)]
    assert failed == [2]  # b's window over its first shard
    assert isinstance(got[2], CodecError | aiozarr.errors.AiozarrError)
    assert "b/c/0/0" in str(got[2])
    for i, ((name, sel), value) in enumerate(zip(SELECTIONS, got, strict=True)):
        if i != 2:
            assert np.array_equal(value, _values(name)[sel])


async def test_a_cancelled_read_leaves_the_others_to_finish() -> None:
    _, arrays = await _arrays(MemoryStore())
    async with aiozarr.batch():
        tasks = [asyncio.create_task(arrays[n].getitem(sel)) for n, sel in SELECTIONS]
        await asyncio.sleep(0)  # each read has joined the window the first one opened
        tasks[0].cancel()  # the one whose task reads the window
        done = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(done[0], asyncio.CancelledError)
    for (name, sel), value in zip(SELECTIONS[1:], done[1:], strict=True):
        assert np.array_equal(value, _values(name)[sel])
    leftover = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert leftover == []


def test_blocking_code_is_pointed_to_read_many() -> None:
    with pytest.raises(RuntimeError, match=r"aiozarr\.read_many"):
        aiozarr.batch()
