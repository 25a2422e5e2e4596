"""A wrapped store (`WrapperStore`: `CountingStore`) names the data of the store it wraps:
a handle over either is dropped what a write through the other replaces. The wrapper had
been a key space of its own, so a handle over it served, under `False` or `"open"`, the
chunks a write through the bare store had just replaced (and the other way round)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.protocol import Store

CACHED = {"cache_bytes": 1 << 20}


def _stores(kind: str, tmp_path: Path) -> tuple[Store, Store]:
    """Two store objects over the same data."""
    if kind == "local":
        return LocalStore(tmp_path), LocalStore(tmp_path)
    data: dict[str, bytes] = {}
    return MemoryStore(data), MemoryStore(data)


@pytest.mark.parametrize("recheck", [False, "open", 3600])
@pytest.mark.parametrize("kind", ["local", "memory"])
@pytest.mark.parametrize("wrapped_writes", [False, True], ids=["bare-writes", "wrapper-writes"])
def test_a_write_through_the_bare_store_or_its_wrapper_reaches_the_other(
    tmp_path: Path, kind: str, recheck: object, wrapped_writes: bool
) -> None:
    bare, other = _stores(kind, tmp_path)
    aiozarr.create_array(bare, data=np.ones(8, dtype="i4"), chunks=(4,))
    wrapped = CountingStore(other)
    reader_store, writer_store = (bare, wrapped) if wrapped_writes else (wrapped, bare)
    reader = aiozarr.open_array(reader_store, mode="r", cache_recheck=recheck, **CACHED)
    assert reader[:].tolist() == [1] * 8  # cached
    aiozarr.open_array(writer_store, mode="r+")[2:6] = 7
    assert reader[:].tolist() == [1, 1, 7, 7, 7, 7, 1, 1]
