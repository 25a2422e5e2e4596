"""`copy` and `migrate` of a sparse array cost what it stores, not its grid: the stored
objects are found from one listing (their keys parsed with the array's chunk key
encoding) and only the destination objects they overlap are read and written; the rest
are counted as left out (all fill value). An unlistable source still walks the grid."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import aiozarr
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.tools.copying import CopyProgress, copy
from aiozarr.tools.migration import migrate


def _sparse(store: CountingStore, n: int, **layout: object) -> aiozarr.Array:
    arr = aiozarr.create_array(store, "a", shape=(n,), dtype="i2", fill_value=-1, **layout)
    arr[5] = 7
    arr[n - 1] = 9
    return arr


def test_a_copy_reads_only_the_objects_the_source_stores() -> None:
    src = CountingStore(MemoryStore())
    _sparse(src, 2**12, chunks=(1,))
    src.reset()
    seen: list[CopyProgress] = []
    report = copy(src, dst := MemoryStore(), src_path="a", dst_path="b", progress=seen.append)
    assert src.counts["get"] <= 4  # the metadata and the 2 stored chunks, not 4,096 chunks
    assert (report.chunks_written, report.chunks_empty) == (2, 2**12 - 2)
    assert report.bytes_copied == 2**12 * 2
    assert (seen[-1].chunks_done, seen[-1].chunks_total) == (2**12, 2**12)
    out = aiozarr.open_array(dst, "b")
    assert out[5] == 7 and out[-1] == 9 and out[6] == -1


@pytest.mark.parametrize(
    ("src_layout", "dst_options"),
    [
        ({"chunks": (3,)}, {"chunks": (2,)}),
        ({"chunks": (2,), "shards": (8,)}, {"chunks": (5,), "shards": False}),
        ({"chunks": [[4, 1, 7, 20]]}, {"chunks": (3,), "shards": (6,)}),
    ],
    ids=["rechunked", "unsharded", "rectilinear-to-sharded"],
)
def test_a_rechunking_copy_of_a_sparse_array_keeps_every_value(
    src_layout: dict[str, object], dst_options: dict[str, object]
) -> None:
    src = CountingStore(MemoryStore())
    arr = _sparse(src, 32, **src_layout)
    arr[12:14] = [3, 4]
    dst = MemoryStore()
    copy(src, dst, src_path="a", dst_path="b", **dst_options)
    np.testing.assert_array_equal(aiozarr.open_array(dst, "b")[...], arr[...])


def test_a_migration_lists_the_stored_chunks_instead_of_walking_the_grid() -> None:
    src = CountingStore(MemoryStore())
    _sparse(src, 2**20, chunks=(1,), zarr_format=2)
    tracemalloc.start()
    try:
        out = migrate(src, MemoryStore(), src_path="a", dst_path="b")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20  # a tuple per grid position would take about 100 MiB
    assert out[5] == 7 and out[-1] == 9 and out[6] == -1
    assert out.nchunks_initialized == 2
