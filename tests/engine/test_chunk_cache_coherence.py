"""The chunk cache never serves what a reader would not decode now: chunks decoded
under other metadata, chunks a write made stale whose record was evicted first, object
chunks a caller changed; and it never keeps a store alive."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path

import numcodecs
import numpy as np
import pytest

import aiozarr
from aiozarr.engine.chunk_cache import ChunkCache
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore


def _big_endian(path: Path) -> None:
    """Another writer's change of the bytes codec to big endian (chunks as they were)."""
    meta = json.loads((path / "zarr.json").read_text())
    for codec in meta["codecs"]:
        if codec["name"] == "bytes":
            codec["configuration"] = {"endian": "big"}
    (path / "zarr.json").write_text(json.dumps(meta))


def _fortran_order(path: Path) -> None:
    """Another writer's change of a v2 array's order to "F" (chunks as they were)."""
    meta = json.loads((path / ".zarray").read_text())
    meta["order"] = "F"
    (path / ".zarray").write_text(json.dumps(meta))


@pytest.mark.parametrize("recheck", [True, "open"])
@pytest.mark.parametrize("change", [_big_endian, _fortran_order], ids=["endian", "v2-order"])
def test_chunks_decoded_under_other_metadata_are_not_served(
    tmp_path: Path, change: object, recheck: object
) -> None:
    """The chunks' bytes and versions are unchanged, their decoded values are not: a
    reader opened on the new metadata decodes them afresh."""
    fmt = 2 if change is _fortran_order else 3
    values = np.arange(16, dtype="i4").reshape(4, 4)
    aiozarr.create_array(
        LocalStore(tmp_path), data=values, chunks=(4, 4), compressors=None, zarr_format=fmt
    )
    before = aiozarr.open_array(str(tmp_path), cache_bytes=1 << 20, cache_recheck=recheck)
    np.testing.assert_array_equal(before[:], values)
    change(tmp_path)  # type: ignore[operator]
    fresh = aiozarr.open_array(str(tmp_path))[:]
    assert not np.array_equal(fresh, values)
    after = aiozarr.open_array(str(tmp_path), cache_bytes=1 << 20, cache_recheck=recheck)
    np.testing.assert_array_equal(after[:], fresh)


def test_a_write_drops_chunks_whose_record_was_evicted_first(tmp_path: Path) -> None:
    """A small bound evicts a shard's record while chunks of it are used: a write
    through the same handle still drops them, and none is served for a new record of
    the shard (chunks of a store without versions all carry one version)."""
    import zarr

    store = zarr.storage.LocalStore(tmp_path)
    values = np.arange(64.0).reshape(4, 16)
    aiozarr.create_array(store, data=values, shards=(4, 8), chunks=(4, 4), fill_value=0)
    arr = aiozarr.open_array(store, mode="r+", cache_bytes=512)
    arr[:, 0:8], arr[:, 0:4], arr[:, 4:8], arr[:, 8:12]
    arr[:, 4:12] = -1.0
    values[:, 4:12] = -1.0
    arr[:, 0:4]  # a new record of the first shard
    np.testing.assert_array_equal(arr[:, 4:8], values[:, 4:8])
    np.testing.assert_array_equal(arr[:], values)


def _json_values(path: Path) -> np.ndarray:
    values = np.empty(2, dtype=object)
    values[0], values[1] = [1, 2, 3], {"k": 1}
    arr = aiozarr.create_array(
        str(path), shape=(2,), chunks=(2,), dtype=object, zarr_format=2,
        filters=[numcodecs.JSON()],
    )  # fmt: skip
    arr[:] = values
    return values


def test_changing_an_element_of_a_read_leaves_the_next_read_as_stored(tmp_path: Path) -> None:
    """Chunks of objects are not kept: a copy would share its elements with the cache."""
    _json_values(tmp_path)
    arr = aiozarr.open_array(str(tmp_path), cache_bytes=1 << 20)
    arr[:][0][0] = 999
    assert arr[:][0] == [1, 2, 3]


def test_chunks_of_objects_are_not_held_past_the_bound(tmp_path: Path) -> None:
    """An object chunk's bytes count its pointers, not its strings: none is kept."""
    bound = (1 << 20) + 11  # a pool of its own
    text = np.array(["x" * 100_000] * 40, dtype=object)
    aiozarr.create_array(str(tmp_path), data=text, chunks=(10,), dtype=str)
    arr = aiozarr.open_array(str(tmp_path), cache_bytes=bound)
    assert (arr[:] == text).all()
    assert ChunkCache.shared(bound).nbytes == 0
    assert (arr[:] == text).all()  # read again, as stored


#: Values of an in-memory array read through the cache (2 MB: small reads are not).
_BIG = 1 << 18


@pytest.mark.parametrize("read_only", [False, True])
def test_the_pool_keeps_no_store_alive(read_only: bool) -> None:
    """Once its arrays and the store are gone, an in-memory store is collected: the
    pool holds no reference to it (its data could be any size)."""
    bound = (8 << 20) + 13
    refs = []
    for _ in range(3):
        store = MemoryStore()
        aiozarr.create_array(store, data=np.ones(_BIG), chunks=(_BIG // 4,))
        opened = store.with_read_only(True) if read_only else store
        arr = aiozarr.open_array(opened, cache_bytes=bound)
        assert (arr[:] == 1).all()
        assert ChunkCache.shared(bound).nbytes > 0
        refs.append(weakref.ref(store))
        del store, opened, arr
    gc.collect()
    assert [ref() for ref in refs] == [None, None, None]


def test_a_store_held_keeps_its_chunks_for_a_reopened_array() -> None:
    """While the store lives, an array opened again over it finds what an earlier
    handle cached, and writes through one handle drop the other's chunks."""
    store = MemoryStore()
    aiozarr.create_array(store, data=np.arange(_BIG, dtype="f8"), chunks=(_BIG // 4,))
    first = aiozarr.open_array(store.with_read_only(True), cache_bytes=8 << 20)
    first[:]
    again = aiozarr.open_array(store.with_read_only(True), cache_bytes=8 << 20)
    hits = again.store.stats()["cache_hits"]
    np.testing.assert_array_equal(again[:], np.arange(_BIG, dtype="f8"))
    assert again.store.stats()["cache_hits"] - hits == 4
    aiozarr.open_array(store, mode="r+")[:] = 5.0
    assert (first[:] == 5).all() and (again[:] == 5).all()
