"""Reads of in-memory values done on the calling thread: same values, no task, no hop."""

from __future__ import annotations

import threading

import numpy as np
import pytest

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
