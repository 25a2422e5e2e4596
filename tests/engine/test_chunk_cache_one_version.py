"""A read never mixes two versions of a shard, the cache's chunks included: a shard
another writer rewrote (or deleted) after a handle cached part of it is read whole from
one version, by every policy that serves cached chunks without asking."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr

OLD = np.full(8, -1, dtype="i4")


def _rewrite(path: Path, new: np.ndarray) -> None:
    import zarr  # another writer: aiozarr does not see its writes

    zarr.open_array(str(path), mode="r+")[:] = new


def _reads(handle: aiozarr.Array, how: str) -> np.ndarray:
    if how == "getitem":
        return handle[:]
    if how == "read_many":
        return aiozarr.read_many([(handle, slice(None))])[0]
    return np.concatenate(aiozarr.read_many([(handle, slice(0, 4)), (handle, slice(4, 8))]))


@pytest.mark.parametrize("how", ["getitem", "read_many", "two-selections"])
@pytest.mark.parametrize("recheck", ["open", False, 30.0])
@pytest.mark.parametrize("new", [np.arange(1, 9, dtype="i4"), np.zeros(8, dtype="i4")])
def test_a_shard_cached_in_part_is_read_from_one_version(
    tmp_path: Path, how: str, recheck: Any, new: np.ndarray
) -> None:
    aiozarr.create_array(str(tmp_path), data=OLD, shards=(8,), chunks=(4,), compressors=None)
    service = aiozarr.open_array(str(tmp_path), cache_bytes=1 << 20, cache_recheck=recheck)
    other = aiozarr.open_array(str(tmp_path), cache_bytes=1 << 20, cache_recheck=recheck)
    other[0:4]  # the first inner chunk cached, from the shard as it was
    _rewrite(tmp_path, new)  # zeros are the fill value: the shard is deleted
    got = _reads(service, how)
    assert np.array_equal(got, OLD) or np.array_equal(got, new), got


@pytest.mark.parametrize("recheck", ["open", 30.0])
def test_a_shard_of_a_store_without_versions_is_served_whole_or_read_whole(recheck: Any) -> None:
    """A zarr-python store tells no versions: the cached part of a shard cannot be
    shown to be the version the rest is read from, so the whole shard is read again."""
    import zarr

    store = zarr.storage.MemoryStore()
    aiozarr.create_array(store, data=OLD, shards=(8,), chunks=(4,), compressors=None)
    service = aiozarr.open_array(store, cache_bytes=1 << 20, cache_recheck=recheck)
    aiozarr.open_array(store, cache_bytes=1 << 20, cache_recheck=recheck)[0:4]
    new = np.arange(1, 9, dtype="i4")
    zarr.open_array(store, mode="r+")[:] = new  # unseen by aiozarr's cache
    np.testing.assert_array_equal(service[:], new)
    np.testing.assert_array_equal(service[:], new)  # and nothing of before is kept
