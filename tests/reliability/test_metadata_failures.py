"""A metadata change that fails part way, run again, leaves every document it changes
current.

A v2 group's change of its attributes writes `.zattrs`, then `.zmetadata` (its
consolidated metadata, from which readers take the group's attributes). Where the
`.zmetadata` write failed, the change run again found `.zattrs` already holding its
attributes and wrote nothing: it returned, and every reader went on seeing the old
attributes.
"""

from __future__ import annotations

from typing import Any

import pytest

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.errors import StoreError

pytestmark = pytest.mark.timeout(120)


async def test_a_v2_group_change_whose_snapshot_failed_rewrites_it_when_run_again(
    emulator: Emulator, s3: tuple[str, dict[str, Any]]
) -> None:
    url, options = s3
    group = await aiozarr.create_group_async(
        url, storage_options=options, zarr_format=2, attributes={"a": 1}
    )
    await group.create_array("x", shape=(3,), dtype="i4")
    await aiozarr.consolidate_metadata_async(url, storage_options=options)
    group = await aiozarr.open_group_async(url, storage_options=options, mode="r+")

    emulator.inject("status", status=403, count=1, key_glob="*.zmetadata", methods=["PUT"])
    with pytest.raises(StoreError, match="zmetadata"):
        await group.update_attributes({"b": 2})
    await group.update_attributes({"b": 2})  # run again: nothing refuses it now

    reopened = await aiozarr.open_group_async(url, storage_options=options, mode="r")
    assert dict(reopened.attrs) == {"a": 1, "b": 2}
    assert await reopened.array_keys() == ["x"]
