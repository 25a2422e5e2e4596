"""Mode "r" over a store object that can write: nothing opened through it writes, as
zarr-python's `open_group(store, mode="r")` (a `with_read_only(True)` copy)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr import errors
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.protocol import Store

WRITES: dict[str, Callable[[aiozarr.Group], Any]] = {
    "create_array": lambda g: g.create_array("b", shape=(1,), dtype="i1"),
    "create_group": lambda g: g.create_group("c"),
    "require_group": lambda g: g.require_group("d"),
    "attrs": lambda g: g.attrs.__setitem__("k", 1),
    "delete member": lambda g: g.__delitem__("a"),
    "write a member": lambda g: g["a"].__setitem__(0, 5),
}


@pytest.fixture(params=["memory", "local", "counting"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    local = LocalStore(tmp_path / "data.zarr")
    return CountingStore(local) if request.param == "counting" else local


@pytest.mark.parametrize("write", list(WRITES))
def test_group_opened_read_only_never_writes(store: Store, write: str) -> None:
    aiozarr.create_group(store, attributes={"x": 1}).create_array("a", data=np.arange(3))
    group = aiozarr.open_group(store, mode="r")
    with pytest.raises(errors.ReadOnlyError):
        WRITES[write](group)
    again = aiozarr.open_group(store)
    assert again.keys() == ["a"]
    assert again.attrs == {"x": 1}
    assert again["a"][...].tolist() == [0, 1, 2]
    assert store.writable  # the caller's store keeps its own flag


@pytest.mark.parametrize("opener", [aiozarr.open_array, aiozarr.open])
def test_array_opened_read_only_never_writes(store: Store, opener: Any) -> None:
    aiozarr.create_array(store, "a", data=np.arange(3))
    arr = opener(store, "a", mode="r")
    with pytest.raises(errors.ReadOnlyError, match=r"/a .*read-only"):
        arr[0] = 5
    assert aiozarr.open_array(store, "a")[...].tolist() == [0, 1, 2]


def test_reads_through_a_read_only_counting_store_are_counted(tmp_path: Path) -> None:
    counting = CountingStore(LocalStore(tmp_path / "data.zarr"))
    aiozarr.create_array(counting, "a", data=np.arange(8), chunks=(4,))
    counting.reset()
    assert aiozarr.open_array(counting, "a", mode="r")[...].tolist() == list(range(8))
    assert counting.counts["get"] == 3  # zarr.json and two chunks
