"""Hypothesis: projections over a chunked copy reproduce numpy's reads and writes."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from aiozarr.selection.indexing import Indexer, basic_indexer, orthogonal_indexer

SETTINGS = settings(max_examples=200, deadline=None)

# Most chunks per axis by number of dimensions: keeps the grid (and the test) small.
MAX_GRID = {0: 1, 1: 20, 2: 20, 3: 8, 4: 5}


@st.composite
def grids(draw: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A shape of 0..4 dims with sizes 0..20 and a random chunk shape for it."""
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 20), min_size=ndim, max_size=ndim)))
    chunks = tuple(
        draw(st.integers(max(1, math.ceil(size / MAX_GRID[ndim])), size + 3)) for size in shape
    )
    return shape, chunks


def _bound(size: int) -> st.SearchStrategy[int | None]:
    return st.none() | st.integers(-size - 3, size + 3)


@st.composite
def basic_selections(draw: Any, shape: tuple[int, ...]) -> Any:
    """Ints (negative too), slices with any start/stop/step, `...`, fewer keys than dims."""
    keys: list[Any] = []
    for size in shape:
        if size > 0 and draw(st.booleans()):
            keys.append(draw(st.integers(-size, size - 1)))
        else:
            step = draw(st.none() | st.integers(-6, 6).filter(bool))
            keys.append(slice(draw(_bound(size)), draw(_bound(size)), step))
    if draw(st.booleans()):  # `...` stands for a run of full axes
        start = draw(st.integers(0, len(keys)))
        stop = draw(st.integers(start, len(keys)))
        keys = [*keys[:start], ..., *keys[stop:]]
    else:  # fewer keys than dimensions
        keys = keys[: draw(st.integers(0, len(keys)))]
    if len(keys) == 1 and draw(st.booleans()):
        return keys[0]
    return tuple(keys)


@st.composite
def orthogonal_selections(draw: Any, shape: tuple[int, ...], unique: bool = False) -> Any:
    """Per axis an int, slice, int array (repeats, unsorted, negative) or boolean mask."""
    keys: list[Any] = []
    for size in shape:
        kind = draw(
            st.sampled_from(
                ["int", "slice", "array", "mask"] if size else ["slice", "array", "mask"]
            )
        )
        if kind == "int":
            keys.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            step = draw(st.none() | st.integers(-6, 6).filter(bool))
            keys.append(slice(draw(_bound(size)), draw(_bound(size)), step))
        elif kind == "mask":
            keys.append(np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)), bool))
        else:
            index = []  # an empty list is the only index list on an empty axis
            if size:
                distinct = (lambda i, n=size: i % n) if unique else None
                values = st.integers(-size, size - 1)
                index = draw(st.lists(values, max_size=25, unique_by=distinct))
            keys.append(np.array(index, dtype=np.int64) if draw(st.booleans()) else index)
    return tuple(keys)


def split(array: np.ndarray, chunks: tuple[int, ...]) -> dict[tuple[int, ...], np.ndarray]:
    """The array as full-size chunks (edge chunks padded with a sentinel)."""
    grid = [range(math.ceil(s / c)) for s, c in zip(array.shape, chunks, strict=True)]
    out = {}
    for coords in itertools.product(*grid):
        block = tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, chunks, strict=True))
        chunk = np.full(chunks, -1, dtype=array.dtype)
        part = array[block]
        chunk[tuple(slice(0, n) for n in part.shape)] = part
        out[coords] = chunk
    return out


def join(
    chunked: dict[tuple[int, ...], np.ndarray], shape: tuple[int, ...], chunks: tuple[int, ...]
) -> np.ndarray:
    out = np.empty(shape, dtype=np.int64)
    for coords, chunk in chunked.items():
        block = tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, chunks, strict=True))
        view = out[(..., *block)]  # `...` keeps a 0-d result a view
        view[...] = chunk[tuple(slice(0, n) for n in view.shape)]
    return out


def check_read(
    indexer: Indexer, array: np.ndarray, chunks: tuple[int, ...], expected: np.ndarray
) -> None:
    chunked = split(array, chunks)
    assert indexer.shape == expected.shape
    out = np.full(indexer.shape, -2, dtype=np.int64)
    written = np.zeros(indexer.shape, dtype=np.int64)
    projections = list(indexer)
    assert len(projections) == len(indexer) == indexer.nchunks
    coords = [p.chunk_coords for p in projections]
    assert coords == sorted(set(coords)), "grid order, each chunk once"
    assert indexer.chunk_coords_array().tolist() == [list(c) for c in coords] or not coords
    for p in projections:
        chunk = chunked[p.chunk_coords]
        taken = chunk[p.chunk_selection]
        assert taken.size > 0, "no projection selects nothing"
        out[p.out_selection] = taken
        written[p.out_selection] += 1
        if p.is_complete_chunk:
            view = out[p.out_selection]
            assert view.shape == chunks and np.shares_memory(view, out)
            assert np.array_equal(taken, chunk)
    np.testing.assert_array_equal(out, expected)
    assert (written == 1).all(), "every output element is filled exactly once"


def check_write(
    indexer: Indexer,
    array: np.ndarray,
    chunks: tuple[int, ...],
    expected: np.ndarray,
    value: np.ndarray,
) -> None:
    chunked = split(array, chunks)
    for p in indexer:
        chunked[p.chunk_coords][p.chunk_selection] = value[p.out_selection]
    if array.size:
        np.testing.assert_array_equal(join(chunked, array.shape, chunks), expected)


def outer_expected(
    array: np.ndarray, selection: tuple[Any, ...]
) -> tuple[tuple[Any, ...], tuple[int, ...]]:
    """numpy's `np.ix_` index for an orthogonal selection, and the output shape (ints dropped)."""
    index, shape = [], []
    for key, size in zip(selection, array.shape, strict=False):
        if isinstance(key, int):
            index.append([key])
            continue
        if isinstance(key, slice):
            values = np.arange(size)[key]
        else:
            values = np.asarray(key)
            values = np.flatnonzero(values) if values.dtype == bool else values.astype(np.int64)
        index.append(values)
        shape.append(len(values))
    for size in array.shape[len(selection) :]:
        index.append(np.arange(size))
        shape.append(size)
    return np.ix_(*index), tuple(shape)


@SETTINGS
@given(st.data())
def test_basic_read_and_write_match_numpy(data: st.DataObject) -> None:
    shape, chunks = data.draw(grids())
    selection = data.draw(basic_selections(shape))
    array = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    indexer = basic_indexer(selection, shape, chunks)
    check_read(indexer, array, chunks, array[selection])
    value = np.arange(math.prod(indexer.shape), dtype=np.int64).reshape(indexer.shape) + 10**6
    expected = array.copy()
    expected[selection] = value
    check_write(indexer, array, chunks, expected, value)


@SETTINGS
@given(st.data())
def test_hypothesis_basic_indices_match_numpy(data: st.DataObject) -> None:
    shape, chunks = data.draw(grids())
    selection = data.draw(hnp.basic_indices(shape, allow_ellipsis=True, allow_newaxis=False))
    array = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    check_read(basic_indexer(selection, shape, chunks), array, chunks, array[selection])


@SETTINGS
@given(st.data())
def test_orthogonal_read_matches_outer_product(data: st.DataObject) -> None:
    shape, chunks = data.draw(grids())
    selection = data.draw(orthogonal_selections(shape))
    array = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    index, out_shape = outer_expected(array, selection)
    indexer = orthogonal_indexer(selection, shape, chunks)
    check_read(indexer, array, chunks, array[index].reshape(out_shape))


@SETTINGS
@given(st.data())
def test_orthogonal_write_matches_numpy(data: st.DataObject) -> None:
    shape, chunks = data.draw(grids())
    selection = data.draw(orthogonal_selections(shape, unique=True))
    array = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    index, out_shape = outer_expected(array, selection)
    indexer = orthogonal_indexer(selection, shape, chunks)
    assert indexer.shape == out_shape
    value = np.arange(math.prod(out_shape), dtype=np.int64).reshape(out_shape) + 10**6
    expected = array.copy()
    expected[index] = value.reshape(expected[index].shape)
    check_write(indexer, array, chunks, expected, value)
