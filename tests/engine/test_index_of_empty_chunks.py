"""A cached shard index that says a read's inner chunks are all empty is read again for
that read: nothing else it fetches would carry the shard's version, so chunks another
writer stored since would read as the fill value for as long as the handle lived."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

import aiozarr
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore


def _sparse(path: Path) -> None:
    """One shard of four inner chunks, only the first stored."""
    arr = aiozarr.create_array(
        LocalStore(path), shape=(8,), chunks=(2,), shards=(8,), dtype="i4", fill_value=0
    )
    arr[0:2] = 1


def test_chunks_another_handle_stored_are_read(tmp_path: Path) -> None:
    _sparse(tmp_path)
    reader = aiozarr.open_array(LocalStore(tmp_path))
    np.testing.assert_array_equal(reader[6:8], [0, 0])  # its index now cached
    aiozarr.open_array(LocalStore(tmp_path))[6:8] = 5
    np.testing.assert_array_equal(reader[6:8], [5, 5])
    np.testing.assert_array_equal(aiozarr.read_many([(reader, slice(4, 8))])[0], [0, 0, 5, 5])


def test_chunks_another_process_stored_are_read(tmp_path: Path) -> None:
    _sparse(tmp_path)
    reader = aiozarr.open_array(LocalStore(tmp_path))
    np.testing.assert_array_equal(reader[4:8], [0, 0, 0, 0])
    code = f"import aiozarr; aiozarr.open_array({str(tmp_path)!r})[4:6] = 3"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    np.testing.assert_array_equal(reader[4:8], [3, 3, 0, 0])


def test_what_an_empty_read_asks(tmp_path: Path) -> None:
    """One request, the index, each time; a read touching a stored chunk uses the
    cached index (its chunk's version checks it)."""
    _sparse(tmp_path)
    store = CountingStore(LocalStore(tmp_path))
    reader = aiozarr.open_array(store)
    reader[0:8]
    store.reset()
    reader[6:8]
    assert [key for op, key, _ in store.requests if op == "get"] == ["c/0"]
    store.reset()
    reader[0:2]
    assert store.counts["get"] == 1  # the chunk alone: the index is the cached one
