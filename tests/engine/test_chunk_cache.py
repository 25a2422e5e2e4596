"""The chunk cache: what a read with it asks of the store (request counts), its bound,
its recheck policies, and writes through aiozarr dropping what they replace."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr import config
from aiozarr.engine.chunk_cache import ChunkCache, as_recheck
from aiozarr.errors import AiozarrError
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.object_store import ObjectStore

SHAPE = (64, 32, 32)
CHUNKS = (8, 8, 8)
NCHUNKS = 8 * 4 * 4


def _values() -> np.ndarray:
    return np.random.default_rng(7).integers(0, 200, size=SHAPE, dtype="u1")


def _slabs() -> list[slice]:
    """Slabs of 8 rows every 4: each chunk row is read by three slabs."""
    return [slice(start, start + 8) for start in range(0, SHAPE[0] - 7, 4)]


def _write(path: Path, **options: object) -> np.ndarray:
    values = _values()
    aiozarr.create_array(LocalStore(path), data=values, chunks=CHUNKS, **options)
    return values


def _gets(store: CountingStore) -> Counter[tuple[str, object]]:
    return Counter((key, byte_range) for op, key, byte_range in store.requests if op == "get")


@pytest.mark.parametrize("sharded", [False, True], ids=["chunks", "shards"])
def test_sliding_slabs_fetch_and_decode_every_chunk_once(tmp_path: Path, sharded: bool) -> None:
    values = _write(tmp_path, **({"shards": (16, 16, 16)} if sharded else {}))
    store = CountingStore(LocalStore(tmp_path))
    arr = aiozarr.open_array(store, mode="r", cache_bytes=64 << 20, cache_recheck=False)
    for rows in _slabs():
        assert np.array_equal(arr[rows], values[rows])
    gets = _gets(store)
    data = {k: n for k, n in gets.items() if k[0] != "zarr.json"}
    assert data and max(data.values()) == 1  # every range fetched once
    stats = store.inner.stats()
    assert stats["cache_misses"] == NCHUNKS  # each chunk decoded once...
    assert stats["cache_hits"] == 2 * NCHUNKS - 4 * 4 * 2  # ...and served twice more


def test_without_the_cache_slabs_fetch_chunks_again(tmp_path: Path) -> None:
    """The control: the same slabs read each chunk row two or three times."""
    values = _write(tmp_path)
    store = CountingStore(LocalStore(tmp_path))
    arr = aiozarr.open_array(store, mode="r")
    assert arr.async_array.stored.chunk_cache is None  # off by default
    for rows in _slabs():
        assert np.array_equal(arr[rows], values[rows])
    assert max(_gets(store).values()) == 3


def test_config_turns_it_on_for_every_array(tmp_path: Path) -> None:
    values = _write(tmp_path)
    store = CountingStore(LocalStore(tmp_path))
    with config.set(cache_bytes=8 << 20):
        arr = aiozarr.open_array(store, mode="r")
    assert arr[...].tobytes() == values.tobytes()
    store.reset()
    assert np.array_equal(arr[...], values)
    assert store.counts == Counter()


def test_open_group_gives_its_arrays_the_cache(tmp_path: Path) -> None:
    values = np.arange(64, dtype="i4").reshape(8, 8)
    root = aiozarr.open_group(LocalStore(tmp_path), mode="w")
    root.create_array("a", data=values, chunks=(4, 4))
    store = CountingStore(LocalStore(tmp_path))
    arr = aiozarr.open_group(store, mode="r", cache_bytes=1 << 20)["a"]
    assert np.array_equal(arr[...], values)
    store.reset()
    assert np.array_equal(arr[...], values)
    assert store.counts == Counter()


def test_the_cache_never_holds_more_than_its_bound(tmp_path: Path) -> None:
    values = _write(tmp_path)
    bound = 20 * 512 + 1000  # a few of the 512-byte chunks, and their records
    arr = aiozarr.open_array(LocalStore(tmp_path), mode="r", cache_bytes=bound)
    pool = ChunkCache.shared(bound)
    for rows in _slabs():
        assert np.array_equal(arr[rows], values[rows])
        assert 0 < pool.nbytes <= bound
    assert np.array_equal(arr[...], values)
    assert pool.nbytes <= bound


def test_a_write_through_aiozarr_drops_what_it_replaces(tmp_path: Path) -> None:
    values = _write(tmp_path, shards=(16, 16, 16))
    arr = aiozarr.open_array(LocalStore(tmp_path), cache_bytes=32 << 20, cache_recheck=False)
    assert np.array_equal(arr[...], values)
    arr[3:5, 3:5, 3:5] = 255  # a partial write: read, merged, written
    values[3:5, 3:5, 3:5] = 255
    assert np.array_equal(arr[...], values)
    arr[:16, :16, :16] = 1  # a whole shard
    values[:16, :16, :16] = 1
    assert np.array_equal(arr[...], values)
    arr.resize((8, 32, 32))  # the shards past row 16 deleted, rows 8-15 filled
    arr.resize(SHAPE)
    values[8:] = 0
    assert np.array_equal(arr[...], values)


def test_a_second_handle_sees_writes_of_the_first(tmp_path: Path) -> None:
    """Two handles share one pool (same bound): a write through one drops the other's."""
    values = _write(tmp_path)
    reader = aiozarr.open_array(LocalStore(tmp_path), cache_bytes=4 << 20, cache_recheck=False)
    writer = aiozarr.open_array(LocalStore(tmp_path), cache_bytes=4 << 20, cache_recheck=False)
    assert np.array_equal(reader[...], values)
    writer[0:8, 0:8, 0:8] = 9
    values[0:8, 0:8, 0:8] = 9
    assert np.array_equal(reader[...], values)


def test_a_write_through_a_handle_without_the_cache_drops_it_too(tmp_path: Path) -> None:
    values = _write(tmp_path, shards=(16, 16, 16))
    reader = aiozarr.open_array(LocalStore(tmp_path), cache_bytes=6 << 20, cache_recheck=False)
    writer = aiozarr.open_array(LocalStore(tmp_path))  # no cache of its own
    assert np.array_equal(reader[...], values)
    writer[20:30, :, 5] = 3
    values[20:30, :, 5] = 3
    assert np.array_equal(reader[...], values)


def test_an_overwrite_through_aiozarr_drops_what_it_deleted(tmp_path: Path) -> None:
    """An array made again over the old one (`overwrite=True`) with no data: its chunks
    were deleted, none written; a handle still open reads the fill value, not its cache."""
    values = _write(tmp_path)
    reader = aiozarr.open_array(LocalStore(tmp_path), cache_bytes=4 << 20, cache_recheck=False)
    assert np.array_equal(reader[...], values)
    aiozarr.create_array(
        LocalStore(tmp_path), shape=SHAPE, dtype=values.dtype, chunks=CHUNKS, overwrite=True
    )
    assert not reader[...].any()


def test_deleting_a_member_drops_what_the_cache_held_of_it(tmp_path: Path) -> None:
    group = aiozarr.create_group(LocalStore(tmp_path))
    values = _values()
    group.create_array("a", data=values, chunks=CHUNKS)
    reader = aiozarr.open_array(LocalStore(tmp_path), "a", cache_bytes=4 << 20, cache_recheck=False)
    assert np.array_equal(reader[...], values)
    del group["a"]
    group.create_array("a", shape=SHAPE, dtype=values.dtype, chunks=CHUNKS)
    assert not reader[...].any()


@pytest.mark.parametrize(
    ("text", "policy"),
    [
        ("open", "open"),
        ("true", True),
        ("False", False),
        ("30", 30.0),
        (2, 2.0),
        (True, True),
        (np.int64(30), 30.0),
    ],
)
def test_recheck_policies_read(text: object, policy: object) -> None:
    assert as_recheck(text) == policy


@pytest.mark.parametrize("bad", ["sometimes", -1, None])
def test_a_bad_recheck_policy_is_refused_naming_it(bad: object) -> None:
    with pytest.raises(AiozarrError, match="cache_recheck"):
        as_recheck(bad)


def test_a_bad_bound_is_refused(tmp_path: Path) -> None:
    _write(tmp_path)
    with pytest.raises(AiozarrError, match="cache_bytes"):
        aiozarr.open_array(LocalStore(tmp_path), cache_bytes=-1)


def test_a_bound_of_numpy_s_integers_is_a_number_of_bytes(tmp_path: Path) -> None:
    """A bound worked out with numpy (`np.prod(shape) * itemsize`) was refused as "not a
    number of bytes"; it is one pool with the same bound as a Python int."""
    _write(tmp_path)
    arr = aiozarr.open_array(LocalStore(tmp_path), cache_bytes=np.int64(1 << 20))
    cache = arr.async_array.stored.chunk_cache
    assert cache is not None and cache.pool is ChunkCache.shared(1 << 20)


# -- on the emulator: versions are ETags, revalidation is a conditional GET -----------------


def _on_emulator(make: Callable[..., ObjectStore]) -> tuple[ObjectStore, np.ndarray]:
    """A 16-shard array (4 x 2 x 2 shards of 16^3, inner chunks of 8^3) on the emulator."""
    store = make()
    values = _values()
    aiozarr.create_array(store, data=values, chunks=CHUNKS, shards=(16, 16, 16))
    return store, values


def test_a_second_full_read_under_open_makes_no_request(
    emulator_s3_store: Callable[..., ObjectStore],
) -> None:
    store, values = _on_emulator(emulator_s3_store)
    counting = CountingStore(store)
    arr = aiozarr.open_array(counting, mode="r", cache_bytes=16 << 20)  # recheck "open"
    assert np.array_equal(arr[...], values)
    counting.reset()
    assert np.array_equal(arr[...], values)
    assert counting.counts == Counter()


def test_under_true_every_read_is_one_conditional_request_per_object(
    emulator_s3_store: Callable[..., ObjectStore],
) -> None:
    store, values = _on_emulator(emulator_s3_store)
    counting = CountingStore(store)
    arr = aiozarr.open_array(counting, mode="r", cache_bytes=16 << 20, cache_recheck=True)
    assert np.array_equal(arr[...], values)
    for _ in range(2):
        counting.reset()
        assert np.array_equal(arr[...], values)
        assert counting.counts == Counter({"conditional_get": 16})
        assert counting.bytes_read == 0  # each answered 304
        assert {key for _, key, _ in counting.requests} == {
            f"c/{i}/{j}/{k}" for i in range(4) for j in range(2) for k in range(2)
        }


def test_a_reopened_array_revalidates_once_under_open(
    emulator_s3_store: Callable[..., ObjectStore],
) -> None:
    store, values = _on_emulator(emulator_s3_store)
    counting = CountingStore(store)
    first = aiozarr.open_array(counting, mode="r", cache_bytes=16 << 20)
    assert np.array_equal(first[...], values)
    again = aiozarr.open_array(counting, mode="r", cache_bytes=16 << 20)
    counting.reset()
    assert np.array_equal(again[...], values)
    assert counting.counts == Counter({"conditional_get": 16})
    assert counting.bytes_read == 0
    counting.reset()
    assert np.array_equal(again[...], values)  # checked since it was opened
    assert counting.counts == Counter()


def _without_versions(recheck: object) -> tuple[CountingStore, aiozarr.Array, np.ndarray, Any]:
    """An array in a zarr-python memory store (`ZarrStore`: its answers carry no
    version), opened with the cache through a counting store."""
    zarr = pytest.importorskip("zarr")
    from aiozarr.storage.backends.zarr_store import ZarrStore

    held = zarr.storage.MemoryStore()
    values = _values()
    aiozarr.create_array(ZarrStore(held), data=values, chunks=CHUNKS)
    store = CountingStore(ZarrStore(held))
    arr = aiozarr.open_array(store, mode="r", cache_bytes=32 << 20, cache_recheck=recheck)
    return store, arr, values, held


def _rewrite(held: Any, values: np.ndarray) -> None:
    """Another writer (zarr-python) replaces every chunk."""
    import zarr

    zarr.open_array(store=held, mode="r+")[...] = values


@pytest.mark.parametrize("recheck", [False, "open", 3600.0])
def test_chunks_without_a_version_are_served_while_their_policy_needs_no_check(
    recheck: object,
) -> None:
    store, arr, values, _ = _without_versions(recheck)
    assert np.array_equal(arr[...], values)
    store.reset()
    hits = store.inner.stats()["cache_hits"]
    assert np.array_equal(arr[...], values)
    assert store.counts == Counter()  # every chunk from the cache
    assert store.inner.stats()["cache_hits"] - hits == NCHUNKS


def test_chunks_without_a_version_are_read_again_once_a_check_is_due() -> None:
    """No request can revalidate them: past the policy's threshold they are dropped
    and read as usual, never served stale and never checked with a condition."""
    store, arr, values, held = _without_versions("open")
    assert np.array_equal(arr[...], values)
    _rewrite(held, values + 1)
    assert np.array_equal(arr[...], values)  # "open": as the array was opened
    again = aiozarr.open_array(store, mode="r", cache_bytes=32 << 20)
    store.reset()
    assert np.array_equal(again[...], values + 1)  # reopened: read afresh
    assert store.counts == Counter({"get": NCHUNKS})
    store.reset()
    assert np.array_equal(again[...], values + 1)  # and kept again
    assert store.counts == Counter()


def test_chunks_without_a_version_past_their_age_are_read_again() -> None:
    store, arr, values, held = _without_versions(0.0)
    assert np.array_equal(arr[...], values)
    _rewrite(held, values + 2)
    store.reset()
    assert np.array_equal(arr[...], values + 2)
    assert store.counts == Counter({"get": NCHUNKS})


def test_chunks_without_a_version_are_not_kept_where_every_read_checks() -> None:
    store, arr, values, _ = _without_versions(True)
    pool = arr.async_array.stored.chunk_cache
    assert pool is not None
    assert np.array_equal(arr[...], values)
    assert pool.pool.objects_under(pool.place, "") == []
    store.reset()
    assert np.array_equal(arr[...], values)
    assert store.counts == Counter({"get": NCHUNKS})


def test_a_read_only_handle_sees_a_writable_ones_writes(tmp_path: Path) -> None:
    """Stores compare their read-only flag: the cache keys both handles' chunks alike,
    so a write through one drops what the other holds."""
    _write(tmp_path)
    reader = aiozarr.open_array(str(tmp_path), mode="r", cache_bytes=8 << 20)
    assert reader.store.read_only
    reader[:8]
    aiozarr.open_array(str(tmp_path))[:8] = 7
    assert (reader[:8] == 7).all()


@pytest.mark.parametrize("recheck", [False, 30])
def test_an_array_created_again_with_other_chunks_is_never_served_the_old_ones(
    tmp_path: Path, recheck: object
) -> None:
    """Under a policy that serves without checking, the chunks of an array since
    created again elsewhere (another process) with another chunk shape or data type are
    not served for it: read afresh, as a chunk of the new array."""
    aiozarr.create_array(LocalStore(tmp_path), data=np.arange(16, dtype="i4"), chunks=(4,))
    aiozarr.open_array(LocalStore(tmp_path), cache_bytes=8 << 20, cache_recheck=recheck)[:]
    code = (
        "import aiozarr, numpy as np; "
        f"aiozarr.create_array({str(tmp_path)!r}, data=np.arange(16) * 0.5, chunks=(8,), "
        "overwrite=True)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    again = aiozarr.open_array(LocalStore(tmp_path), cache_bytes=8 << 20, cache_recheck=recheck)
    np.testing.assert_array_equal(again[:], np.arange(16) * 0.5)


def test_a_recheck_policy_it_does_not_know_is_named_as_given() -> None:
    with pytest.raises(AiozarrError, match="cache_recheck='sometimes'"):
        as_recheck("sometimes")


def _rooted_apart_local(tmp_path: Path) -> tuple[Any, Any]:
    return LocalStore(tmp_path), LocalStore(tmp_path / "a")


def _rooted_apart_s3(make: Callable[..., ObjectStore]) -> tuple[Any, Any]:
    group = make()
    return group, make(prefix=f"{group.obstore.prefix}/a")


@pytest.mark.parametrize("where", ["local", "s3"])
def test_handles_rooted_apart_drop_each_others_written_chunks(
    tmp_path: Path, emulator_s3_store: Callable[..., ObjectStore], where: str
) -> None:
    """A group's store and a store opened at one of its arrays name one chunk by two
    keys (`a/c/0/0/0`, `c/0/0/0`): a write through either drops what the other cached."""
    group_store, array_store = (
        _rooted_apart_local(tmp_path) if where == "local" else _rooted_apart_s3(emulator_s3_store)
    )
    values = _values()
    aiozarr.create_array(group_store, "a", data=values, chunks=CHUNKS)
    through_group = aiozarr.open_array(group_store, "a", cache_bytes=8 << 20, cache_recheck=False)
    at_array = aiozarr.open_array(array_store, cache_bytes=8 << 20, cache_recheck=False)
    assert np.array_equal(through_group[...], values)
    assert np.array_equal(at_array[...], values)
    at_array[0:8] = 1
    values[0:8] = 1
    assert np.array_equal(through_group[...], values)
    through_group[8:16] = 2
    values[8:16] = 2
    assert np.array_equal(at_array[...], values)


def test_a_pool_goes_with_the_last_array_using_it(tmp_path: Path) -> None:
    """Each bound's pool lives only while an array uses it: opens with many distinct
    `cache_bytes` leave nothing held once their arrays are gone."""
    values = _write(tmp_path)
    bound = (1 << 20) + 12345  # a bound of this test's own
    arr = aiozarr.open_array(LocalStore(tmp_path), cache_bytes=bound)
    assert np.array_equal(arr[...], values)
    pool = weakref.ref(ChunkCache.shared(bound))
    assert pool() is not None and pool().nbytes > 0  # the array's pool, holding chunks
    writer = aiozarr.open_array(LocalStore(tmp_path), mode="r+")
    writer[0:8, 0:8, 0:8] = 0  # a write through another handle still reaches the pool
    values[0:8, 0:8, 0:8] = 0
    assert np.array_equal(arr[...], values)
    del arr
    gc.collect()
    assert pool() is None


def test_a_chunk_revalidated_with_new_bytes_counts_as_a_miss(tmp_path: Path) -> None:
    """A changed chunk's revalidation answers its new bytes, decoded there: it was
    counted neither a hit nor a miss, so hits and misses fell short of the chunks read."""
    import zarr

    aiozarr.create_array(LocalStore(tmp_path), data=np.arange(8, dtype="i4"), chunks=(4,))
    arr = aiozarr.open_array(str(tmp_path), cache_bytes=1 << 20, cache_recheck=True)
    arr[...]
    zarr.open_array(str(tmp_path), mode="r+")[0] = 100  # another writer: chunk 0 changes
    before = arr.store.stats()
    assert arr[...].tolist() == [100, *range(1, 8)]
    after = arr.store.stats()
    assert after["cache_hits"] - before["cache_hits"] == 1
    assert after["cache_misses"] - before["cache_misses"] == 1
