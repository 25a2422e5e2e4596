"""A write that covers every element a chunk of an unsharded array holds inside the
array replaces the chunk: it starts from the fill value, not from the stored chunk, whose
part past the array's edge may still hold values from before the array shrank (they
would come back when it grows again), and it reads nothing first; a shard's inner chunks
are merged into, as zarr-python does. One element of an object array is written as the
element."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import aiozarr
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore

LAYOUTS: dict[str, dict[str, Any]] = {
    "v3": {"chunks": (8,)},
    "sharded": {"chunks": (4,), "shards": (8,)},
    "v2": {"chunks": (8,), "zarr_format": 2},
}


def _both(tmp_path: Path, layout: str, steps: Any) -> tuple[np.ndarray, np.ndarray]:
    """`steps(arr)` run on an aiozarr array and on a zarr-python one of `layout`: what
    each then reads (and zarr-python reads of aiozarr's)."""
    options = {"shape": (14,), "dtype": "i4", "fill_value": -1, **LAYOUTS[layout]}
    ours = aiozarr.create_array(LocalStore(tmp_path / "ours"), **options)
    theirs = zarr.create_array(str(tmp_path / "theirs"), **options)
    for arr in (ours, theirs):
        steps(arr)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "ours"), mode="r")[:], ours[:])
    return ours[:], theirs[:]


def _overwrite_between_shrink_and_grow(arr: Any) -> None:
    arr[:] = np.arange(14)
    arr.resize((13,))
    arr[:] = 100
    arr.resize((16,))


def _one_element_between_shrink_and_grow(arr: Any) -> None:
    arr[:] = np.arange(14)
    arr.resize((9,))
    arr[8:9] = 7  # the only element of the last chunk inside the array
    arr.resize((16,))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize(
    "steps", [_overwrite_between_shrink_and_grow, _one_element_between_shrink_and_grow]
)
def test_edge_chunks_after_a_shrink_read_as_zarr_pythons(
    tmp_path: Path, layout: str, steps: Any
) -> None:
    ours, theirs = _both(tmp_path, layout, steps)
    np.testing.assert_array_equal(ours, theirs)
    if layout != "sharded":  # written from the fill value: nothing of the past comes back
        assert (ours[ours.size - 3 :] == -1).all()


def test_a_point_that_is_all_an_edge_chunk_holds(tmp_path: Path) -> None:
    """As a slice of it (zarr-python 3.4 reads the same; 3.1 kept the chunk's past for
    an integer index, not for a slice)."""
    arr = aiozarr.create_array(
        LocalStore(tmp_path), shape=(14,), dtype="i4", fill_value=-1, chunks=(8,)
    )
    arr[:] = np.arange(14)
    arr.resize((9,))
    arr[8] = 7
    arr.resize((16,))
    np.testing.assert_array_equal(arr[:], [*range(8), 7, *[-1] * 7])


def _shrunk(path: Path, layout: str) -> aiozarr.Array:
    """An array of 14 values shrunk to 13: its last chunk still stores the 14th."""
    arr = aiozarr.create_array(
        LocalStore(path), shape=(14,), dtype="i4", fill_value=-1, **LAYOUTS[layout]
    )
    arr[:] = np.arange(14)
    arr.resize((13,))
    return arr


def test_a_write_covering_an_edge_chunk_reads_nothing_first(tmp_path: Path) -> None:
    _shrunk(tmp_path, "v3")
    store = CountingStore(LocalStore(tmp_path))
    arr = aiozarr.open_array(store)
    store.reset()
    arr[3:] = 5  # chunk 0 in part (read first), chunk 1 whole inside the array
    gets = [key for op, key, _ in store.requests if op == "get"]
    assert gets == ["c/0"]
    np.testing.assert_array_equal(arr[:], [0, 1, 2] + [5] * 10)


def test_a_partial_write_of_an_edge_chunk_keeps_what_it_does_not_cover(tmp_path: Path) -> None:
    arr = _shrunk(tmp_path, "v3")
    arr[12:] = 50
    arr[9:11] = 60
    np.testing.assert_array_equal(arr[8:], [8, 60, 60, 11, 50])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_one_element_of_a_string_array_is_written_as_the_element(
    tmp_path: Path, zarr_format: int
) -> None:
    dtype = str if zarr_format == 2 else object
    arr = aiozarr.create_array(
        LocalStore(tmp_path),
        shape=(3,),
        chunks=(2,),
        dtype=dtype,
        fill_value="",
        zarr_format=zarr_format,
    )
    arr[1] = "zz"
    arr.oindex[2] = "q"
    arr.set_basic_selection(0, "a")
    assert arr[:].tolist() == ["a", "zz", "q"]
    assert zarr.open_array(str(tmp_path), mode="r")[:].tolist() == ["a", "zz", "q"]
