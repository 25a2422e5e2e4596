"""What a dask task gets of an array: the settings it was opened with, writes that land
or raise (never vanish), and `store`'s write target read back (`return_stored`)."""

from __future__ import annotations

import os
import pickle
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import aiozarr  # noqa: E402
from aiozarr.dask import store  # noqa: E402
from aiozarr.errors import ReadOnlyError  # noqa: E402
from aiozarr.storage.backends.memory import MemoryStore  # noqa: E402
from aiozarr.storage.backends.zip import ZipStore  # noqa: E402


@pytest.fixture(scope="module")
def client() -> Iterator[distributed.Client]:
    """A cluster in this process: its tasks get pickled copies of the arrays."""
    with (
        distributed.LocalCluster(
            n_workers=1, processes=False, dashboard_address=None, worker_dashboard_address=None
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as c,
    ):
        yield c


def _replace_chunks(source: Path, target: Path) -> None:
    """Another writer's chunks, put in place behind aiozarr's back (new files)."""
    for chunk in (source / "c").iterdir():
        staged = target / f".{chunk.name}.staged"
        shutil.copyfile(chunk, staged)
        os.replace(staged, target / "c" / chunk.name)


def test_a_pickled_array_keeps_the_cache_settings_it_was_opened_with(tmp_path: Path) -> None:
    for name, value in (("a.zarr", 1), ("b.zarr", 2)):
        arr = aiozarr.create_array(str(tmp_path / name), shape=(4,), dtype="i4", chunks=(2,))
        arr[...] = value
    with aiozarr.config.set(cache_bytes=1 << 20, cache_recheck=False):  # static data
        arr = aiozarr.open_array(str(tmp_path / "a.zarr"), cache_recheck=True)
        task = pickle.loads(pickle.dumps(arr))  # what a dask task gets
        np.testing.assert_array_equal(task[...], [1] * 4)  # cached
        _replace_chunks(tmp_path / "b.zarr", tmp_path / "a.zarr")
        np.testing.assert_array_equal(task[...], [2] * 4)  # rechecked, as the original


def test_return_stored_with_write_empty_chunks() -> None:
    backing = MemoryStore()
    arr = aiozarr.create_array(backing, shape=(4,), dtype="i4", chunks=(2,), fill_value=0)
    values = np.array([0, 0, 1, 2], dtype="i4")
    stored = store(
        da.from_array(values, chunks=2), arr, return_stored=True, write_empty_chunks=False
    )
    np.testing.assert_array_equal(stored.compute(), values)
    assert "c/0" not in backing.data and "c/1" in backing.data  # the setting was in force


def test_an_in_process_cluster_writes_a_memory_array(client: distributed.Client) -> None:
    for target in ("memory://dask-pickling", MemoryStore()):
        arr = aiozarr.create_array(
            target, shape=(10,), dtype="i4", chunks=(5,), fill_value=-1, overwrite=True
        )
        client.compute(store(da.arange(10, chunks=5, dtype="i4"), arr, compute=False)).result()
        np.testing.assert_array_equal(arr[...], np.arange(10))


def test_an_in_process_cluster_cannot_write_a_zip_archive(
    client: distributed.Client, tmp_path: Path
) -> None:
    path = tmp_path / "a.zarr.zip"
    with ZipStore(path, mode="w") as zipped:
        arr = aiozarr.create_array(zipped, shape=(10,), dtype="i4", chunks=(5,), fill_value=-1)
        arr[...] = 3
        delayed = store(da.arange(10, chunks=5, dtype="i4"), arr, compute=False)
        with pytest.raises(ReadOnlyError, match="written only by the handle that opened it"):
            client.compute(delayed).result()
    np.testing.assert_array_equal(aiozarr.open_array(ZipStore(path))[...], [3] * 10)


def test_an_in_process_cluster_writes_a_zarr_python_memory_store(
    client: distributed.Client,
) -> None:
    """Each task wrote into its own copy of the store's dict: the values vanished."""
    zarr = pytest.importorskip("zarr")
    arr = aiozarr.create_array(
        zarr.storage.MemoryStore(), shape=(10,), dtype="i4", chunks=(5,), fill_value=-1
    )
    client.compute(store(da.arange(10, chunks=5, dtype="i4"), arr, compute=False)).result()
    np.testing.assert_array_equal(arr[...], np.arange(10))


def test_a_zarr_python_memory_store_copied_away_refuses_writes() -> None:
    zarr = pytest.importorskip("zarr")
    arr = aiozarr.create_array(zarr.storage.MemoryStore(), shape=(4,), dtype="i4", chunks=(2,))
    assert pickle.loads(pickle.dumps(arr)).store is arr.store  # found again here
    from aiozarr.storage.backends import zarr_store

    copy = zarr_store._unpickled_memory(("elsewhere", 0), arr.store.zarr_store)
    with pytest.raises(ReadOnlyError, match="copy unpickled away"):
        aiozarr.open_array(copy)[...] = 1
