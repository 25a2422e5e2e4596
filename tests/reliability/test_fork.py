"""A forked child (os.fork, multiprocessing's 'fork' start method) can use aiozarr at once,
whatever the parent did before: sync calls (the child needs its own event loop thread),
a thread holding every request slot of a store, or a write lock, or the budget's or the
statistics' own locks.

Each child runs with a deadline: a hang kills it and fails the test instead of hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.forking import CHILD_DEADLINE_S, run_in_fork, wait_for_child
from tests.held_in_a_thread import HeldInAThread

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.protocol import Store

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform"),
    pytest.mark.timeout(120),
]

VALUES = np.arange(12, dtype="i4")
WRITTEN = np.where(VALUES < 4, -1, VALUES)  # after the child's write of arr[:4] = -1


def _reads_and_writes(url: str, options: dict[str, Any] | None, inherited: Any) -> None:
    """The child's work: read through the parent's Array, open anew, write and read back."""
    np.testing.assert_array_equal(inherited[...], VALUES)
    arr = aiozarr.open_array(url, mode="r+", storage_options=options)
    np.testing.assert_array_equal(arr[...], VALUES)
    arr[:4] = -1  # a write takes the chunk's write lock and budget slots
    np.testing.assert_array_equal(arr[:6], [-1, -1, -1, -1, 4, 5])


@pytest.fixture
def local_array(tmp_path: Path) -> Iterator[tuple[str, aiozarr.Array]]:
    """A LocalStore array the parent wrote and read with the sync API before forking."""
    url = str(tmp_path / "a.zarr")
    arr = aiozarr.create_array(url, shape=(12,), dtype="i4", chunks=(4,))
    arr[...] = VALUES
    np.testing.assert_array_equal(arr[...], VALUES)
    yield url, arr


def test_os_fork_child_reads_after_parent_sync_calls(local_array) -> None:
    url, arr = local_array
    run_in_fork(lambda: _reads_and_writes(url, None, arr))
    np.testing.assert_array_equal(arr[...], WRITTEN)  # and the parent's loop still serves


def _mp_child(url: str, arr: aiozarr.Array) -> None:
    _reads_and_writes(url, None, arr)


def test_multiprocessing_fork_child_reads_after_parent_sync_calls(local_array) -> None:
    url, arr = local_array
    process = multiprocessing.get_context("fork").Process(target=_mp_child, args=(url, arr))
    process.start()
    process.join(CHILD_DEADLINE_S)
    if process.is_alive():
        process.kill()
        process.join()
        pytest.fail(f"the 'fork' child hung: no exit within {CHILD_DEADLINE_S} s")
    assert process.exitcode == 0
    np.testing.assert_array_equal(arr[...], WRITTEN)


@contextlib.asynccontextmanager
async def _slots_and_locks(store: Store, keys: list[str]) -> AsyncIterator[None]:
    """Every request slot of `store` and the write locks of `keys`, held."""
    budget = store.budget
    taken = [await budget.acquire() for _ in range(budget.limit)]
    try:
        async with store.runtime.locks.hold(keys):
            yield
    finally:
        for _ in taken:
            budget.release()


def test_child_is_not_blocked_by_slots_and_write_locks_a_parent_thread_holds(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path / "a.zarr", max_concurrency=4)
    arr = aiozarr.create_array(store, shape=(12,), dtype="i4", chunks=(4,))
    arr[...] = VALUES

    def child() -> None:
        np.testing.assert_array_equal(arr[...], VALUES)
        arr[:4] = -1  # needs c/0's write lock, which the parent's thread holds
        assert arr[:4].tolist() == [-1] * 4
        assert store.budget.inflight == 0  # the parent's requests are not the child's

    with HeldInAThread(lambda: _slots_and_locks(store, ["c/0", "c/1", "c/2"])):
        assert store.budget.inflight == 4
        run_in_fork(child)
    assert store.budget.inflight == 0
    np.testing.assert_array_equal(arr[...], WRITTEN)


def test_child_is_not_blocked_by_a_budget_lock_held_at_fork_time(tmp_path: Path) -> None:
    # A fork lands at any moment of a threaded program: here while the budget's, the
    # write-lock table's and the statistics' own (threading) locks are held, as during a
    # request's start or end.
    store = LocalStore(tmp_path / "a.zarr")
    arr = aiozarr.create_array(store, shape=(12,), dtype="i4", chunks=(4,))
    arr[...] = VALUES
    statistics = store.runtime.statistics
    with (
        store.budget._lock,
        store.runtime.locks._lock,
        statistics._lock,
        statistics.latencies._lock,
    ):
        run_in_fork(lambda: _reads_and_writes(str(tmp_path / "a.zarr"), None, arr))
    np.testing.assert_array_equal(arr[...], WRITTEN)


def test_child_builds_its_own_obstore_client(emulator: Emulator) -> None:
    url, options = emulator.s3_url("fork-client.zarr"), emulator.storage_options()
    parent_client = from_url(url, storage_options=options).obstore

    def child() -> None:
        assert from_url(url, storage_options=options).obstore is not parent_client

    run_in_fork(child)


def test_os_fork_child_of_an_s3_user_fails_at_once_naming_spawn(emulator: Emulator) -> None:
    """obstore 0.12's runtime does not survive fork: once the parent made a request, every
    obstore request of a forked child hangs, with a fresh client too. The child gets a
    named error within seconds instead of a hang until the request timeout."""
    url, options = emulator.s3_url("fork.zarr"), emulator.storage_options()
    arr = aiozarr.create_array(url, shape=(12,), dtype="i4", chunks=(4,), storage_options=options)
    arr[...] = VALUES

    def child() -> None:
        with pytest.raises(aiozarr.errors.StoreError, match="spawn"):
            aiozarr.open_array(url, storage_options=options)[...]

    run_in_fork(child, deadline=10)


def test_child_does_not_keep_a_directory_lock_a_parent_thread_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flock belongs to the open file description, which a child shares: a child forked
    while a parent thread held one must not keep the directory locked while it lives."""
    import fcntl

    store = LocalStore(tmp_path / "a.zarr")
    asyncio.run(store.set("k", b"old"))  # the directory exists
    holding, fork_done = threading.Event(), threading.Event()
    real_replace = os.replace

    def replace_when_forked(src: Any, dst: Any) -> None:  # runs under the directory lock
        holding.set()
        assert fork_done.wait(10)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_when_forked)
    writer = threading.Thread(target=asyncio.run, args=(store.set_if("new", b"v", None),))
    writer.start()
    assert holding.wait(10)
    go_read, go_write = os.pipe()
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child lives on, using nothing, until the parent has checked
        os.write(ready_write, b"x")  # its at-fork hooks have run
        os.read(go_read, 1)
        os._exit(0)
    try:
        assert os.read(ready_read, 1) == b"x"
        fork_done.set()
        writer.join(10)
        fd = os.open(tmp_path / "a.zarr", os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free again: nobody keeps it
        finally:
            os.close(fd)
    finally:
        os.write(go_write, b"x")
        wait_for_child(pid)
        for fd in (go_read, go_write, ready_read, ready_write):
            os.close(fd)


def test_child_is_not_blocked_by_cache_config_or_loop_locks_held_at_fork_time(
    tmp_path: Path,
) -> None:
    """The shard-index cache's lock (taken by every sharded read on the loop thread),
    the chunk cache's, the settings' and the sync facade's own (a child's first call
    starts a loop) were inherited held by a fork landing at such a moment: the child
    hung on its first read."""
    from aiozarr import config
    from aiozarr.engine.chunk_cache import ChunkCache
    from aiozarr.sync import portal

    url = str(tmp_path / "s.zarr")
    arr = aiozarr.create_array(url, shape=(12,), dtype="i4", chunks=(2,), shards=(4,))
    arr[...] = VALUES
    cached = aiozarr.open_array(url, cache_bytes=1 << 20)
    np.testing.assert_array_equal(cached[...], VALUES)
    pool = ChunkCache.shared(1 << 20)

    def child() -> None:
        with config.set(coalesce_gap_bytes=1):
            np.testing.assert_array_equal(arr[...], VALUES)
        np.testing.assert_array_equal(cached[...], VALUES)

    with (
        arr.async_array._stored.index_cache._lock,
        pool._lock,
        pool._lru._lock,
        ChunkCache._pools_lock,
        config._base_lock,
        portal._lock,
    ):
        run_in_fork(child)


def test_child_is_not_blocked_by_a_memory_store_write_held_at_fork_time() -> None:
    """A MemoryStore's write lock (shared by the stores over one dict), held by a parent
    thread's write as the fork landed, was inherited held: the child's first write to
    its copy of the values hung."""
    from aiozarr.storage.backends.memory import MemoryStore

    store = MemoryStore()
    arr = aiozarr.create_array(store, shape=(12,), dtype="i4", chunks=(4,))
    arr[...] = VALUES

    def child() -> None:
        arr[:4] = -1
        np.testing.assert_array_equal(arr[...], WRITTEN)

    with store._lock:
        run_in_fork(child)
    np.testing.assert_array_equal(arr[...], VALUES)  # the child's write was its own
