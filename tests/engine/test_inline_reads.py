"""Reads of in-memory values done on the calling thread: same values, no task, no hop."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest
from tests.held_in_a_thread import HeldInAThread

import aiozarr
from aiozarr.engine import entry as engine
from aiozarr.engine import read as engine_read
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.memory import MemoryStore

SELECTIONS = [
    (5, 6),
    (slice(None), 3),
    (slice(3, 29), slice(7, 30)),
    (slice(None, None, 3), [1, 5, 30]),
    (...,),
]


@pytest.mark.parametrize("shards", [None, (16, 16)])
@pytest.mark.parametrize("selection", SELECTIONS, ids=repr)
def test_inline_reads_match_the_awaited_engine(shards, selection) -> None:
    data = np.arange(32 * 32, dtype="f4").reshape(32, 32)
    memory = MemoryStore()
    arr = aiozarr.create_array(
        memory, shape=(32, 32), dtype="f4", chunks=(4, 4), shards=shards, fill_value=-1
    )
    arr[:16] = data[:16]  # the lower half stays unwritten: fill value, missing shards
    expected = np.where(np.arange(32)[:, None] < 16, data, -1)
    done, value = arr.async_array.getitem_inline(selection)
    assert done
    assert np.array_equal(value, expected[selection if len(selection) > 1 else ...])
    # The same read through a store with requests takes the awaited path.
    counted = aiozarr.open_array(CountingStore(memory))
    assert counted.async_array.getitem_inline(selection) == (False, None)
    assert np.array_equal(counted[selection], value)


def test_sync_reads_from_memory_stay_on_the_calling_thread(monkeypatch) -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(64, 64), dtype="i4", chunks=(8, 8))
    arr[:] = 7
    threads = []
    real = engine.read_inline

    def spy(*args):  # records which thread decodes
        threads.append(threading.current_thread())
        return real(*args)

    monkeypatch.setattr(engine, "read_inline", spy)
    assert arr[3, 4] == 7
    assert threads == [threading.current_thread()]


def test_large_or_reported_reads_are_not_inline() -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(1024, 1024), dtype="f4", chunks=(256, 256))
    arr[:] = 1.0
    stored = arr.async_array.stored
    assert engine_read.reads_inline(stored, 1)  # 256 KiB: decoded on the calling thread
    assert not engine_read.reads_inline(stored, 16)  # 4 MiB: the codec pool's work
    assert arr.async_array.getitem_inline(...) == (False, None)
    calls = []
    arr.getitem((0, 0), progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 1)]  # progress is reported by the awaited engine


def test_memory_store_subclasses_that_change_reads_are_read_through_them() -> None:
    class Faulty(MemoryStore):
        async def read(self, key, byte_range, max_bytes):  # type: ignore[no-untyped-def]
            raise OSError(f"cannot read {key}")

    assert MemoryStore().reads_inline
    assert not Faulty().reads_inline


def test_a_store_that_does_not_read_inline_is_refused_before_planning() -> None:
    memory = MemoryStore()
    aiozarr.create_array(memory, shape=(8,), dtype="i4", chunks=(4,))
    counted = aiozarr.open_array(CountingStore(memory)).async_array

    def plan():  # type: ignore[no-untyped-def]
        raise AssertionError("planned a read that is not done inline")

    assert engine_read.read_inline(counted.stored, plan, str) is None


def _stale_reader() -> tuple[MemoryStore, aiozarr.Array]:
    """A reader whose cached index of shard c/0 another handle's write made stale."""
    memory = MemoryStore()
    writer = aiozarr.create_array(
        memory, shape=(8,), dtype="i4", chunks=(2,), shards=(4,), compressors=None
    )
    writer[...] = np.arange(8)
    reader = aiozarr.open_array(memory)
    assert reader[0:4].tolist() == [0, 1, 2, 3]  # its index of c/0 is cached
    writer[0:4] = [10, 11, 12, 13]  # through another handle: that index is stale now
    return memory, reader


def test_a_stale_inline_read_retries_with_writers_kept_out() -> None:
    """An inline read that meets a shard rewritten since its index was read tries again
    holding the shard's write lock, as the awaited read does, so writers of this process
    wait for it. It retried inline without it: 16 threads rewriting parts of one shard and
    8 reading it failed reads with "rewritten while it was read, 5 times in a row"."""
    memory, reader = _stale_reader()
    result: list[np.ndarray] = []

    def read() -> None:
        result.append(asyncio.run(reader.async_array.getitem(slice(0, 4))))

    locks = memory.runtime.locks  # a writer of this process mid-change of shard c/0
    with HeldInAThread(lambda: locks.hold(["c/0"])):
        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30  # a bound on a hang, far beyond any load
        while not locks.waiting("c/0") and thread.is_alive():
            assert time.monotonic() < deadline, "the read neither waited nor ended"
            time.sleep(0.001)
        assert thread.is_alive(), "the stale read's retry did not wait for the writer"
    thread.join(30)
    assert result[0].tolist() == [10, 11, 12, 13]


def test_a_stale_sync_read_is_retried_by_the_awaited_read() -> None:
    """The sync facade's inline read hands a stale try to the awaited read (whose retries
    keep writers out) rather than retrying on the calling thread, where it cannot wait."""
    _, reader = _stale_reader()
    assert reader.async_array.getitem_inline(slice(0, 4)) == (False, None)
    assert reader[0:4].tolist() == [10, 11, 12, 13]
