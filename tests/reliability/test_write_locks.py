"""Concurrent writers in one process never lose each other's updates, whatever thread or
event loop each runs on; the write-lock table holds only the keys being written.

Each update writes one column of a (16, 240) array stored as ONE shard of 48 inner
chunks, so every update is a read-modify-write of the same shard. A lost update is
a column that does not hold the value written to it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from tests.reliability.locations import StoreFactory

import aiozarr
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.policy.locks import KeyLocks
from aiozarr.storage.protocol import Store

pytestmark = pytest.mark.timeout(180)

COLUMNS = 240
SHAPE = (16, COLUMNS)


def _column(i: int) -> np.ndarray:
    return np.full((SHAPE[0], 1), i + 1, dtype="i4")


def _lost(store: Store) -> int:
    got = aiozarr.open_array(store, mode="r")[...]
    expected = np.arange(1, COLUMNS + 1, dtype="i4")
    return int(np.sum(np.any(got != expected, axis=0)))


ON_LOCAL_AND_S3 = pytest.mark.parametrize("make_store", ["local", "s3"], indirect=True)


def _array_store(make_store: StoreFactory) -> Store:
    """The one store object every writer of a test uses, holding the empty array."""
    store = make_store()
    aiozarr.create_array(store, shape=SHAPE, dtype="i4", chunks=(4, 20), shards=SHAPE)
    return store


def _run_threads(workers: list[Callable[[], None]]) -> None:
    errors: list[BaseException] = []

    def guarded(fn: Callable[[], None]) -> None:
        try:
            fn()
        except BaseException as e:  # reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(fn,)) for fn in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@ON_LOCAL_AND_S3
def test_eight_event_loops_lose_no_update(make_store: StoreFactory) -> None:
    store = _array_store(make_store)

    def worker(t: int) -> Callable[[], None]:
        async def main() -> None:
            arr = await aiozarr.open_array_async(store)
            for i in range(t, COLUMNS, 8):
                await arr.setitem((slice(None), slice(i, i + 1)), _column(i))

        return lambda: asyncio.run(main())

    _run_threads([worker(t) for t in range(8)])
    assert _lost(store) == 0
    assert len(store.runtime.locks) == 0


@ON_LOCAL_AND_S3
def test_sync_facade_and_an_application_loop_lose_no_update(make_store: StoreFactory) -> None:
    """Four threads through the sync facade, four tasks on the application's own loop,
    all on one `Array`."""
    arr = aiozarr.open_array(_array_store(make_store))

    def sync_worker(t: int) -> Callable[[], None]:
        def run() -> None:
            for i in range(t, COLUMNS, 8):
                arr[:, i : i + 1] = _column(i)

        return run

    async def app() -> None:
        async def task(t: int) -> None:
            for i in range(t, COLUMNS, 8):
                await arr.async_array.setitem((slice(None), slice(i, i + 1)), _column(i))

        await asyncio.gather(*(task(t) for t in range(4, 8)))

    _run_threads([sync_worker(t) for t in range(4)] + [lambda: asyncio.run(app())])
    assert _lost(arr.store) == 0
    assert len(arr.store.runtime.locks) == 0


def test_lock_table_is_empty_after_writing_ten_thousand_chunks() -> None:
    store = MemoryStore()
    arr = aiozarr.create_array(store, shape=(100, 100), dtype="u1", chunks=(1, 1))
    arr[...] = np.arange(10_000).reshape(100, 100).astype("u1")
    arr[3:97, 5:95] = 7  # and a partial update of most of them
    assert len(store.runtime.locks) == 0
    assert int(arr[50, 50]) == 7


async def _until_queued(locks: KeyLocks, key: str, count: int) -> None:
    """Wait (at most 10 s) until `count` acquirers are queued behind `key`'s holder."""
    deadline = asyncio.get_running_loop().time() + 10
    while len(locks._held.get(key, ())) < count:
        assert asyncio.get_running_loop().time() < deadline, "the waiters never queued"
        await asyncio.sleep(0.001)


async def test_a_key_waits_across_loops_and_cancellation_passes_it_on() -> None:
    locks = KeyLocks()
    await locks.acquire("k")
    other_loop_got_it = threading.Event()
    release_it = threading.Event()

    def other_loop() -> None:
        async def main() -> None:
            await locks.acquire("k")
            other_loop_got_it.set()
            await asyncio.get_running_loop().run_in_executor(None, release_it.wait)
            locks.release("k")

        asyncio.run(main())

    thread = threading.Thread(target=other_loop)
    thread.start()
    await _until_queued(locks, "k", 1)  # the other loop waits for the key
    cancelled = asyncio.create_task(locks.acquire("k"))
    await _until_queued(locks, "k", 2)  # and this task behind it
    assert not other_loop_got_it.is_set()  # held here: the other loop waits
    cancelled.cancel()
    locks.release("k")
    await asyncio.to_thread(other_loop_got_it.wait, 10)
    assert other_loop_got_it.is_set()
    release_it.set()
    await asyncio.to_thread(thread.join)
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert len(locks) == 0
    async with locks.hold(["b", "a", "b"]):
        assert len(locks) == 2
    assert len(locks) == 0


async def test_a_waiter_cancelled_as_it_is_granted_passes_the_key_on() -> None:
    locks = KeyLocks()
    await locks.acquire("k")
    waiters = [asyncio.create_task(locks.acquire("k")) for _ in range(3)]
    await _until_queued(locks, "k", 3)
    locks.release("k")  # the grant to waiters[0] is on its way...
    waiters[0].cancel()  # ...and it is cancelled before it runs
    await asyncio.wait_for(asyncio.shield(waiters[1]), 5)  # passed on to the next
    assert not waiters[1].cancelled()
    locks.release("k")
    await asyncio.wait_for(waiters[2], 5)
    locks.release("k")
    assert len(locks) == 0


async def test_a_block_and_the_tasks_it_starts_know_they_hold_keys() -> None:
    locks = KeyLocks()
    assert not KeyLocks.holds_any()
    async with locks.hold(["a"]):
        assert KeyLocks.holds_any()
        assert await asyncio.ensure_future(_holds_any())
    assert not KeyLocks.holds_any()
    assert not await asyncio.ensure_future(_holds_any())


async def _holds_any() -> bool:
    return KeyLocks.holds_any()


async def test_settings_changed_after_a_first_read_take_effect_on_the_open_store() -> None:
    store = CountingStore(MemoryStore())  # reads through the engine, not inline
    arr = await aiozarr.create_array_async(
        store, shape=(64, 64), dtype="i4", chunks=(8, 8), shards=(32, 32), compressors=None
    )
    await arr.setitem(..., 1)
    await arr.getitem(...)
    before = aiozarr.config.process_settings()
    assert store.budget.stats()["maximum"] == before.max_concurrency
    aiozarr.config.set(max_inflight_bytes=4096, max_concurrency=2)  # the whole process
    try:
        store.budget.reset_peaks()
        assert (await arr.getitem(...) == 1).all()
        assert store.budget.stats()["maximum"] == 2
        assert store.budget.stats()["peak_inflight"] <= 2
        assert store.runtime.bytes.capacity == 4096
    finally:
        aiozarr.config.set(
            max_inflight_bytes=before.max_inflight_bytes, max_concurrency=before.max_concurrency
        )
    await arr.getitem(...)
    assert store.budget.stats()["maximum"] == before.max_concurrency


def test_equal_stores_share_one_runtime(tmp_path: Path) -> None:
    """One directory, one request budget, byte budget and lock table, however opened."""
    one, same, other = LocalStore(tmp_path), LocalStore(tmp_path), LocalStore(tmp_path / "b")
    assert one.runtime is same.runtime
    assert one.runtime is not other.runtime


async def test_a_read_only_handles_retry_keeps_writers_out(tmp_path: Path) -> None:
    """A read's retry holds the write locks of the shards it reads, so writers of this
    process wait for it. A read-only handle's store is not equal to the writers' (their
    flags differ): it held them in a table of its own, and writers in other threads
    rewrote the shard under every try until the read failed ("rewritten while it was
    read, 5 times")."""
    from aiozarr.engine.located_index import writers_kept_out
    from aiozarr.selection.indexing import basic_indexer

    aiozarr.create_array(LocalStore(tmp_path), data=np.arange(8), chunks=(2,), shards=(4,))
    reader = await aiozarr.open_array_async(str(tmp_path), mode="r")
    writer = await aiozarr.open_array_async(str(tmp_path), mode="r+")
    projections = list(basic_indexer((slice(0, 4),), (8,), (2,)))
    async with writers_kept_out([(reader.stored, projections)], retry=True):
        write = asyncio.create_task(writer.setitem(slice(0, 4), np.zeros(4, dtype="i8")))
        locks = writer.store.runtime.locks
        while not write.done() and not locks.waiting("c/0"):
            await asyncio.sleep(0.001)
        assert not write.done()  # it waits for the read
    await write
