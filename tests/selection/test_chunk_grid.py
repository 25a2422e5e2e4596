"""Rectilinear grid geometry: runs, lookups against a plain cumulative sum, growth."""

from __future__ import annotations

import numpy as np
import pytest

from aiozarr.errors import MetadataError
from aiozarr.selection.chunk_grid import AxisEdges, RectilinearGrid
from aiozarr.selection.indexing import basic_indexer, orthogonal_indexer


def test_edges_are_held_as_runs_and_expand_back() -> None:
    axis = AxisEdges.of([1, 1, 1, 3, 3, 2])
    assert axis.runs == ((1, 3), (3, 2), (2, 1))
    assert axis.edges == (1, 1, 1, 3, 3, 2)
    assert (axis.nchunks, axis.extent, axis.max_edge, axis.step) == (6, 11, 3, None)
    assert AxisEdges(((4, 2), (4, 1))) == AxisEdges.of([4, 4, 4])  # neighbouring runs merge
    assert AxisEdges.of([4, 4, 4]).step == 4


def test_a_million_equal_edges_cost_one_run() -> None:
    axis = AxisEdges(((7, 10**6),))
    assert axis.runs == ((7, 10**6),) and axis.extent == 7 * 10**6
    assert int(axis.chunk_of(7 * 10**6 - 1)) == 10**6 - 1


@pytest.mark.parametrize("edges", [[5], [1, 2, 3], [4, 4, 1, 1, 1, 9, 2, 2]])
def test_lookups_match_the_cumulative_sum(edges: list[int]) -> None:
    axis = AxisEdges.of(edges)
    offsets = np.concatenate(([0], np.cumsum(edges)))
    index = np.arange(sum(edges))
    # The spec: the chunk is the first cumulative sum exceeding the index.
    expected = np.searchsorted(offsets[1:], index, side="right")
    np.testing.assert_array_equal(axis.chunk_of(index), expected)
    chunks = np.arange(len(edges))
    np.testing.assert_array_equal(axis.start_of(chunks), offsets[:-1])
    np.testing.assert_array_equal(axis.size_of(chunks), edges)
    assert int(axis.chunk_of(int(index[-1]))) == len(edges) - 1


def test_spec_example_index_resolution() -> None:
    grid = RectilinearGrid.from_edges([[16, 10], [24, 14]])
    coords = tuple(int(a.chunk_of(i)) for a, i in zip(grid.axes, (20, 15), strict=True))
    assert coords == (1, 0)
    inside = tuple(
        i - int(a.start_of(c)) for a, i, c in zip(grid.axes, (20, 15), coords, strict=True)
    )
    assert inside == (4, 15)
    assert grid.chunk_shape((0, 1)) == (16, 14)


def test_grid_shapes_and_regions() -> None:
    grid = RectilinearGrid.from_edges([[4, 4, 4], [1, 2, 3]])
    shape = (6, 6)
    assert grid.grid_shape == (3, 3) and grid.extent == (12, 6) and grid.max_shape == (4, 3)
    assert grid.counts_within(shape) == (2, 3)  # the third row of chunks lies past the end
    assert grid.sizes_within(shape) == ((4, 2), (1, 2, 3))
    assert grid.chunk_shape((1, 2)) == (4, 3)
    assert grid.chunk_region((1, 2), shape) == (slice(4, 6), slice(3, 6))
    assert grid.covers(shape) and not grid.covers((13, 6)) and not grid.covers((6,))
    assert grid.uniform_shape is None
    assert RectilinearGrid.from_edges([[4, 4], [3, 3, 3]]).uniform_shape == (4, 3)


def test_growing_repeats_the_last_edge() -> None:
    axis = AxisEdges.of([5, 2])
    assert axis.grown(7) is axis
    assert axis.grown(12).edges == (5, 2, 2, 2, 2)
    assert axis.grown(8).edges == (5, 2, 2)  # the last chunk may overflow, as at a regular edge
    with pytest.raises(MetadataError, match="no chunk edges"):
        AxisEdges(()).grown(1)


def test_scaled_down_to_inner_chunks() -> None:
    grid = RectilinearGrid.from_edges([[8, 4, 4], [6]])
    assert grid.scaled_down((4, 2)).edges == ((2, 1, 1), (3,))


@pytest.mark.parametrize("edges", [[0], [-1], [1.5], [True], ["2"], [None]], ids=lambda e: repr(e))
def test_invalid_edges_are_refused(edges: list) -> None:
    with pytest.raises(MetadataError, match="positive"):
        AxisEdges.of(edges)


def test_invalid_runs_and_overflowing_sums_are_refused() -> None:
    with pytest.raises(MetadataError, match="pairs of positive"):
        AxisEdges(((3, 0),))
    with pytest.raises(MetadataError, match="2\\*\\*63"):
        AxisEdges(((2**62, 2), (1, 1)))


def test_indexers_resolve_the_spec_example() -> None:
    grid = RectilinearGrid.from_edges([[16, 10], [24, 14]])
    (p,) = basic_indexer((20, 15), (26, 38), grid)
    assert p.chunk_coords == (1, 0) and p.chunk_selection == (4, 15)
    (q,) = orthogonal_indexer(([20], [15]), (26, 38), [[16, 10], [24, 14]])  # edge lists
    assert q.chunk_coords == (1, 0)
    whole = list(basic_indexer((slice(16, 26), slice(24, 38)), (26, 38), grid))
    assert [(w.chunk_coords, w.is_complete_chunk) for w in whole] == [((1, 1), True)]


def test_indexers_refuse_grids_that_do_not_fit() -> None:
    with pytest.raises(ValueError, match="cover 6 elements, less than the axis length 7"):
        basic_indexer(..., (7,), [[1, 2, 3]])
    with pytest.raises(ValueError, match="differ in dimensions"):
        basic_indexer(..., (6, 6), RectilinearGrid.from_edges([[6]]))
