"""A sync call made inside `aiozarr.batch()` (a notebook's autoawait cell, a service
handler) reads on its own, at once: it never joins the caller's batch from aiozarr's
loop. And a gathering (a batch's window, `read_many`'s collector) is never joined from
an event loop other than its own: such a read reads alone.

Each wait is bounded (`sync_timeout_s`, a thread joined with a timeout), so the code
before the fix fails instead of hanging."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr import config, sync
from aiozarr.engine import entry as engine
from aiozarr.engine import gathering
from aiozarr.storage.backends.local import LocalStore

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _hang_guard() -> Iterator[None]:
    with config.set(sync_timeout_s=5):
        yield


@pytest.fixture
def arr(tmp_path: Path) -> aiozarr.Array:
    a = aiozarr.create_array(
        LocalStore(tmp_path / "a.zarr"), shape=(40,), dtype="i4", chunks=(4,), shards=(20,)
    )
    a[...] = np.arange(40, dtype="i4")
    return a


def test_a_sync_read_inside_a_batch_reads_at_once(arr: aiozarr.Array) -> None:
    async def cell() -> None:
        async with aiozarr.batch():
            task = asyncio.create_task(arr.async_array.getitem(slice(0, 2)))
            await asyncio.sleep(0)  # the task's read has opened the batch's window
            assert arr[1:3].tolist() == [1, 2]  # the sync call, on this loop's thread
            assert (await task).tolist() == [0, 1]

    asyncio.run(cell())


def test_a_sync_read_from_a_thread_inside_a_shared_batch(arr: aiozarr.Array) -> None:
    async def cell() -> None:
        async with aiozarr.batch(shared=True):
            # the thread's context (and the batch in it) is the task's
            a, b = await asyncio.gather(
                arr.async_array.getitem(slice(0, 2)), asyncio.to_thread(lambda: arr[5:7])
            )
        assert a.tolist() == [0, 1] and b.tolist() == [5, 6]

    for _ in range(5):
        asyncio.run(cell())


def _read_on_another_loop(
    arr: aiozarr.Array, gathering: engine.Collector | engine.Window
) -> tuple[threading.Thread, list[np.ndarray]]:
    """A thread reading `arr[8:10]` on an event loop of its own, `gathering` in force."""
    got: list[np.ndarray] = []

    async def read() -> None:
        with engine.gather(gathering):
            got.append(await arr.async_array.getitem(slice(8, 10)))

    thread = threading.Thread(target=asyncio.run, args=(read(),), daemon=True)
    thread.start()
    return thread, got


def test_an_open_window_of_another_loop_is_not_joined(arr: aiozarr.Array) -> None:
    async def owner() -> None:
        window = engine.Window()
        with engine.gather(window):
            task = asyncio.create_task(arr.async_array.getitem(slice(0, 2)))
        await asyncio.sleep(0)  # the task's read has opened the window, on this loop
        thread, got = _read_on_another_loop(arr, window)
        thread.join(timeout=5)  # this loop is blocked meanwhile: its window cannot close
        assert not thread.is_alive(), "the other loop's read waited for this loop's window"
        assert got[0].tolist() == [8, 9]
        assert (await task).tolist() == [0, 1]

    asyncio.run(owner())


def test_a_collector_of_another_loop_is_not_joined(arr: aiozarr.Array) -> None:
    async def owner() -> None:
        collector = engine.Collector(2)  # read_many's, waiting for reads of this loop
        thread, got = _read_on_another_loop(arr, collector)
        thread.join(timeout=5)
        assert not thread.is_alive(), "the other loop's read waited for this loop's collector"
        assert got[0].tolist() == [8, 9]
        assert collector.entries == []

    asyncio.run(owner())


def test_a_sync_call_runs_outside_the_callers_batch() -> None:
    async def probe() -> object:
        return gathering.gathering()

    async def cell() -> None:
        async with aiozarr.batch():
            assert gathering.gathering() is not None
            assert sync.run(probe) is None  # the call's coroutine, on aiozarr's loop

    asyncio.run(cell())
