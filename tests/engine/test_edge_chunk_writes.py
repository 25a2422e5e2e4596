"""A chunk at the array's far edge is merged into, never started afresh from the fill
value, even where a write covers all of it inside the array: another writer may have
grown the array and written past this handle's edge meanwhile, and its rows must stay
(zarr-python writes such a chunk from the fill value, and loses them). One element of
an object array is written as the element."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zarr

import aiozarr
from aiozarr.storage.backends.local import LocalStore


@pytest.mark.parametrize("layout", [{"chunks": (2,)}, {"chunks": (2,), "zarr_format": 2}])
def test_a_write_to_an_edge_chunk_keeps_what_another_writer_stored_past_it(
    tmp_path: Path, layout: dict[str, object]
) -> None:
    aiozarr.create_array(LocalStore(tmp_path), shape=(4,), dtype="i4", fill_value=-1, **layout)
    mine = aiozarr.open_array(LocalStore(tmp_path))
    mine.resize((5,))  # this handle's edge: row 4, the first of chunk 2
    theirs = aiozarr.open_array(LocalStore(tmp_path))
    theirs.resize((6,))
    theirs[5] = 99  # past `mine`'s edge, in the same chunk
    mine[4] = 7  # all chunk 2 holds inside `mine`'s array
    np.testing.assert_array_equal(aiozarr.open_array(LocalStore(tmp_path))[4:6], [7, 99])


def test_a_write_to_every_inner_chunk_inside_an_edge_shard_keeps_those_past_it(
    tmp_path: Path,
) -> None:
    """A shard's inner chunks past this handle's edge are kept too: another writer grew
    the array and wrote there, and replacing the shard whole lost their rows."""
    aiozarr.create_array(
        LocalStore(tmp_path), shape=(10,), chunks=(10,), shards=(100,), dtype="i4", fill_value=-1
    )
    mine = aiozarr.open_array(LocalStore(tmp_path))
    theirs = aiozarr.open_array(LocalStore(tmp_path))
    theirs.resize((20,))
    theirs[10:20] = 7  # past `mine`'s edge, in the same shard
    mine[0:10] = 1  # every inner chunk the shard holds inside `mine`'s array
    np.testing.assert_array_equal(
        aiozarr.open_array(LocalStore(tmp_path))[...], [1] * 10 + [7] * 10
    )


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
