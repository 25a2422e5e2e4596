"""Deletes of missing keys on object stores whose servers refuse them (obstore's local
store, GCS, Azure: a delete of a missing key is a 404).

A write deletes each chunk it finds all fill, holding a slot of the store's request
budget. A delete answered 404 was done again key by key in tasks of their own, each
waiting for a slot of its own: with as many such deletes under way as the budget has
slots, every slot was held by a delete waiting for one, and the write hung for good.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import numpy as np
import obstore.store
import pytest

import aiozarr
from aiozarr.storage.backends.object_store import ObjectStore

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("slots", [1, 4])
async def test_fill_written_over_missing_chunks_with_every_slot_taken(
    tmp_path: Path, slots: int
) -> None:
    store = ObjectStore(obstore.store.LocalStore(tmp_path), max_concurrency=slots)
    await _fill_over_missing(store, slots)
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["zarr.json"]


async def test_fill_written_over_missing_chunks_on_azure(
    azure_store: Callable[..., ObjectStore],
) -> None:
    await _fill_over_missing(azure_store(max_concurrency=1), 1)


async def _fill_over_missing(store: ObjectStore, slots: int) -> None:
    arr = await aiozarr.create_array_async(
        store, shape=(16 * slots,), chunks=(2,), dtype="i4", fill_value=0
    )
    with anyio.fail_after(30):  # a hang fails here, not at the suite's timeout
        await arr.setitem(..., np.zeros(16 * slots, dtype="i4"))  # every chunk deleted
        await arr.setitem(slice(0, 4), np.ones(4, dtype="i4"))
        await arr.setitem(..., np.zeros(16 * slots, dtype="i4"))
    np.testing.assert_array_equal(await arr.getitem(...), np.zeros(16 * slots))


async def test_a_missing_key_deleted_costs_one_request(tmp_path: Path) -> None:
    store = ObjectStore(obstore.store.LocalStore(tmp_path))
    await store.delete("missing")
    assert store.stats()["requests"] == 1  # its 404 says it is gone: not asked again
