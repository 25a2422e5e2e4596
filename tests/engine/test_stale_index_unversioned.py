"""A shard index read from a store that tells no version is never kept for a later read.

Nothing can show such an index stale (its answer and every later one carry no version):
another handle or process that adds a chunk moves the others in the shard, and a kept
index would hand a later read another chunk's bytes. So each read reads the index again
(`engine/located_index.py::remember_index`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.zarr_store import ZarrStore

zarr = pytest.importorskip("zarr")


def _two_handles(path: Path, compressed: bool) -> tuple[Any, Any]:
    """A shard of two inner chunks, only the second stored; a reader that has read it
    (its index seen) and a writer: two handles over a zarr-python store (no versions)."""
    store = zarr.storage.LocalStore(str(path))
    compressors = "auto" if compressed else None
    first = aiozarr.create_array(
        store, shape=(8,), shards=(8,), chunks=(4,), dtype="i4", fill_value=0,
        compressors=compressors, overwrite=True,
    )  # fmt: skip
    first[4:8] = [5, 6, 7, 8]
    reader = aiozarr.open_array(store)
    writer = aiozarr.open_array(store, mode="r+")
    assert reader[4:8].tolist() == [5, 6, 7, 8]
    return reader, writer


@pytest.mark.parametrize("compressed", [False, True])
def test_another_handles_write_is_read_through_a_fresh_index(
    tmp_path: Path, compressed: bool
) -> None:
    reader, writer = _two_handles(tmp_path, compressed)
    writer[0:4] = [1, 2, 3, 4]  # chunk 0 added: chunk 1 moves in the shard
    assert reader[4:8].tolist() == [5, 6, 7, 8]
    assert reader[...].tolist() == [1, 2, 3, 4, 5, 6, 7, 8]


def test_read_many_reads_a_fresh_index_too(tmp_path: Path) -> None:
    reader, writer = _two_handles(tmp_path, compressed=False)
    writer[0:4] = [1, 2, 3, 4]
    [values] = aiozarr.read_many([(reader, slice(4, 8))])
    assert values.tolist() == [5, 6, 7, 8]


def test_a_batch_of_reads_reads_a_fresh_index_too(tmp_path: Path) -> None:
    reader, writer = _two_handles(tmp_path, compressed=False)
    writer[0:4] = [1, 2, 3, 4]
    handle = reader.async_array

    async def both() -> tuple[Any, Any]:
        async with aiozarr.batch():
            late, early = await asyncio.gather(
                handle.getitem(slice(4, 8)), handle.getitem(slice(0, 4))
            )
        return late, early

    late, early = aiozarr.sync.run(both)
    assert late.tolist() == [5, 6, 7, 8]
    assert early.tolist() == [1, 2, 3, 4]


def test_each_read_of_an_unversioned_store_reads_the_index() -> None:
    """The cost of being right: an index request and a range request per read (a
    versioned store keeps the index: tests/engine/test_request_counts.py)."""
    held = zarr.storage.MemoryStore()
    values = np.arange(64, dtype="i4")
    aiozarr.create_array(ZarrStore(held), data=values, chunks=(8,), shards=(64,))
    counting = CountingStore(ZarrStore(held))
    arr = aiozarr.open_array(counting, mode="r")
    assert arr[3] == 3
    for i in (10, 20):
        counting.reset()
        assert arr[i] == i
        assert [key for _, key, _ in counting.requests] == ["c/0", "c/0"]
