"""Grids and slices near the ends of int64: chunk counts in exact integers (a float ceiling
is one short past 2**53), slices whose arithmetic would wrap near 2**63, and strided
slices that cost what they return, not the chunks they span."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import aiozarr
from aiozarr.selection.chunk_grid import AxisEdges
from aiozarr.selection.indexing import axis_grids, basic_indexer, orthogonal_indexer
from aiozarr.sizes import ceil_div
from aiozarr.storage import MemoryStore

BIG = 2**53 + 1  # the first integer a float64 cannot hold


def test_ceil_div_is_exact_past_2_to_the_53() -> None:
    assert ceil_div(BIG, 1) == BIG
    assert ceil_div(2**53 + 2**39 + 1, 2**40) == 2**13 + 1
    assert ceil_div(2**63 - 1, 3) == 3074457345618258603
    assert (ceil_div(0, 5), ceil_div(5, 5), ceil_div(6, 5)) == (0, 1, 2)


def test_a_regular_axis_past_2_to_the_53_has_every_edge() -> None:
    assert AxisEdges.regular(1, BIG).nchunks == BIG
    assert AxisEdges.regular(2, 2 * BIG - 1).extent == 2 * BIG


def test_a_grown_rectilinear_axis_covers_its_new_extent() -> None:
    extent = 8 + 5 * 2**53 + 1
    grown = AxisEdges(((3, 1), (5, 1))).grown(extent)
    assert grown.extent >= extent
    assert grown.runs == ((3, 1), (5, 2**53 + 2))


def test_too_short_edges_are_described_by_their_runs() -> None:
    edges = AxisEdges(((1, 10**6),))  # one run; expanded, a message of 3 MB
    with pytest.raises(ValueError, match=r"chunk edges \(1 x 1000000\) cover") as info:
        axis_grids([10**6 + 1], [edges])
    assert len(str(info.value)) < 200


def read_values(indexer: object, n: int, chunk: int, values: dict[int, int]) -> np.ndarray:
    """Read through the projections from a sparse model of an axis of `n` elements in
    chunks of `chunk` (`values`: element -> value, every other element 0)."""
    out = np.full(indexer.shape, -1, dtype=np.int64)  # type: ignore[attr-defined]
    for p in indexer:  # type: ignore[attr-defined]
        (k,) = p.chunk_coords
        origin = k * chunk
        block = np.array([values.get(origin + i, 0) for i in range(min(chunk, n - origin))])
        out[p.out_selection] = block[p.chunk_selection]
    return out


@pytest.mark.parametrize("n", [2**63 - 1, 2**63 - 2, 2**62 + 1])
@pytest.mark.parametrize("chunk", [1, 3, 7])
@pytest.mark.parametrize(
    "key",
    [slice(-60, None), slice(-30, None, 29), slice(-60, None, 3), slice(None, -61, -7)],
    ids=["tail", "step29", "step3", "reverse"],
)
def test_slices_at_the_end_of_int64_reach_the_last_chunk(n: int, chunk: int, key: slice) -> None:
    values = {n - 60 + i: i + 1 for i in range(60)}
    expected = [values.get(i, 0) for i in range(n)[key]]
    indexer = basic_indexer((key,), (n,), (chunk,))
    assert read_values(indexer, n, chunk, values).tolist() == expected


@pytest.mark.parametrize("key", [slice(None, None, 2**61), slice(None, None, -(2**61))])
def test_a_step_past_the_chunk_costs_the_elements_not_the_chunks(key: slice) -> None:
    indexer = basic_indexer((key,), (2**62,), (1,))
    assert indexer.shape == (2,)
    assert sorted(p.chunk_coords for p in indexer) == sorted((i,) for i in range(2**62)[key])


def test_a_strided_slice_over_many_chunks_allocates_per_element() -> None:
    tracemalloc.start()
    try:
        indexer = basic_indexer((slice(5, None, 2**23),), (2**26,), (1,))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [p.chunk_coords for p in indexer] == [(5 + i * 2**23,) for i in range(8)]
    assert peak < 2**20  # one int64 per chunk spanned would be 512 MiB


def test_a_strided_slice_on_a_rectilinear_axis_takes_the_chunks_of_its_elements() -> None:
    edges = AxisEdges(((3, 2**40), (5, 2**40)))
    indexer = basic_indexer((slice(1, None, 2**41),), (edges.extent,), [edges])
    starts = [1 + i * 2**41 for i in range(len(range(1, edges.extent, 2**41)))]
    assert [p.chunk_coords for p in indexer] == [(int(edges.chunk_of(s)),) for s in starts]


@pytest.mark.parametrize(
    "key",
    [
        (slice(None), slice(3, None)),
        (slice(None), []),
        (slice(None), np.zeros(3, dtype=bool)),
        (slice(2, None, 3), slice(0, 0)),
    ],
)
def test_an_empty_selection_across_2_to_the_44_chunks_plans_none(key: object) -> None:
    # One axis selects nothing: the slice across 2**44 chunks on the other is not resolved
    # (its chunk list alone would be 128 TiB: numpy's MemoryError, or a hang).
    arr = aiozarr.create_array(MemoryStore(), shape=(2**44, 3), chunks=(1, 2), dtype="i1")
    assert orthogonal_indexer(key, arr.shape, (1, 2)).nchunks == 0
    rows = len(range(*key[0].indices(2**44)))
    assert arr[key].shape == arr.oindex[key].shape == (rows, 0)
    arr[key] = 5
    arr.oindex[key] = np.zeros((rows, 0), dtype="i1")
    assert arr.nchunks_initialized == 0
