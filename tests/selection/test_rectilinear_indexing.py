"""Hypothesis: projections onto random rectilinear grids reproduce numpy's reads and writes."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_indexing_vs_numpy import basic_selections, orthogonal_selections, outer_expected

from aiozarr.selection.chunk_grid import RectilinearGrid
from aiozarr.selection.indexing import Indexer, basic_indexer, orthogonal_indexer

SETTINGS = settings(max_examples=200, deadline=None)

Edges = tuple[tuple[int, ...], ...]


@st.composite
def axis_edges(draw: Any, size: int) -> tuple[int, ...]:
    """Edge lengths covering `size`, sometimes all equal, sometimes overflowing by chunks."""
    if draw(st.booleans()):
        step = draw(st.integers(1, max(size, 1) + 2))
        return (step,) * (max(math.ceil(size / step), 1) + draw(st.integers(0, 1)))
    edges: list[int] = []
    while sum(edges) < size or not edges:
        edges.append(draw(st.integers(1, max(size // 2, 1) + 2)))
    edges += draw(st.lists(st.integers(1, 4), max_size=2))  # overflow chunks
    return tuple(edges)


@st.composite
def rectilinear_grids(draw: Any) -> tuple[tuple[int, ...], Edges, Any]:
    """A shape of 0..3 dims (sizes 0..20), its edges, and the grid as indexing takes it."""
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 20), min_size=ndim, max_size=ndim)))
    edges = tuple(draw(axis_edges(size)) for size in shape)
    form = draw(st.sampled_from(["grid", "lists"]))
    grid = RectilinearGrid.from_edges(edges) if form == "grid" else [list(e) for e in edges]
    return shape, edges, grid


def _regions(edges: Edges) -> dict[tuple[int, ...], tuple[slice, ...]]:
    """Every chunk's region (full edge lengths, past the array's end too)."""
    offsets = [np.concatenate(([0], np.cumsum(e))).astype(int) for e in edges]
    out = {}
    for coords in itertools.product(*(range(len(e)) for e in edges)):
        out[coords] = tuple(
            slice(int(o[i]), int(o[i + 1])) for o, i in zip(offsets, coords, strict=True)
        )
    return out


def split(array: np.ndarray, edges: Edges) -> dict[tuple[int, ...], np.ndarray]:
    """The array as chunks of their full shapes (overflow padded with a sentinel)."""
    out = {}
    for coords, region in _regions(edges).items():
        chunk = np.full(tuple(s.stop - s.start for s in region), -1, dtype=array.dtype)
        part = array[region]
        chunk[tuple(slice(0, n) for n in part.shape)] = part
        out[coords] = chunk
    return out


def join(chunked: dict[tuple[int, ...], np.ndarray], shape: tuple[int, ...], edges: Edges):
    out = np.empty(shape, dtype=np.int64)
    for coords, region in _regions(edges).items():
        view = out[(..., *region)]
        view[...] = chunked[coords][tuple(slice(0, n) for n in view.shape)]
    return out


def check_read(indexer: Indexer, array: np.ndarray, edges: Edges, expected: np.ndarray) -> None:
    chunked = split(array, edges)
    assert indexer.shape == expected.shape
    out = np.full(indexer.shape, -2, dtype=np.int64)
    written = np.zeros(indexer.shape, dtype=np.int64)
    projections = list(indexer)
    assert len(projections) == indexer.nchunks
    coords = [p.chunk_coords for p in projections]
    assert coords == sorted(set(coords)), "grid order, each chunk once"
    regions = _regions(edges)
    assert indexer.chunk_coords_array().tolist() == [list(c) for c in coords] or not coords
    for p in projections:
        chunk = chunked[p.chunk_coords]
        taken = chunk[p.chunk_selection]
        assert taken.size > 0, "no projection selects nothing"
        assert (taken != -1).all(), "nothing is read from past the array's end"
        out[p.out_selection] = taken
        written[p.out_selection] += 1
        inside = all(r.stop <= n for r, n in zip(regions[p.chunk_coords], array.shape, strict=True))
        whole = inside and taken.shape == chunk.shape and np.array_equal(taken, chunk)
        if p.is_complete_chunk:
            view = out[p.out_selection]
            assert view.shape == chunk.shape and np.shares_memory(view, out)
            assert whole
    np.testing.assert_array_equal(out, expected)
    assert (written == 1).all(), "every output element is filled exactly once"


def check_write(
    indexer: Indexer, array: np.ndarray, edges: Edges, expected: np.ndarray, value: np.ndarray
) -> None:
    chunked = split(array, edges)
    for p in indexer:
        chunked[p.chunk_coords][p.chunk_selection] = value[p.out_selection]
    if array.size:
        np.testing.assert_array_equal(join(chunked, array.shape, edges), expected)


@SETTINGS
@given(st.data())
def test_basic_read_and_write_match_numpy(data: st.DataObject) -> None:
    shape, edges, grid = data.draw(rectilinear_grids())
    selection = data.draw(basic_selections(shape))
    array = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    indexer = basic_indexer(selection, shape, grid)
    check_read(indexer, array, edges, array[selection])
    value = np.arange(math.prod(indexer.shape), dtype=np.int64).reshape(indexer.shape) + 10**6
    expected = array.copy()
    expected[selection] = value
    check_write(indexer, array, edges, expected, value)


@SETTINGS
@given(st.data())
def test_orthogonal_read_and_write_match_numpy(data: st.DataObject) -> None:
    shape, edges, grid = data.draw(rectilinear_grids())
    selection = data.draw(orthogonal_selections(shape, unique=True))
    array = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    index, out_shape = outer_expected(array, selection)
    indexer = orthogonal_indexer(selection, shape, grid)
    check_read(indexer, array, edges, array[index].reshape(out_shape))
    value = np.arange(math.prod(out_shape), dtype=np.int64).reshape(out_shape) + 10**6
    expected = array.copy()
    expected[index] = value.reshape(expected[index].shape)
    check_write(indexer, array, edges, expected, value)


@SETTINGS
@given(st.data())
def test_orthogonal_reads_with_repeats_match_numpy(data: st.DataObject) -> None:
    shape, edges, grid = data.draw(rectilinear_grids())
    selection = data.draw(orthogonal_selections(shape))
    array = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    index, out_shape = outer_expected(array, selection)
    check_read(
        orthogonal_indexer(selection, shape, grid), array, edges, array[index].reshape(out_shape)
    )


@SETTINGS
@given(st.data())
def test_complete_chunks_are_exactly_the_whole_inside_chunks(data: st.DataObject) -> None:
    """A full read marks complete exactly the chunks lying wholly inside the array."""
    shape, edges, grid = data.draw(rectilinear_grids())
    regions = _regions(edges)
    for p in basic_indexer(..., shape, grid):
        inside = all(r.stop <= n for r, n in zip(regions[p.chunk_coords], shape, strict=True))
        assert p.is_complete_chunk == inside
