"""A sync call made on the thread of a running event loop (a Jupyter cell, a FastAPI
handler) blocks that loop while it runs: where it would wait for a write lock, a request
slot or budgeted bytes that a task of that same loop holds, it raises
`SyncDeadlockError` at once instead of hanging; where the holder's loop runs, it waits.

Each test holds the lock or budget as a task of the loop would (taken through the
store's runtime, so the interleaving is forced), and runs under `sync_timeout_s`, so
the code before the fix fails with a TimeoutError instead of hanging."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.errors import SyncDeadlockError
from aiozarr.storage.backends.local import LocalStore

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _hang_guard() -> Iterator[None]:
    with config.set(sync_timeout_s=10):
        yield


def _array(path: Path, **options: int) -> aiozarr.Array:
    store = LocalStore(path, **options)
    arr = aiozarr.create_array(store, shape=(16,), chunks=(4,), dtype="i4")
    arr[...] = np.arange(16, dtype="i4")
    return arr


def test_a_write_lock_held_by_a_task_of_the_loop(tmp_path: Path) -> None:
    arr = _array(tmp_path / "a.zarr")
    locks = arr.store.runtime.locks

    async def cell() -> None:
        await locks.acquire("c/0")  # a write of this loop, mid read-modify-write
        try:
            with pytest.raises(SyncDeadlockError, match=r"'c/0'.*await the async API"):
                arr[0:2] = -1  # the sync facade, on the loop's thread
        finally:
            locks.release("c/0")
        arr[0:2] = -1  # nothing held: it runs
        assert arr[0:4].tolist() == [-1, -1, 2, 3]

    asyncio.run(cell())


def test_every_request_slot_held_by_a_task_of_the_loop(tmp_path: Path) -> None:
    arr = _array(tmp_path / "a.zarr", max_concurrency=2)
    budget = arr.store.budget

    async def cell() -> None:
        slots = [await budget.acquire() for _ in range(budget.limit)]
        try:
            with pytest.raises(SyncDeadlockError, match="request slot"):
                arr[...]
        finally:
            for _ in slots:
                budget.release()
        assert arr[...].tolist() == list(range(16))

    asyncio.run(cell())


def test_the_byte_budget_held_by_a_task_of_the_loop(tmp_path: Path) -> None:
    arr = _array(tmp_path / "a.zarr")
    budget = arr.store.runtime.bytes

    async def cell() -> None:
        taken = await budget.acquire(budget.capacity)
        try:
            with pytest.raises(SyncDeadlockError, match="max_inflight_bytes"):
                arr[...]
        finally:
            budget.release(taken)
        assert arr[...].tolist() == list(range(16))

    asyncio.run(cell())


def test_a_lock_held_on_another_running_loop_is_waited_for(tmp_path: Path) -> None:
    arr = _array(tmp_path / "a.zarr")
    locks = arr.store.runtime.locks
    held = threading.Event()

    async def other_loop() -> None:
        await locks.acquire("c/0")
        held.set()
        deadline = asyncio.get_running_loop().time() + 10
        while not locks.waiting("c/0"):  # until the sync write waits behind it
            assert asyncio.get_running_loop().time() < deadline, "it never waited"
            await asyncio.sleep(0.001)
        locks.release("c/0")

    holder = threading.Thread(target=asyncio.run, args=(other_loop(),))
    holder.start()
    assert held.wait(10)

    async def cell() -> None:
        arr[0:2] = -1  # waits for the other loop's task, which runs: no error

    asyncio.run(cell())
    holder.join(10)
    assert arr[0:4].tolist() == [-1, -1, 2, 3]


def test_a_loop_blocked_by_another_threads_call_is_waited_for(tmp_path: Path) -> None:
    """Loop A's task holds a key, and A's thread makes a sync call that waits (on loop C,
    which runs). A plain thread writing that key waits for A's call to end and A to let
    go: A is blocked by its own call, not by the plain thread's, so no deadlock."""
    arr, other = _array(tmp_path / "a.zarr"), _array(tmp_path / "b.zarr")
    locks, other_locks = arr.store.runtime.locks, other.store.runtime.locks
    c_holds, a_holds, go_on = threading.Event(), threading.Event(), threading.Event()

    async def loop_c() -> None:  # holds `other`'s chunk until told
        await other_locks.acquire("c/0")
        c_holds.set()
        while not go_on.is_set():
            await asyncio.sleep(0.001)
        other_locks.release("c/0")

    async def loop_a() -> None:  # a notebook's loop: a task holds the key, then a sync call
        await locks.acquire("c/0")
        a_holds.set()
        other[0:2] = -1  # waits for loop C, which runs
        locks.release("c/0")

    threads = [threading.Thread(target=asyncio.run, args=(f(),)) for f in (loop_c, loop_a)]
    threads[0].start()
    assert c_holds.wait(10)
    threads[1].start()
    assert a_holds.wait(10)
    writer = threading.Thread(target=arr.__setitem__, args=(slice(0, 2), -5))
    writer.start()
    deadline = threading.Event()
    for _ in range(10_000):  # until the plain thread's write waits behind loop A's task
        if locks.waiting("c/0"):
            break
        deadline.wait(0.001)
    assert locks.waiting("c/0") == 1
    go_on.set()
    for thread in (*threads, writer):
        thread.join(10)
    assert arr[0:4].tolist() == [-5, -5, 2, 3] and other[0:2].tolist() == [-1, -1]
