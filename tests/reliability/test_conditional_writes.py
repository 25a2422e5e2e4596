"""Writers that share no lock (other store objects, other processes) lose no update.

Writer p writes, in round r, the element [p, r] of a (2, ROUNDS) array stored as ONE
shard: every write is a read-modify-write of the same shard. An update lost to
another writer is an element that does not hold its round number. The store's
conditional writes (If-Match / If-None-Match, a directory flock on local disk) make
the second writer of a round re-read and merge again.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.reliability.locations import StoreFactory

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.protocol import Store

pytestmark = pytest.mark.timeout(180)

ROUNDS = 40
WRITERS = 2


def _lost(arr: aiozarr.Array) -> int:
    got = arr[...]
    expected = np.tile(np.arange(1, ROUNDS + 1, dtype="i4"), (WRITERS, 1))
    return int(np.sum(got != expected))


async def _writer(store: Store, row: int) -> None:
    arr = await aiozarr.open_array_async(store, mode="r+")
    for r in range(ROUNDS):
        await arr.setitem((row, r), r + 1)


@pytest.mark.parametrize("make_store", ["memory", "local", "s3", "moto"], indirect=True)
def test_store_objects_sharing_no_lock_lose_no_update(make_store: StoreFactory) -> None:
    """Each writer has its own store object over the location, sharing no write lock."""
    aiozarr.create_array(
        make_store(), shape=(WRITERS, ROUNDS), dtype="i4", chunks=(1, 4), shards=(WRITERS, ROUNDS)
    )

    stores = [make_store(own_locks=True) for _ in range(WRITERS)]
    assert stores[0].runtime.locks is not stores[1].runtime.locks  # the premise

    async def main() -> None:
        await asyncio.gather(*(_writer(store, row) for row, store in enumerate(stores)))

    asyncio.run(main())
    assert _lost(aiozarr.open_array(make_store(), mode="r")) == 0


def _process_writer(kind: str, where: str, options: dict[str, Any], row: int, start: Any) -> None:
    store = LocalStore(where) if kind == "local" else from_url(where, storage_options=options)
    start.wait(60)  # both processes write at once
    asyncio.run(_writer(store, row))
    # obstore's runtime can abort a process at interpreter exit (SIGABRT, after the work
    # is done), as the CLI knows: leave without finalizers. A failed write raised above.
    os._exit(0)


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_two_processes_lose_no_update(kind: str, tmp_path: Path, emulator: Emulator) -> None:
    if kind == "local":
        where, options = str(tmp_path / "a.zarr"), {}
        store: Store = LocalStore(where)
    else:
        where, options = emulator.s3_url("two-processes.zarr"), emulator.storage_options()
        store = from_url(where, storage_options=options)
    aiozarr.create_array(
        store, shape=(WRITERS, ROUNDS), dtype="i4", chunks=(1, 4), shards=(WRITERS, ROUNDS)
    )
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(WRITERS)
    workers = [
        context.Process(target=_process_writer, args=(kind, where, options, row, start))
        for row in range(WRITERS)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    assert _lost(aiozarr.open_array(store, mode="r")) == 0


def test_a_write_over_a_value_read_is_conditional(tmp_path: Path) -> None:
    """Partial writes are one conditional PUT; whole-chunk writes stay unconditional."""
    counting = CountingStore(MemoryStore())
    arr = aiozarr.create_array(counting, shape=(8,), dtype="i4", chunks=(4,))
    calls: list[str] = []
    inner = counting.inner
    original_set, original_set_if = inner.set, inner.set_if

    async def set_(key: str, value: Any) -> None:
        calls.append(f"set {key}")
        await original_set(key, value)

    async def set_if(key: str, value: Any, expected: Any, *, claim: bool = False) -> None:
        calls.append(f"set_if {key} {'absent' if expected is None else 'version'}")
        await original_set_if(key, value, expected, claim=claim)

    inner.set, inner.set_if = set_, set_if  # type: ignore[method-assign]
    arr[0:4] = 1  # whole chunk: nothing read
    arr[5] = 2  # part of a missing chunk: only if still missing
    arr[1] = 3  # part of a stored chunk: only if still that version
    assert calls == ["set c/0", "set_if c/1 absent", "set_if c/0 version"]


def test_a_chunk_that_becomes_fill_is_deleted_on_a_condition(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    arr = aiozarr.create_array(store, shape=(8,), dtype="i4", chunks=(4,), fill_value=0)
    arr[1] = 5
    assert (tmp_path / "c" / "0").exists()
    arr[1] = 0  # the chunk is all fill again: removed, as without conditions
    assert not (tmp_path / "c" / "0").exists()


def test_without_conditional_deletes_a_fill_chunk_is_written(emulator: Emulator) -> None:
    """An object store cannot delete on a condition: a chunk read, merged and found all
    fill is written (as fill) on the condition instead, so no one's update is lost."""
    store = from_url(emulator.s3_url("fill.zarr"), storage_options=emulator.storage_options())
    assert store.supports_conditional_writes and not store.supports_conditional_deletes
    arr = aiozarr.create_array(store, shape=(8,), dtype="i4", chunks=(4,), fill_value=0)
    arr[1] = 5
    arr[1] = 0
    assert aiozarr.open_array(store, mode="r")[...].tolist() == [0] * 8
    assert asyncio.run(store.exists("c/0"))
    arr[0:4] = 0  # a whole-chunk write of fill needs no condition: deleted
    assert not asyncio.run(store.exists("c/0"))
