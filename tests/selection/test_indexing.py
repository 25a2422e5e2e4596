"""Selections -> output shape and chunk projections: each case and each error."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from aiozarr.errors import BoundsCheckError, SelectionError
from aiozarr.selection.indexing import (
    ChunkProjection,
    Indexer,
    basic_indexer,
    is_basic_selection,
    normalize_selection,
    orthogonal_indexer,
)


def read(indexer: Indexer, array: np.ndarray, chunks: tuple[int, ...]) -> np.ndarray:
    """Assemble the output from the projections over full-size (padded) chunks of `array`."""
    out = np.full(indexer.shape, -1, dtype=array.dtype)
    for p in indexer:
        block = tuple(
            slice(i * c, (i + 1) * c) for i, c in zip(p.chunk_coords, chunks, strict=True)
        )
        chunk = np.full(chunks, -7, dtype=array.dtype)
        part = array[(..., *block)]
        chunk[tuple(slice(0, n) for n in part.shape)] = part
        out[p.out_selection] = chunk[p.chunk_selection]
    return out


def coords(indexer: Indexer) -> list[tuple[int, ...]]:
    return [p.chunk_coords for p in indexer]


A = np.arange(100).reshape(10, 10)


# -- basic selections -------------------------------------------------------------------------


def test_full_selection_projects_every_chunk_in_grid_order() -> None:
    indexer = basic_indexer(..., (10, 10), (4, 5))
    assert indexer.shape == (10, 10)
    assert len(indexer) == indexer.nchunks == 6
    assert coords(indexer) == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    first = next(iter(indexer))
    assert first == ChunkProjection(
        (0, 0), (slice(0, 4, 1), slice(0, 5, 1)), (slice(0, 4), slice(0, 5)), True, True
    )
    np.testing.assert_array_equal(read(indexer, A, (4, 5)), A)


def test_complete_only_for_whole_interior_chunks_in_order() -> None:
    complete = {p.chunk_coords: p.is_complete_chunk for p in basic_indexer(..., (10,), (4,))}
    assert complete == {(0,): True, (1,): True, (2,): False}  # the edge chunk holds 2 of 4
    assert not any(p.is_complete_chunk for p in basic_indexer(slice(None, None, 2), (8,), (4,)))
    assert not any(p.is_complete_chunk for p in basic_indexer(slice(None, None, -1), (8,), (4,)))
    partial = [p.is_complete_chunk for p in basic_indexer(slice(1, 8), (8,), (4,))]
    assert partial == [False, True]
    # An int axis is dropped, so out[out_selection] cannot have the chunk's shape.
    assert not any(p.is_complete_chunk for p in basic_indexer((0, slice(None)), (4, 8), (1, 4)))
    # A complete projection's output region is a view with the chunk's shape.
    out = np.zeros((8, 8))
    for p in basic_indexer(..., (8, 8), (4, 4)):
        assert p.is_complete_chunk and np.shares_memory(out[p.out_selection], out)
        assert out[p.out_selection].shape == (4, 4)


def test_integers_drop_axes_and_may_be_negative() -> None:
    indexer = basic_indexer((3, -1), (10, 10), (4, 4))
    assert indexer.shape == ()
    [p] = list(indexer)
    assert p.chunk_coords == (0, 2) and p.chunk_selection == (3, 1)
    assert read(indexer, A, (4, 4)) == A[3, -1]
    row = basic_indexer(np.int64(-2), (10, 10), (4, 4))
    assert row.shape == (10,)
    np.testing.assert_array_equal(read(row, A, (4, 4)), A[-2])
    np.testing.assert_array_equal(
        read(basic_indexer(np.array(7), (10, 10), (3, 3)), A, (3, 3)), A[7]
    )


@pytest.mark.parametrize(
    "key",
    [
        slice(2, 9),
        slice(None, None, 3),
        slice(1, None, 7),
        slice(-3, None),
        slice(None, -12),
        slice(None, None, -1),
        slice(8, 1, -3),
        slice(None, None, -4),
        slice(100, -100, -1),
        slice(-100, 100, 2),
    ],
)
def test_slices_with_any_step(key: slice) -> None:
    for chunks in [(1,), (3,), (4,), (10,), (13,)]:
        indexer = basic_indexer(key, (10,), chunks)
        np.testing.assert_array_equal(read(indexer, A[0], chunks), A[0][key])


def test_large_steps_skip_chunks_with_nothing_selected() -> None:
    indexer = basic_indexer(slice(0, 20, 5), (20,), (2,))
    assert coords(indexer) == [(0,), (2,), (5,), (7,)]
    assert [p.chunk_selection for p in indexer] == [(slice(0, 1, 5),), (slice(1, 2, 5),)] * 2


def test_negative_step_keeps_output_ascending_and_reverses_in_the_chunk() -> None:
    indexer = basic_indexer(slice(None, None, -1), (6,), (4,))
    assert [(p.chunk_coords, p.chunk_selection, p.out_selection) for p in indexer] == [
        ((0,), (slice(3, None, -1),), (slice(2, 6),)),
        ((1,), (slice(1, None, -1),), (slice(0, 2),)),
    ]


def test_ellipsis_and_fewer_keys_fill_full_axes() -> None:
    b = np.arange(4 * 5 * 6).reshape(4, 5, 6)
    for key in [(..., 1), (1, ..., 2), (1,), (slice(1, 3),), (..., 1, 2, 3), (1, 2, 3, ...)]:
        np.testing.assert_array_equal(
            read(basic_indexer(key, b.shape, (3, 2, 4)), b, (3, 2, 4)), b[key]
        )
    assert normalize_selection((1, ...), (4, 5, 6)) == (1, slice(None), slice(None))
    assert normalize_selection(2, (4, 5)) == (2, slice(None))


def test_zero_dimensional_array() -> None:
    for selection in [(), ...]:
        indexer = basic_indexer(selection, (), ())
        assert indexer.shape == () and len(indexer) == 1
        [p] = list(indexer)
        assert p.chunk_coords == () and p.is_complete_chunk
        out, chunk = np.zeros(()), np.array(5.0)
        out[p.out_selection] = chunk[p.chunk_selection]
        assert out[()] == 5.0 and np.shares_memory(out[p.out_selection], out)
    assert indexer.chunk_coords_array().shape == (1, 0)
    with pytest.raises(SelectionError, match="too many indices"):
        basic_indexer(0, (), ())


@pytest.mark.parametrize(
    ("selection", "shape", "out_shape"),
    [
        (..., (0, 5), (0, 5)),
        (slice(5, 2), (10,), (0,)),
        ((slice(None), slice(3, 3)), (4, 4), (4, 0)),
        ((1, slice(None, None, -1)), (3, 0), (0,)),
    ],
)
def test_empty_selections_have_no_projections(
    selection: Any, shape: tuple[int, ...], out_shape: tuple[int, ...]
) -> None:
    indexer = basic_indexer(selection, shape, (2,) * len(shape))
    assert indexer.shape == out_shape
    assert len(indexer) == 0 and list(indexer) == []
    assert indexer.chunk_coords_array().shape == (0, len(shape))


def test_chunk_coords_array_matches_iteration() -> None:
    indexer = orthogonal_indexer(([9, 0, 4], slice(None, None, -3), 2), (10, 10, 3), (3, 4, 2))
    assert indexer.chunk_coords_array().tolist() == [list(c) for c in coords(indexer)]


# -- orthogonal selections --------------------------------------------------------------------


def test_unsorted_repeated_negative_indices() -> None:
    index = [7, -1, 2, 2, 0, 9, 3]
    indexer = orthogonal_indexer(index, (10,), (3,))
    assert indexer.shape == (7,)
    assert coords(indexer) == [(0,), (1,), (2,), (3,)]  # each chunk once, in grid order
    np.testing.assert_array_equal(read(indexer, A[1], (3,)), A[1][index])


def test_outer_product_of_several_array_axes() -> None:
    rows, cols = [8, 1, 1], np.array([True, False] * 5)
    indexer = orthogonal_indexer((rows, cols), (10, 10), (4, 3))
    np.testing.assert_array_equal(read(indexer, A, (4, 3)), A[np.ix_(rows, np.flatnonzero(cols))])
    # An int among array axes is dropped; a slice between them stays in place.
    b = np.arange(5 * 6 * 7).reshape(5, 6, 7)
    indexer = orthogonal_indexer(([4, 0], slice(1, 5), [6, 1, 1]), b.shape, (2, 4, 3))
    np.testing.assert_array_equal(
        read(indexer, b, (2, 4, 3)), b[np.ix_([4, 0], range(1, 5), [6, 1, 1])]
    )
    indexer = orthogonal_indexer((3, slice(None), [6, 1, 1]), b.shape, (2, 4, 3))
    np.testing.assert_array_equal(read(indexer, b, (2, 4, 3)), b[3][:, [6, 1, 1]])
    indexer = orthogonal_indexer(([2, 0], 1, [5, 1]), b.shape, (2, 4, 3))
    np.testing.assert_array_equal(read(indexer, b, (2, 4, 3)), b[np.ix_([2, 0], [1], [5, 1])][:, 0])


def test_orthogonal_write_direction() -> None:
    target = np.zeros((10, 10), dtype=int)
    chunks = {}
    indexer = orthogonal_indexer(([5, 0, 9], [3, 2]), (10, 10), (4, 4))
    value = np.arange(6).reshape(3, 2) + 1
    for p in indexer:
        chunk = chunks.setdefault(p.chunk_coords, np.zeros((4, 4), dtype=int))
        chunk[p.chunk_selection] = value[p.out_selection]
    for (i, j), chunk in chunks.items():
        view = target[i * 4 : i * 4 + 4, j * 4 : j * 4 + 4]
        view[...] = chunk[: view.shape[0], : view.shape[1]]
    expected = np.zeros((10, 10), dtype=int)
    expected[np.ix_([5, 0, 9], [3, 2])] = value
    np.testing.assert_array_equal(target, expected)


def test_sorted_contiguous_indices_become_slices() -> None:
    index = np.arange(2, 3000)
    indexer = orthogonal_indexer(index, (3000,), (100,))
    projections = list(indexer)
    assert len(projections) == 30
    assert all(
        isinstance(s, slice) for p in projections for s in (*p.chunk_selection, *p.out_selection)
    )
    assert [p.is_complete_chunk for p in projections] == [False] + [True] * 29
    mask = np.zeros(3000, dtype=bool)
    mask[100:200] = True
    [p] = list(orthogonal_indexer(mask, (3000,), (100,)))
    assert p.is_complete_chunk and p.out_selection == (slice(0, 100),)


def test_many_indices_group_per_chunk() -> None:
    rng = np.random.default_rng(0)
    index = rng.integers(-100_000, 100_000, size=200_000)
    indexer = orthogonal_indexer(index, (100_000,), (1000,))
    assert len(indexer) == 100
    data = np.arange(100_000)
    np.testing.assert_array_equal(read(indexer, data, (1000,)), data[index])


def test_empty_index_list_and_all_false_mask() -> None:
    for key in [[], np.array([], dtype=np.int64), np.zeros(10, dtype=bool)]:
        indexer = orthogonal_indexer((key, slice(None)), (10, 10), (3, 3))
        assert indexer.shape == (0, 10) and len(indexer) == 0


def test_is_basic_selection() -> None:
    assert is_basic_selection((1, slice(None), ...))
    assert is_basic_selection(np.int64(3)) and is_basic_selection(np.array(3))
    assert not is_basic_selection([1, 2])
    assert not is_basic_selection((slice(None), np.array([True, False])))


# -- errors -----------------------------------------------------------------------------------


def test_out_of_bounds_integer_names_axis_index_and_size() -> None:
    with pytest.raises(BoundsCheckError, match="index 10 is out of bounds for axis 1 with size 10"):
        basic_indexer((0, 10), (10, 10), (3, 3))
    with pytest.raises(IndexError, match=r"index -11 .* axis 0 with size 10"):
        basic_indexer(-11, (10,), (3,))
    with pytest.raises(BoundsCheckError, match=r"index 0 .* axis 0 with size 0"):
        basic_indexer(0, (0,), (3,))
    with pytest.raises(BoundsCheckError, match="index 12 is out of bounds for axis 1 with size 10"):
        orthogonal_indexer((slice(None), [1, 12, -30]), (10, 10), (3, 3))


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        ((1, 2, 3), "too many indices for array: array is 2-dimensional, but 3 were indexed"),
        ((..., 1, ...), "single ellipsis"),
        (None, "newaxis"),
        ((slice(None), None), "newaxis"),
        (1.5, "invalid index 1.5 of type float"),
        ("a", "invalid index 'a' of type str"),
        (True, "invalid index True of type bool"),
        (slice(None, None, 0), "axis 0: slice step cannot be zero"),
        (slice(0.5, 3), "invalid slice"),
        ([0, 1], "basic selection takes only integers"),
    ],
)
def test_basic_selection_errors(selection: Any, message: str) -> None:
    with pytest.raises(SelectionError, match=re.escape(message)):
        basic_indexer(selection, (10, 10), (3, 3))


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        (np.ones(9, dtype=bool), "boolean mask of length 9 does not match axis 0 of size 10"),
        ((slice(None), [True, False]), "boolean mask of length 2 does not match axis 1"),
        (
            np.zeros((2, 2), dtype=int),
            r"1-dimensional, got 2 dimensions \(shape \(2, 2\)\) for axis 0",
        ),
        (np.ones((10, 10), dtype=bool), "1-dimensional"),
        ([0.5, 1.0], "dtype float64"),
        (["a"], "dtype <U1"),
        ((0, [1], 2), "too many indices"),
        ((slice(0, 5, 0), [1]), "step cannot be zero"),
    ],
)
def test_orthogonal_selection_errors(selection: Any, message: str) -> None:
    with pytest.raises(SelectionError, match=message):
        orthogonal_indexer(selection, (10, 10), (3, 3))


def test_invalid_grid_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="differ in dimensions"):
        basic_indexer(..., (10, 10), (3,))
    with pytest.raises(ValueError, match="chunk shape"):
        basic_indexer(..., (10,), (0,))


def test_projection_count_is_product_of_axis_counts() -> None:
    indexer = basic_indexer(
        (slice(None), slice(0, 1), slice(None, None, 7)), (40, 40, 40), (4, 5, 6)
    )
    # 0, 7, ..., 35 fall in chunks 0..5 of the last axis; chunk 6 (36..39) holds none.
    assert len(indexer) == 10 * 1 * 6
    assert indexer.shape == (40, 1, 6)


def test_one_int_per_axis_is_one_element_of_one_chunk() -> None:
    a = np.arange(7 * 5 * 6).reshape(7, 5, 6)
    chunks = (3, 2, 4)
    for point in [(0, 0, 0), (6, 4, 5), (-1, -5, 3), (3, 2, -2)]:
        indexer = basic_indexer(point, a.shape, chunks)
        assert indexer.shape == () and len(indexer) == 1
        assert read(indexer, a, chunks)[()] == a[point]
        # the same projection as the general path takes for mixed int kinds
        general = basic_indexer(tuple(np.int64(i) for i in point), a.shape, chunks)
        assert list(indexer) == list(general)
        np.testing.assert_array_equal(indexer.chunk_coords_array(), general.chunk_coords_array())
    for point in [(7, 0, 0), (0, -6, 0), (0, 0, 6)]:
        with pytest.raises(BoundsCheckError, match="out of bounds"):
            basic_indexer(point, a.shape, chunks)
