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


@pytest.mark.parametrize("recheck", ["open", False, 30.0, True])
@pytest.mark.parametrize("how", ["getitem", "read_many"])
def test_many_shards_cached_in_part_and_rewritten_once_are_read_new(
    tmp_path: Path, recheck: Any, how: str
) -> None:
    """Each try forgot the cached part of one stale shard only, so six shards rewritten
    once (nothing changing during the read) used up the retries and the read failed."""
    aiozarr.create_array(
        str(tmp_path), data=np.arange(48, dtype="i4"), chunks=(2,), shards=(8,), compressors=None
    )
    handle = aiozarr.open_array(str(tmp_path), cache_bytes=1 << 20, cache_recheck=recheck)
    for start in range(0, 48, 8):
        handle[start : start + 2]  # the first inner chunk of every shard cached
    _rewrite(tmp_path, np.arange(48, dtype="i4") + 100)
    np.testing.assert_array_equal(_reads(handle, how), np.arange(48) + 100)


@pytest.mark.parametrize("recheck", ["open", False, 30.0])
def test_a_shard_deleted_after_its_own_handle_cached_part_of_it(
    tmp_path: Path, recheck: Any
) -> None:
    """The handle's shard index is cached too, so the rest was located by it and its
    ranges answered "not found": old cached chunks beside the fill value."""
    aiozarr.create_array(
        str(tmp_path), data=np.arange(1, 9, dtype="i4"), shards=(8,), chunks=(2,), compressors=None
    )
    handle = aiozarr.open_array(str(tmp_path), cache_bytes=1 << 20, cache_recheck=recheck)
    handle[0:2]
    _rewrite(tmp_path, np.zeros(8, dtype="i4"))  # the fill value: the shard is deleted
    got = handle[:]
    assert np.array_equal(got, np.arange(1, 9)) or np.array_equal(got, np.zeros(8)), got


@pytest.mark.parametrize("recheck", ["open", False, 30.0])
def test_a_shard_without_versions_is_one_version_across_a_read_many(recheck: Any) -> None:
    """One selection served a shard of a zarr-python store whole from the cache, another
    of the same `read_many` read it from the store as another writer left it: elements
    0-1 came back old in one selection and new in the other."""
    import zarr

    store = zarr.storage.MemoryStore()
    aiozarr.create_array(store, data=OLD, shards=(8,), chunks=(2,), compressors=None)
    handle = aiozarr.open_array(store, cache_bytes=1 << 20, cache_recheck=recheck)
    handle[0:2]  # the first inner chunk cached
    new = np.arange(1, 9, dtype="i4")
    zarr.open_array(store, mode="r+")[:] = new  # unseen by aiozarr's cache
    first, both = aiozarr.read_many([(handle, slice(0, 2)), (handle, slice(0, 4))])
    assert np.array_equal(first, both[:2]), (first, both)
    np.testing.assert_array_equal(both, new[:4])


@pytest.mark.parametrize("apart", ["read-only", "rooted apart"])
@pytest.mark.parametrize("recheck", ["open", False])
def test_two_handles_of_one_shard_read_it_from_one_version(
    tmp_path: Path, apart: str, recheck: Any
) -> None:
    """The cache served one handle's selection from the shard as it was; another
    handle's selection of the same `read_many` read the rest of it as another writer
    left it. Selections shared their pins only between equal stores, and a read-only
    handle's store (or one rooted at the array) is not equal to a writable one's."""
    aiozarr.create_array(str(tmp_path / "a"), data=OLD, shards=(8,), chunks=(2,), fill_value=0)
    cached = aiozarr.open_array(
        str(tmp_path), "a", mode="r", cache_bytes=1 << 20, cache_recheck=recheck
    )
    other = aiozarr.open_array(
        str(tmp_path / "a") if apart == "rooted apart" else str(tmp_path),
        "" if apart == "rooted apart" else "a",
        mode="r" if apart == "rooted apart" else "r+",
        cache_bytes=1 << 20,
        cache_recheck=recheck,
    )
    cached[0:2]  # the first inner chunk cached
    new = np.arange(1, 9, dtype="i4")
    _rewrite(tmp_path / "a", new)
    first, second = aiozarr.read_many([(cached, slice(0, 2)), (other, slice(2, 4))])
    got = np.concatenate([first, second])
    assert np.array_equal(got, OLD[:4]) or np.array_equal(got, new[:4]), got


def _two_handles_of_six_shards_rewritten(
    tmp_path: Path, recheck: Any, other_cache: int | None
) -> tuple[aiozarr.Array, aiozarr.Array, np.ndarray]:
    """Two handles of an array of six shards, the first inner chunk of each cached by the
    first, and the array rewritten since by another writer: `(cached, other, new)`."""
    path = tmp_path / "a"
    aiozarr.create_array(str(path), data=np.arange(48, dtype="i4"), chunks=(2,), shards=(8,))
    cached = aiozarr.open_array(str(path), cache_bytes=1 << 20, cache_recheck=recheck)
    other = aiozarr.open_array(str(path), mode="r", cache_bytes=other_cache, cache_recheck=recheck)
    for start in range(0, 48, 8):
        cached[start : start + 2]
    new = np.arange(48, dtype="i4") + 100
    _rewrite(path, new)
    return cached, other, new


@pytest.mark.parametrize("other_cache", [None, 2 << 20])
@pytest.mark.parametrize("recheck", ["open", False, 30.0])
def test_shards_another_handle_s_cache_served_and_rewritten_once_are_read_new(
    tmp_path: Path, recheck: Any, other_cache: int | None
) -> None:
    """One handle's cache served part of six shards, another handle (uncached, or its
    own pool) read the rest of them as another writer left them: the stale chunks were
    forgotten in the reading handle's cache only, not in the one that served them, so
    each try forgot one shard and six shards rewritten once used up the retries."""
    cached, other, new = _two_handles_of_six_shards_rewritten(tmp_path, recheck, other_cache)
    n, starts = 6, range(0, 48, 8)
    got = aiozarr.read_many(
        [(cached, slice(s, s + 2)) for s in starts] + [(other, slice(s + 2, s + 4)) for s in starts]
    )
    np.testing.assert_array_equal(np.concatenate(got[:n]), new.reshape(n, 8)[:, :2].ravel())
    np.testing.assert_array_equal(np.concatenate(got[n:]), new.reshape(n, 8)[:, 2:4].ravel())


@pytest.mark.parametrize("other_cache", [None, 2 << 20])
@pytest.mark.parametrize("recheck", ["open", False, 30.0])
def test_whole_shards_another_handle_s_cache_served_part_of_are_read_new(
    tmp_path: Path, recheck: Any, other_cache: int | None
) -> None:
    """As above, with the other handle reading the six shards whole (one request each,
    no index to show them stale first): each try met one stale answer, forgot its shard
    and started over, and six shards rewritten once used up the retries."""
    cached, other, new = _two_handles_of_six_shards_rewritten(tmp_path, recheck, other_cache)
    n, starts = 6, range(0, 48, 8)
    got = aiozarr.read_many(
        [(cached, slice(s, s + 2)) for s in starts] + [(other, slice(s, s + 8)) for s in starts]
    )
    np.testing.assert_array_equal(np.concatenate(got[:n]), new.reshape(n, 8)[:, :2].ravel())
    np.testing.assert_array_equal(np.concatenate(got[n:]), new)
