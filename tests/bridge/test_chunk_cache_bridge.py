"""Writes through zarr-python's stores drop what aiozarr's chunk cache holds: through
`aiozarr.zarr.Store`, and through a zarr-python `LocalStore` aiozarr wraps (one space
with aiozarr's `LocalStore` over the same directory)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import zarr

import aiozarr
import aiozarr.zarr


def _cached(path: Path, store: object = None) -> aiozarr.Array:
    """An array of 8 ones at `path`, opened with a cache that never rechecks."""
    aiozarr.create_array(str(path), data=np.ones(8, dtype="i4"), chunks=(4,))
    arr = aiozarr.open_array(store or str(path), cache_bytes=1 << 20, cache_recheck=False)
    assert (arr[:] == 1).all()
    return arr


def test_a_write_through_the_zarr_store_drops_cached_chunks(tmp_path: Path) -> None:
    arr = _cached(tmp_path)
    zarr.open_array(aiozarr.zarr.Store(str(tmp_path)), mode="r+")[:] = 2
    assert (arr[:] == 2).all()


def test_a_delete_through_the_zarr_store_drops_cached_chunks(tmp_path: Path) -> None:
    arr = _cached(tmp_path)
    store = aiozarr.zarr.Store(str(tmp_path))
    aiozarr.sync.run(store.delete, "c/0")
    np.testing.assert_array_equal(arr[:], [0, 0, 0, 0, 1, 1, 1, 1])  # the fill value
    aiozarr.sync.run(store.delete_dir, "c")
    assert (arr[:] == 0).all()


def test_a_write_through_a_wrapped_zarr_local_store_drops_aiozarrs(tmp_path: Path) -> None:
    arr = _cached(tmp_path)
    aiozarr.open_array(zarr.storage.LocalStore(tmp_path), mode="r+")[:] = 3
    assert (arr[:] == 3).all()


def test_a_write_through_aiozarr_drops_a_wrapped_zarr_local_stores(tmp_path: Path) -> None:
    arr = _cached(tmp_path, zarr.storage.LocalStore(tmp_path, read_only=True))
    aiozarr.open_array(str(tmp_path), mode="r+")[:] = 4
    assert (arr[:] == 4).all()
