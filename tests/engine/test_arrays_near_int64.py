"""Arrays near the ends of float64 and int64 precision, end to end: grids counted in exact
integers past 2**53, slices reaching the last chunk of an axis of 2**63 - 1 elements.
Only fill values and a few chunks are ever stored: nothing here costs per chunk."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import numpy as np
import pytest

import aiozarr
from aiozarr.engine.plan import inner_grid_shape
from aiozarr.nodes.shape_changes import outside_objects, resized
from aiozarr.storage.backends.memory import MemoryStore

BIG = 2**53 + 1  # the first integer a float64 cannot hold


def test_a_shrink_past_2_to_the_53_keeps_the_object_holding_its_last_element() -> None:
    arr = aiozarr.create_array(
        MemoryStore(), "a", shape=(2**53 + 2**39,), chunks=(2**40,), dtype="u1", fill_value=0
    )
    meta, outside = resized(arr.metadata, (BIG,), "a")
    assert meta.shape == (BIG,)
    assert outside == []  # object 2**13 holds element 2**53: a float ceiling deleted it


def test_the_grid_described_past_2_to_the_53_is_exact() -> None:
    n = 2**62 + 5
    arr = aiozarr.create_array(
        MemoryStore(), "a", shape=(n,), chunks=(2,), shards=(8,), dtype="u1", fill_value=0
    )
    assert arr.description.grid == (n // 8 + 1,)


def test_the_last_shard_past_2_to_the_53_reads_what_was_written() -> None:
    arr = aiozarr.create_array(
        MemoryStore(), "a", shape=(BIG,), chunks=(1,), shards=(2,), dtype="i2", fill_value=0
    )
    arr[BIG - 3 :] = [1, 2, 3]
    assert arr[BIG - 1] == 3
    assert arr[BIG - 3 :].tolist() == [1, 2, 3]


def test_a_rectilinear_grid_grown_past_2_to_the_53_covers_the_array() -> None:
    arr = aiozarr.create_array(
        MemoryStore(), "a", shape=(8,), chunks=[[3, 5]], dtype="i2", fill_value=0
    )
    arr[:] = np.arange(8)
    arr.resize((8 + 5 * 2**53 + 1,))
    assert arr.metadata.chunk_grid is not None
    assert arr.metadata.chunk_grid.axes[0].extent >= arr.shape[0]
    assert arr[:2].tolist() == [0, 1]
    assert arr[-1] == 0


@pytest.mark.parametrize(
    "key", [slice(-60, None), slice(-60, None, 3), slice(-30, None, 29), slice(None, -61, -1)]
)
def test_slices_write_and_read_the_last_chunk_of_an_int64_axis(key: slice) -> None:
    n = 2**63 - 1
    arr = aiozarr.create_array(MemoryStore(), "a", shape=(n,), chunks=(3,), dtype="i2")
    tail = np.arange(1, 61, dtype="i2")
    arr[n - 60 :] = tail
    assert arr[n - 1] == 60  # the slice write reached the last chunk
    model = {n - 60 + i: int(v) for i, v in enumerate(tail)}
    assert arr[key].tolist() == [model.get(i, 0) for i in range(n)[key]]


def test_the_inner_chunk_grid_past_2_to_the_53_is_exact() -> None:
    arr = aiozarr.create_array(
        MemoryStore(), "a", shape=(BIG,), chunks=(1,), shards=(2,), dtype="i2", fill_value=0
    )
    stored = arr._async.stored
    assert inner_grid_shape(stored.meta, stored.layout) == (BIG,)


def _peak_bytes(compute: Callable[[], object]) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = compute()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("sharded", [False, True])
def test_chunk_counts_and_blocks_cost_nothing_per_chunk(sharded: bool) -> None:
    n = 2**22  # a tuple of every chunk's length would take tens of MiB
    layout = {"chunks": (1,), "shards": (4,)} if sharded else {"chunks": (1,)}
    arr = aiozarr.create_array(MemoryStore(), "a", shape=(n,), dtype="u1", fill_value=3, **layout)
    count, peak = _peak_bytes(lambda: arr.nchunks)
    assert count == n and peak < 2**20
    info, peak = _peak_bytes(lambda: str(arr.info))
    assert f"{n}" in str(info) and peak < 2**20
    blocks = n // 4 if sharded else n
    last, peak = _peak_bytes(lambda: arr.blocks[-1])
    assert last.tolist() == [3] * (n // blocks) and peak < 2**20  # type: ignore[attr-defined]
    assert arr.blocks[blocks // 2 : blocks // 2 + 2].shape == (2 * n // blocks,)


def test_blocks_of_an_array_of_2_to_the_40_elements() -> None:
    arr = aiozarr.create_array(
        MemoryStore(), "a", shape=(2**40 + 1,), chunks=(2,), dtype="u1", fill_value=3
    )
    assert arr.nchunks == 2**39 + 1
    assert arr.blocks[-1].tolist() == [3]
    assert arr.blocks[2**38].shape == (2,)
    with pytest.raises(IndexError):
        arr.blocks[2**39 + 1]


@pytest.mark.parametrize(
    ("old", "new"), [((4, 3), (2, 3)), ((4, 3), (4, 1)), ((5, 4, 3), (2, 4, 1)), ((3, 3), (0, 2))]
)
def test_the_objects_a_shrink_drops_are_those_outside_the_new_grid(
    old: tuple[int, ...], new: tuple[int, ...]
) -> None:
    every = [c for c in np.ndindex(*old) if any(i >= n for i, n in zip(c, new, strict=True))]
    assert outside_objects(old, new) == every


@pytest.mark.timeout(10)
def test_a_shrink_enumerates_only_the_slabs_it_cuts() -> None:
    arr = aiozarr.create_array(
        MemoryStore(), "a", shape=(2**40, 4), chunks=(1, 1), dtype="u1", fill_value=0
    )
    meta, outside = resized(arr.metadata, (2**40 - 1, 4), "a")
    assert meta.shape == (2**40 - 1, 4)
    assert outside == [(2**40 - 1, j) for j in range(4)]
