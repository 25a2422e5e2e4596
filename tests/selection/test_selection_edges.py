"""Edges of selections and written values: indices past int64, 0-d point writes, values
that are aiozarr arrays or ragged, huge steps and point selections, range messages."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import (
    BoundsCheckError,
    InvalidValueError,
    SelectionError,
    SelectionTooLargeError,
    ValueOutOfRangeError,
)
from aiozarr.selection.indexing import basic_indexer
from aiozarr.storage import MemoryStore


def _arange(shape: tuple[int, ...], chunks: tuple[int, ...]) -> Any:
    arr = aiozarr.create_array(MemoryStore(), shape=shape, chunks=chunks, dtype="i4")
    arr[...] = np.arange(int(np.prod(shape)), dtype="i4").reshape(shape)
    return arr


@pytest.mark.parametrize(
    ("select", "named"),
    [
        (lambda a: a[[2**64 - 1]], 2**64 - 1),  # a list numpy makes uint64
        (lambda a: a.oindex[np.array([2**64 - 2], dtype=np.uint64)], 2**64 - 2),
        (lambda a: a.vindex[np.array([2**64 - 1], dtype=np.uint64)], 2**64 - 1),
        (lambda a: a[[2**63]], 2**63),
        (lambda a: a.oindex[[2**64 - 2, 0]], 2**64 - 2),  # numpy: float64
        (lambda a: a[[2**70]], 2**70),  # numpy: object
        (lambda a: a.vindex[[2**70]], 2**70),
        (lambda a: a[[-(2**70), 1]], -(2**70)),
    ],
)
def test_indices_past_int64_are_out_of_bounds_not_wrapped(select: Any, named: int) -> None:
    arr = _arange((5,), (2,))
    with pytest.raises(BoundsCheckError, match=rf"^index {named} is out of bounds"):
        select(arr)


def test_a_write_at_an_index_past_int64_leaves_the_array_as_it_was() -> None:
    arr = _arange((5,), (2,))
    with pytest.raises(BoundsCheckError, match=f"index {2**64 - 1} is out"):
        arr[[2**64 - 1]] = 99
    with pytest.raises(BoundsCheckError, match=f"index {2**64 - 1} is out"):
        arr.vindex[np.array([2**64 - 1], dtype=np.uint64)] = 99
    assert arr[:].tolist() == [0, 1, 2, 3, 4]  # not a[4] = 99


def test_points_past_int64_name_their_axis() -> None:
    arr = _arange((5, 3), (2, 2))
    with pytest.raises(BoundsCheckError, match=f"index {2**70} is out of bounds for axis 0"):
        arr[[2**70], [0]]
    with pytest.raises(BoundsCheckError, match=f"index {2**64 - 1} is out of bounds for axis 1"):
        arr.vindex[[0], np.array([2**64 - 1], dtype=np.uint64)]
    with pytest.raises(BoundsCheckError, match=f"index {2**63} is out of bounds for axis 0"):
        arr.vindex[np.uint64(2**63), 0]
    assert arr.vindex[np.array([4], dtype=np.uint64), np.array([2], np.uint8)].tolist() == [14]


@pytest.mark.parametrize(
    "write",
    [
        lambda a: a.vindex.__setitem__((), 5),
        lambda a: a.__setitem__(np.array(True), 5),
        lambda a: a.set_mask_selection(np.array(True), 5),
        lambda a: a.set_coordinate_selection((), 5),
        lambda a: a.set_vectorized_selection((), np.array(5)),
    ],
)
def test_point_writes_on_a_0d_array(write: Any) -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(), dtype="i4", fill_value=1)
    write(arr)
    assert arr[()] == 5
    assert arr.vindex[()] == 5 and arr[np.array(True)].tolist() == [5]  # reads as before
    assert arr.vindex[np.array(False)].tolist() == []


def test_an_aiozarr_array_is_a_value_to_write() -> None:
    src = _arange((4,), (2,))
    dst = aiozarr.create_array(MemoryStore(), shape=(4,), chunks=(2,), dtype="f4")
    dst[:] = src
    assert dst[:].tolist() == [0, 1, 2, 3]
    dst.oindex[[3, 2, 1, 0]] = src
    dst.set_basic_selection(slice(None), src)
    assert dst[:].tolist() == [0, 1, 2, 3]
    dst.append(src)
    assert dst[:].tolist() == [0, 1, 2, 3] * 2
    group = aiozarr.create_group(MemoryStore())
    assert group.create_array("copy", data=src)[:].tolist() == [0, 1, 2, 3]
    assert aiozarr.create_array(MemoryStore(), data=src)[:].tolist() == [0, 1, 2, 3]


def test_a_ragged_value_is_an_invalid_value() -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(5, 7), chunks=(2, 3), dtype="i4")
    with pytest.raises(InvalidValueError, match="ragged value"):
        arr[0:2, 0:2] = [[1, 2], [3]]


def test_vindex_too_large_to_plan_is_refused_by_size() -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(5, 7), chunks=(2, 3), dtype="i4")
    # Views (no memory): their points, 2**46, are past what any address space holds.
    rows = np.broadcast_to(np.int64(0), (2**23, 1))
    cols = np.broadcast_to(np.int64(0), (1, 2**23))
    with pytest.raises(SelectionTooLargeError, match=r"shape \(8388608, 8388608\)"):
        arr.vindex[rows, cols]
    with pytest.raises(SelectionTooLargeError, match=r"shape \(8388608, 8388608\)"):
        arr.vindex[rows, cols] = 1
    # Points of equal shapes: their count, not the outer product of their lengths.
    points = np.broadcast_to(np.int64(0), (2**46,))
    with pytest.raises(SelectionTooLargeError, match=r"shape \(70368744177664,\)"):
        arr.get_coordinate_selection((points, points))


@pytest.mark.parametrize("step", [2**63, -(2**63), 2**70, -(2**70), 10, -10, 11])
def test_a_step_past_the_axis_takes_one_element(step: int) -> None:
    arr = _arange((10,), (3,))
    expected = np.arange(10)[::step]
    assert arr[::step].tolist() == expected.tolist()
    assert basic_indexer(np.s_[::step], (10,), (3,)).shape == expected.shape


@pytest.mark.parametrize(
    ("value", "named"),
    [
        (np.array([-1, 3], np.int8), "-1 is out of range"),
        (np.array([70000, 3]), "70000 is out of range"),
        (np.array([-5, 3, 70000, 2]), "values from -5 to 70000 are out of range"),
        ([2**70, 3, 1, 2], f"{2**70} is out of range"),  # Python ints past int64
    ],
)
def test_a_range_error_names_only_the_values_out_of_range(value: Any, named: str) -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(4,), chunks=(2,), dtype="uint16")
    size = np.shape(value)[0]
    with pytest.raises(ValueOutOfRangeError, match=re.escape(named) + ": uint16 holds 0 to"):
        arr[0:size] = value


@pytest.mark.parametrize(
    "access",
    [
        lambda a, k: a[k],
        lambda a, k: a[k, 0],
        lambda a, k: a.oindex[k],
        lambda a, k: a.vindex[k, 1],
        lambda a, k: a.vindex[k, np.array([0])],
        lambda a, k: a.blocks[k],
        lambda a, k: a.__setitem__((k, 1), -5),
        lambda a, k: a.vindex.__setitem__((k, 1), -5),
    ],
)
def test_a_timedelta_is_not_an_index(access: Any) -> None:
    arr = _arange((10, 4), (3, 2))
    with pytest.raises(SelectionError, match=r"timedelta64|integer"):
        access(arr, np.timedelta64(3, "D"))
    assert (arr[...] == np.arange(40).reshape(10, 4)).all()


@pytest.mark.parametrize(
    ("select", "named"),
    [
        (lambda a: a.vindex[np.array([], dtype=int), 99], "index 99 is out of bounds for axis 1"),
        (lambda a: a[np.zeros(0, dtype=int), -6], "index -6 is out of bounds for axis 1"),
        (lambda a: a.vindex[np.zeros((0, 3), int), [7, 0, 1]], "index 7 is out of bounds"),
        (lambda a: a.get_coordinate_selection(([], 5)), "index 5 is out of bounds for axis 1"),
        (lambda a: a.vindex.__setitem__(([], 99), 1), "index 99 is out of bounds for axis 1"),
    ],
)
def test_points_out_of_bounds_are_refused_where_no_point_is_read(select: Any, named: str) -> None:
    # numpy and zarr-python check each index array before broadcasting: an empty one on
    # another axis does not make an index out of bounds valid.
    arr = _arange((5, 5), (2, 2))
    with pytest.raises(BoundsCheckError, match=named):
        select(arr)


@pytest.mark.parametrize("key", [slice(1.0, 2), (0, slice(None, "a")), slice(np.float64(0), None)])
def test_a_block_slice_of_no_integers_is_a_selection_error(key: Any) -> None:
    arr = _arange((5, 5), (2, 2))
    with pytest.raises(SelectionError, match=r"invalid slice .* for axis \d: slice indices must"):
        arr.blocks[key]
    with pytest.raises(SelectionError, match="invalid slice"):
        arr.blocks[key] = 1
    assert arr.blocks[1:, -1].tolist() == [[14], [19], [24]]


RAGGED = [[0, 1], [1]]


@pytest.mark.parametrize(
    ("select", "said"),
    [
        (lambda a: a[RAGGED], "ragged index for axis 0"),
        (lambda a: a[1, RAGGED], "ragged index for axis 1"),
        (lambda a: a[RAGGED, RAGGED], "ragged index for axis 0"),
        (lambda a: a[[True, False], RAGGED], "ragged index for axis 1"),
        (lambda a: a.oindex[RAGGED], "ragged index for axis 0"),
        (lambda a: a.get_mask_selection([[True, False, True], [True]]), "mask .* ragged list"),
        (lambda a: a.vindex[[[True, False, True], [True]]], "vindex takes one integer"),
        (lambda a: a.get_coordinate_selection((RAGGED, [0])), "coordinate selection takes"),
        (lambda a: a.__setitem__(RAGGED, 1), "ragged index for axis 0"),
        (lambda a: a.set_mask_selection([[True, False, True], [True]], 1), "ragged list"),
    ],
)
def test_a_ragged_index_is_a_selection_error(select: Any, said: str) -> None:
    # numpy cannot make an array of nested lists of different lengths: its bare
    # ValueError ("inhomogeneous shape") came out of every kind of selection.
    arr = _arange((2, 3), (1, 2))
    with pytest.raises(SelectionError, match=said):
        select(arr)
    assert arr[...].tolist() == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize(
    "select",
    [
        lambda a: a[9, 0],
        lambda a: a.oindex[[0, 7]],
        lambda a: a.vindex[[0], [5]],
        lambda a: a.get_mask_selection(np.ones((2, 2), dtype=bool)),
        lambda a: a.__setitem__((slice(None), 1.5), 0),
        lambda a: a[::0],
        lambda a: a[[0, 1], [0, 1], ...],  # ambiguous: refused before any planning
        lambda a: a.vindex[0:2, [0]],
        lambda a: a.blocks[5, 0],
        lambda a: a.blocks.__setitem__(([0, 1],), 1),
    ],
)
def test_a_selection_error_names_the_array_in_a_note(select: Any) -> None:
    # The message says what is wrong; the note, which array of the caller's many it was.
    arr = aiozarr.create_array(MemoryStore(), "temps", shape=(4, 3), chunks=(2, 2), dtype="i4")
    with pytest.raises(SelectionError) as caught:
        select(arr)
    note = caught.value.__notes__[0]
    assert re.fullmatch(r"selecting .* in array /temps in MemoryStore\(.*\)", note, re.DOTALL)
