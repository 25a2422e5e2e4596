"""A memory store pickled for a dask task: the same store again in its own process, a
read-only copy anywhere else (writes through a copy would vanish with it)."""

from __future__ import annotations

import gc
import multiprocessing
import pickle

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import ReadOnlyError
from aiozarr.storage import from_url
from aiozarr.storage.backends.memory import MemoryStore


def test_a_named_store_pickled_in_its_process_is_the_same_store() -> None:
    arr = aiozarr.create_array(
        "memory://pickle-named", shape=(6,), dtype="i4", chunks=(3,), fill_value=-1, overwrite=True
    )
    copy = pickle.loads(pickle.dumps(arr))  # what a task of an in-process cluster gets
    copy[...] = 5
    np.testing.assert_array_equal(arr[...], [5] * 6)
    np.testing.assert_array_equal(aiozarr.open_array("memory://pickle-named")[...], [5] * 6)
    assert pickle.loads(pickle.dumps(from_url("memory://pickle-named"))) is from_url(
        "memory://pickle-named"
    )


def test_a_read_only_view_stays_read_only() -> None:
    view = from_url("memory://pickle-view", read_only=True)
    back = pickle.loads(pickle.dumps(view))
    assert back == view and back.read_only


async def test_an_anonymous_store_rejoins_while_it_lives() -> None:
    store = MemoryStore()
    copy = pickle.loads(pickle.dumps(store))
    await copy.set("k", b"v")
    assert bytes(await store.get("k")) == b"v" and copy == store


async def test_a_copy_that_outlived_its_store_refuses_writes() -> None:
    store = MemoryStore()
    await store.set("k", b"v")
    payload = pickle.dumps(store)
    del store
    gc.collect()
    copy = pickle.loads(payload)
    assert bytes(await copy.get("k")) == b"v"  # the values it was pickled with
    assert not copy.writable
    with pytest.raises(ReadOnlyError, match="memory stores live in one process"):
        await copy.set("k", b"w")
    again = pickle.loads(pickle.dumps(copy))  # still a copy, however often pickled
    with pytest.raises(ReadOnlyError, match="threaded scheduler"):
        await again.with_read_only(False).set("k", b"w")


def _write_in_child(arr: aiozarr.Array) -> tuple[list[int], str]:
    values = arr[...].tolist()
    try:
        arr[...] = 9
    except ReadOnlyError as error:
        return values, str(error)
    return values, "written"


@pytest.mark.parametrize("url", ["memory://pickle-child", None])
def test_in_another_process_a_copy_reads_and_refuses_writes(url: str | None) -> None:
    target = url or MemoryStore()
    arr = aiozarr.create_array(target, shape=(3,), dtype="i4", chunks=(3,), overwrite=True)
    arr[...] = [7, 8, 9]
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        values, outcome = pool.apply(_write_in_child, (arr,))
    assert values == [7, 8, 9]
    assert "memory stores live in one process" in outcome
    np.testing.assert_array_equal(arr[...], [7, 8, 9])


@pytest.mark.parametrize("kind", ["named", "anonymous", "zarr-python"])
def test_in_a_forked_child_a_copy_refuses_writes(kind: str) -> None:
    """A forked child holds copies of the parent's stores: a pickle from the parent must
    not find them there as if they were the parent's."""
    target: object = {"named": "memory://pickle-fork", "anonymous": MemoryStore()}.get(kind)
    if kind == "zarr-python":
        target = pytest.importorskip("zarr").storage.MemoryStore()
    arr = aiozarr.create_array(target, shape=(3,), dtype="i4", chunks=(3,), overwrite=True)
    arr[...] = [4, 5, 6]
    pickle.dumps(arr)  # an anonymous store is registered when first pickled: before the fork
    with multiprocessing.get_context("fork").Pool(1) as pool:
        values, outcome = pool.apply(_write_in_child, (arr,))
    assert values == [4, 5, 6]
    assert outcome != "written"
    np.testing.assert_array_equal(arr[...], [4, 5, 6])
