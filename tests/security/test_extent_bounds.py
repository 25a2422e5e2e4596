"""Extents of 2**63 or more (a shape, a chunk shape, a shard shape, a resize, an append)
are refused before anything is stored: the metadata readers refuse them (numpy indexes
with int64), so an array written with one could never be opened again, not even to
resize it back."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import MetadataError
from aiozarr.storage.backends.memory import MemoryStore

LIMIT = 2**63 - 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"shape": (2**63,), "chunks": (4,)},
        {"shape": (4,), "chunks": (2**64,)},
        {"shape": (4, 4), "chunks": (2, 2**63)},
        {"shape": (4,), "chunks": (2,), "shards": (2**63,)},
    ],
    ids=["shape", "chunks", "chunks-2d", "shards"],
)
def test_a_create_with_an_extent_of_2_to_the_63_is_refused(kwargs: dict[str, Any]) -> None:
    store = MemoryStore()
    with pytest.raises(MetadataError, match="below 2\\*\\*63"):
        aiozarr.create_array(store, "a", dtype="i2", **kwargs)
    assert not aiozarr.open_group(store, mode="a").array_keys()


def test_a_resize_or_append_past_2_to_the_63_is_refused_and_the_array_still_opens() -> None:
    store = MemoryStore()
    arr = aiozarr.create_array(store, "a", shape=(LIMIT,), chunks=(4,), dtype="i2")
    arr[-1] = 7
    with pytest.raises(MetadataError, match="below 2\\*\\*63"):
        arr.resize((2**63,))
    with pytest.raises(MetadataError, match="below 2\\*\\*63"):
        arr.append(np.zeros(1, dtype="i2"))
    again = aiozarr.open_array(store, "a")
    assert again.shape == (LIMIT,) and again[-1] == 7


@pytest.mark.parametrize(
    "kwargs",
    [
        {"shape": (10,), "chunks": (1,), "shards": (2**40,)},
        {"shape": (10, 10), "chunks": (1, 1), "shards": (2**14, 2**14)},
        {"shape": (10,), "chunks": (1,), "shards": [[2**27, 2**27]]},
    ],
    ids=["regular", "2d", "rectilinear"],
)
def test_a_shard_of_too_many_inner_chunks_is_refused_at_creation(kwargs: dict[str, Any]) -> None:
    store = MemoryStore()
    with pytest.raises(MetadataError, match="inner chunks each: their index would take"):
        aiozarr.create_array(store, "a", dtype="u1", fill_value=3, **kwargs)
    assert not aiozarr.open_group(store, mode="a").array_keys()


def test_a_shard_index_of_a_gibibyte_at_most_is_accepted() -> None:
    arr = aiozarr.create_array(
        MemoryStore(), "a", shape=(10,), chunks=(1,), shards=(2**25,), dtype="u1"
    )
    assert arr.shards == (2**25,)


def test_a_chunk_edge_of_0_is_refused_where_the_axis_has_elements() -> None:
    with pytest.raises(MetadataError, match=r"chunks \(0,\): an edge of 0 holds no element"):
        aiozarr.create_array(MemoryStore(), "a", shape=(5,), chunks=(0,), dtype="i2")
    with pytest.raises(MetadataError, match=r"chunks \(0, 0\)"):
        aiozarr.create_array(MemoryStore(), "a", shape=(0, 4), chunks=(0, 0), dtype="i2")
    empty = aiozarr.create_array(MemoryStore(), "a", shape=(0, 4), chunks=(0, 2), dtype="i2")
    assert empty.chunks == (1, 2)  # stored as 1: zarr-python reads it, as aiozarr does its 0
