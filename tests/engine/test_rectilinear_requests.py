"""Request counts on rectilinear grids: a selection touching k chunks costs exactly k GETs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.memory import MemoryStore

SHAPE = (30, 20)
EDGES = [[1, 2, 3, 4, 5, 6, 9], [7, 1, 1, 1, 10]]  # axis 0 overflows by 0, axis 1 by 0
DATA = np.arange(600, dtype="<f4").reshape(SHAPE)


def touched(selection: tuple[Any, ...]) -> int:
    """How many chunks `selection` touches, from the edges alone (not from the indexer)."""
    count = 1
    for key, edges, size in zip(selection, EDGES, SHAPE, strict=True):
        index = np.arange(size)[key] if isinstance(key, slice) else np.atleast_1d(key)
        ends = np.cumsum(edges)
        count *= len(set(np.searchsorted(ends, index % size, side="right").tolist()))
    return count


async def make(counting: CountingStore, **options: Any) -> aiozarr.AsyncArray:
    arr = await aiozarr.create_array_async(
        counting, "r", shape=SHAPE, dtype="<f4", chunks=EDGES, **options
    )
    await arr.setitem(..., DATA)
    counting.reset()
    return arr


SELECTIONS = [
    (0, 0),  # one element: one chunk
    (29, 19),
    (slice(2, 4), slice(6, 9)),  # two rows of chunks x three columns
    (slice(None, None, 7), 8),  # steps that skip the small chunks
    (slice(25, 5, -3), slice(0, 7)),
    (np.array([0, 29, 3, 3, 14]), np.array([9, 8])),
    (slice(None), slice(None)),
]


@pytest.mark.parametrize("selection", SELECTIONS, ids=repr)
async def test_reading_k_chunks_costs_k_requests(selection: tuple[Any, ...]) -> None:
    counting = CountingStore(MemoryStore())
    arr = await make(counting)
    k = touched(selection)
    values = await arr.get_orthogonal_selection(selection)
    index = np.ix_(
        *(
            np.arange(n)[s] if isinstance(s, slice) else np.atleast_1d(s)
            for s, n in zip(selection, SHAPE, strict=True)
        )
    )
    np.testing.assert_array_equal(np.reshape(values, -1), DATA[index].reshape(-1))
    assert counting.counts["get"] == k
    assert counting.counts["get_partial_values"] <= 1  # all of them in one batch
    if k > 1:
        assert len(counting.batches) == 1 and len(counting.batches[0]) == k


async def test_missing_chunks_cost_one_request_each_and_nothing_more() -> None:
    counting = CountingStore(MemoryStore())
    arr = await aiozarr.create_array_async(
        counting, "r", shape=SHAPE, dtype="<f4", chunks=EDGES, fill_value=2.5
    )
    await arr.setitem((slice(0, 1), slice(0, 7)), 1.0)  # only chunk (0, 0)
    counting.reset()
    values = await arr.getitem((slice(0, 6), slice(0, 9)))  # 3 x 3 chunks, 8 missing
    assert counting.counts["get"] == 9
    assert (values[0, :7] == 1.0).all() and (values[1:] == 2.5).all()


async def test_writing_whole_chunks_reads_nothing() -> None:
    counting = CountingStore(MemoryStore())
    arr = await make(counting)
    await arr.setitem((slice(3, 10), slice(7, 10)), 0.5)  # chunks 2..3 x 1..3, all whole
    assert counting.counts.get("get", 0) == 0
    assert counting.counts["set"] == 2 * 3
    counting.reset()
    await arr.setitem((slice(4, 12), 0), 0.25)  # partial: chunks 2, 3, 4 of column 0
    assert counting.counts["get"] == 3 and counting.counts["set"] == 3


async def test_sharded_rectilinear_request_counts() -> None:
    counting = CountingStore(MemoryStore())
    shards = [[6, 12, 12], [10, 10]]
    arr = await aiozarr.create_array_async(
        counting, "s", shape=SHAPE, dtype="<f4", chunks=(2, 5), shards=shards
    )
    await arr.setitem(..., DATA)
    arr = await aiozarr.open_array_async(counting, "s")
    counting.reset()
    assert await arr.getitem((20, 13)) == DATA[20, 13]
    assert counting.counts["get"] == 2  # the index of shard (2, 1), then one inner chunk
    counting.reset()
    assert await arr.getitem((21, 19)) == DATA[21, 19]
    assert counting.counts["get"] == 1  # index cached
    counting.reset()
    np.testing.assert_array_equal(await arr.getitem((slice(6, 30), slice(0, 10))), DATA[6:, :10])
    assert counting.counts["get"] == 2  # shards (1, 0) and (2, 0), whole: one GET each
    assert all(r.byte_range is None for r in counting.batches[0])
    assert math.prod(arr.metadata.chunk_grid.grid_shape) == 6  # type: ignore[union-attr]
