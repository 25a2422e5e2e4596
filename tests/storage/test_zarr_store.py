"""Stores users already hold: zarr-python 3 stores through `ZarrStore`, obstore stores as
they are. The store contract on the adapter; arrays written by one library into the
store object and read by the other; ranges batched through `get_partial_values`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.backends.zarr_store import ZarrStore
from aiozarr.testing.store_contract import StoreContract

zarr = pytest.importorskip("zarr")
obstore_store = pytest.importorskip("obstore.store")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


class TestZarrMemoryStore(StoreContract):
    has_versions = False

    @pytest.fixture
    def store(self) -> ZarrStore:
        return ZarrStore(zarr.storage.MemoryStore())


class TestZarrLocalStore(StoreContract):
    has_versions = False

    @pytest.fixture
    def store(self, tmp_path: Path) -> ZarrStore:
        return ZarrStore(zarr.storage.LocalStore(tmp_path / "store"))


def _zarr_stores(tmp_path: Path) -> list[Any]:
    return [zarr.storage.MemoryStore(), zarr.storage.LocalStore(tmp_path / "local")]


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_aiozarr_reads_what_zarr_python_wrote_into_the_store_object(
    tmp_path: Path, kind: str
) -> None:
    store = _zarr_stores(tmp_path)[kind == "local"]
    data = np.arange(600, dtype="f4").reshape(20, 30)
    z = zarr.create_array(
        store, name="g/x", shape=data.shape, dtype="f4", chunks=(4, 5), shards=(8, 10)
    )
    z[...] = data
    a = aiozarr.open_array(store, "g/x")
    assert isinstance(a.store, ZarrStore)
    assert np.array_equal(a[...], data)
    assert np.array_equal(a.vindex[[0, 19], [29, 0]], data[[0, 19], [29, 0]])
    assert aiozarr.open_group(store, "g").keys() == ["x"]


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_zarr_python_reads_what_aiozarr_wrote_into_the_store_object(
    tmp_path: Path, kind: str
) -> None:
    store = _zarr_stores(tmp_path)[kind == "local"]
    data = np.arange(600, dtype="i8").reshape(30, 20)
    a = aiozarr.create_array(
        store, "y", shape=data.shape, dtype="i8", chunks=(5, 5), shards=(10, 10)
    )
    a[...] = data
    a[0:5, 0:5] = 0  # a chunk of fill values is deleted through the adapter
    data[0:5, 0:5] = 0
    assert np.array_equal(zarr.open_array(store, path="y")[...], data)


def test_a_read_only_zarr_store_stays_read_only() -> None:
    store = zarr.storage.MemoryStore()
    zarr.create_array(store, name="r", shape=(4,), dtype="u1")
    a = aiozarr.open_array(store.with_read_only(True), "r")
    assert a.read_only
    with pytest.raises(PermissionError):
        a[:] = 1
    assert aiozarr.open_array(store, "r", mode="r").read_only


class _Counting(zarr.storage.MemoryStore):  # type: ignore[misc,name-defined]
    calls: list[tuple[str, int]]

    async def get_partial_values(self, prototype: Any, key_ranges: Any) -> Any:
        key_ranges = list(key_ranges)
        self.calls.append(("get_partial_values", len(key_ranges)))
        return await super().get_partial_values(prototype, key_ranges)

    async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
        self.calls.append(("get", 1))
        return await super().get(key, prototype, byte_range)


async def test_ranges_of_a_shard_are_one_get_partial_values() -> None:
    store = _Counting()
    store.calls = []
    z = zarr.create_array(store, name="s", shape=(64,), dtype="u1", chunks=(4,), shards=(64,))
    z[...] = np.arange(64, dtype="u1")
    a = await aiozarr.open_array_async(store, "s")
    with aiozarr.config.set(coalesce_gap_bytes=0):
        store.calls = []
        values = await a.get_coordinate_selection(([0, 20, 40, 60],))
    assert list(values) == [0, 20, 40, 60]
    # one index read, then the four inner chunks' ranges in ONE get_partial_values
    partial = [n for kind, n in store.calls if kind == "get_partial_values"]
    assert 4 in partial, store.calls


def test_an_obstore_store_is_taken_as_it_is() -> None:
    store = obstore_store.MemoryStore()
    a = aiozarr.create_array(store, "o", shape=(6,), dtype="i2", chunks=(2,))
    a[:] = np.arange(6)
    assert isinstance(a.store, ObjectStore)
    assert list(aiozarr.open_array(store, "o")[:]) == list(range(6))
    assert aiozarr.open_array(store, "o", mode="r").read_only
    assert aiozarr.open_group(store).keys() == ["o"]


def test_zarr_store_errors_are_store_errors() -> None:
    class Broken(zarr.storage.MemoryStore):  # type: ignore[misc,name-defined]
        async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
            raise RuntimeError("disk on fire")

    with pytest.raises(aiozarr.errors.StoreError, match="disk on fire"):
        aiozarr.open_array(Broken(), "x")


def test_a_read_the_zarr_store_does_not_implement_is_no_refused_delete() -> None:
    # NotImplementedError is a refused delete only from `delete` (a zip's, of a key it
    # holds); from a read it is the store's failure, named as such
    class NoReads(zarr.storage.MemoryStore):  # type: ignore[misc,name-defined]
        async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
            raise NotImplementedError("no reads here")

    with pytest.raises(aiozarr.errors.StoreError, match="NotImplementedError: no reads") as got:
        aiozarr.open_array(NoReads(), "x")
    assert not isinstance(got.value, aiozarr.errors.DeleteUnsupportedError)


def test_a_zarr_memory_store_is_one_place_with_its_own_dict_only(tmp_path: Path) -> None:
    """zarr's in-memory stores compare their contents; as places (what caches key by)
    two are one only when they hold one dict. Local stores are one place by their root."""
    one, twin = zarr.storage.MemoryStore(), zarr.storage.MemoryStore()
    assert one == twin  # zarr's own equality: both empty
    assert ZarrStore(one) != ZarrStore(twin)
    assert ZarrStore(one) == ZarrStore(zarr.storage.MemoryStore(one._store_dict))
    local = tmp_path / "local"
    assert ZarrStore(zarr.storage.LocalStore(local)) == ZarrStore(zarr.storage.LocalStore(local))


def test_two_zarr_memory_stores_with_equal_contents_never_share_cached_chunks() -> None:
    values = np.arange(64, dtype="i4").reshape(8, 8)
    first, second = zarr.storage.MemoryStore(), zarr.storage.MemoryStore()
    for held in (first, second):
        aiozarr.create_array(ZarrStore(held), data=values, chunks=(4, 4))
    options = {"cache_bytes": 8 << 20, "cache_recheck": False}
    a = aiozarr.open_array(ZarrStore(first), mode="a", **options)
    b = aiozarr.open_array(ZarrStore(second), mode="a", **options)
    assert np.array_equal(a[...], values) and np.array_equal(b[...], values)
    b[...] = values + 1  # through aiozarr: drops what b's place holds
    assert np.array_equal(b[...], values + 1)
    assert np.array_equal(a[...], values)
