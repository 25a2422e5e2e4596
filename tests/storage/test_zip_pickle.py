"""A writable zip archive pickled for a dask task: the copy reads, and refuses writes
(a second zipfile writer on the file would destroy the archive)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import ReadOnlyError
from aiozarr.storage.backends.zip import ZipStore


def test_a_copy_of_a_writer_refuses_writes_and_the_archive_survives(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr.zip"
    store = ZipStore(path, mode="w")
    arr = aiozarr.create_array(store, shape=(10,), dtype="i4", chunks=(5,), fill_value=-1)
    copy = pickle.loads(pickle.dumps(arr))  # what a dask worker gets
    assert copy.read_only and not copy.store.writable
    with pytest.raises(ReadOnlyError, match="written only by the handle that opened it"):
        copy[0:5] = 1
    with pytest.raises(ReadOnlyError, match="threaded scheduler"):
        aiozarr.sync.run(copy.store.set, "c/0", b"x")
    arr[...] = 2
    store.close()
    del copy
    np.testing.assert_array_equal(aiozarr.open_array(ZipStore(path))[...], [2] * 10)


def test_a_copy_of_a_copy_stays_read_only_and_readers_are_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "b.zarr.zip"
    with ZipStore(path, mode="w") as store:
        aiozarr.create_array(store, shape=(4,), dtype="i4", chunks=(2,))[...] = 3
        twice = pickle.loads(pickle.dumps(pickle.loads(pickle.dumps(store))))
    assert twice.read_only and "written only by the handle" in repr(twice)
    reader = pickle.loads(pickle.dumps(ZipStore(path)))
    assert reader.read_only and "handle" not in repr(reader)
    np.testing.assert_array_equal(aiozarr.open_array(reader)[...], [3] * 4)
