"""`del group[name]` that fails part way leaves the member whole or no member at all,
never a member whose deleted chunks read as fill values.

An object store deletes a prefix in batches of 1,000 keys, in the listing's order, where
a v3 array's chunks (`c/...`) come before its `zarr.json`: a batch refused after the
first left the array's metadata with most of its chunks gone, read as fill values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.errors import NodeNotFoundError, StoreError

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("zarr_format", [2, 3])
async def test_a_member_delete_refused_after_its_first_batch_leaves_no_member(
    emulator: Emulator, s3: tuple[str, dict[str, Any]], zarr_format: int
) -> None:
    url, options = s3
    root = await aiozarr.create_group_async(url, storage_options=options, zarr_format=zarr_format)
    arr = await root.create_array("a", shape=(1100,), chunks=(1,), dtype="u1", fill_value=0)
    await arr.setitem(..., np.ones(1100, dtype="u1"))  # 1,100 chunks: two delete batches
    emulator.inject("late", count=1, methods=["POST"], delay_s=0)  # the first batch goes
    emulator.inject("status", status=403, count=1, methods=["POST"])  # the next is refused
    with pytest.raises(StoreError):
        await root.delitem("a")
    emulator.clear_faults()
    try:
        left = await aiozarr.open_array_async(url, path="a", storage_options=options, mode="r")
    except NodeNotFoundError:
        return
    np.testing.assert_array_equal(await left.getitem(...), np.ones(1100, dtype="u1"))


@pytest.mark.parametrize("zarr_format", [2, 3])
async def test_a_member_delete_whose_snapshot_above_failed_finishes_when_run_again(
    emulator: Emulator, s3: tuple[str, dict[str, Any]], zarr_format: int
) -> None:
    """The member is deleted, then taken out of its group's snapshot and of those above;
    one above refused: run again, the delete found no member and raised, and the root's
    snapshot listed it for good (read through it: fill values)."""
    url, options = s3
    root = await aiozarr.create_group_async(url, storage_options=options, zarr_format=zarr_format)
    sub = await root.create_group("g")
    arr = await sub.create_array("x", shape=(3,), dtype="i4", fill_value=0)
    await arr.setitem(..., np.arange(1, 4, dtype="i4"))
    await aiozarr.consolidate_metadata_async(url, storage_options=options)
    sub = await aiozarr.open_group_async(url, path="g", storage_options=options, mode="r+")
    snapshot = "*/.zmetadata" if zarr_format == 2 else "*.zarr/zarr.json"  # the root's
    emulator.inject("status", status=403, count=1, key_glob=snapshot, methods=["PUT"])
    with pytest.raises(StoreError):
        await sub.delitem("x")
    await sub.delitem("x")  # run again: finishes
    with pytest.raises(NodeNotFoundError):
        await sub.delitem("x")  # and again: there is none
    reopened = await aiozarr.open_group_async(url, storage_options=options, mode="r")
    assert await (await reopened.getitem("g")).array_keys() == []
