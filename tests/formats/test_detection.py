"""Format detection in open: how many requests (and round trips) each format costs."""

from __future__ import annotations

import pytest

import aiozarr
from aiozarr.errors import GroupNotFoundError, NodeNotFoundError
from aiozarr.nodes import hierarchy
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.memory import MemoryStore


async def _counting(zarr_format: int) -> CountingStore:
    store = MemoryStore()
    await aiozarr.create_array_async(
        store, "a", shape=(4,), dtype="int8", zarr_format=zarr_format, attributes={"k": 1}
    )
    return CountingStore(store)


async def test_v3_open_is_one_request() -> None:
    counting = await _counting(3)
    arr = await aiozarr.open_array_async(counting, "a", mode="r")
    assert arr.attrs == {"k": 1}
    assert counting.counts["get"] == 1
    assert [r[1] for r in counting.requests] == ["a/zarr.json"]


async def test_v2_open_is_one_request_then_one_concurrent_batch() -> None:
    counting = await _counting(2)
    arr = await aiozarr.open_array_async(counting, "a", mode="r")
    assert arr.attrs == {"k": 1}
    assert counting.requests[0][1] == "a/zarr.json"
    assert len(counting.batches) == 1  # every v2 key in one batch, not one after another
    # An array open asks for neither `.zgroup` nor consolidated metadata.
    assert sorted(r.key for r in counting.batches[0]) == ["a/.zarray", "a/.zattrs"]
    assert counting.counts["get"] == 3


async def test_v2_with_zarr_format_given_skips_zarr_json() -> None:
    counting = await _counting(2)
    await aiozarr.open_array_async(counting, "a", mode="r", zarr_format=2)
    assert counting.counts["get"] == 2 and len(counting.batches) == 1


async def test_v2_array_open_of_a_group_asks_for_zgroup_to_say_so() -> None:
    store = MemoryStore()
    await aiozarr.create_group_async(store, "g", zarr_format=2)
    counting = CountingStore(store)
    with pytest.raises(NodeNotFoundError, match="is a group, not an array"):
        await aiozarr.open_array_async(counting, "g", mode="r", zarr_format=2)
    assert [r[1] for r in counting.requests][-1] == "g/.zgroup"
    assert counting.counts["get"] == 3  # .zarray and .zattrs, then .zgroup


async def test_missing_node_costs_three_round_trips_at_most() -> None:
    counting = CountingStore(MemoryStore())
    with pytest.raises(NodeNotFoundError):
        await hierarchy.read_node(counting, "nothing/here")
    # zarr.json with .zmetadata, the v2 batch, then one batch of v1 and 2020-draft keys
    assert len(counting.batches) == 3
    assert "nothing/here/meta" in {r.key for r in counting.batches[2]}
    assert "meta/root/nothing/here.array.json" in {r.key for r in counting.batches[2]}


async def test_explicit_formats_do_not_probe_others() -> None:
    counting = CountingStore(MemoryStore())
    for fmt in (2, 3):
        with pytest.raises(NodeNotFoundError):
            await hierarchy.read_node(counting, "x", fmt)
    assert {r[1] for r in counting.requests} == {
        "x/zarr.json",
        "x/.zarray",
        "x/.zgroup",
        "x/.zattrs",
        "x/.zmetadata",
    }


async def test_implicit_v3_group_below_a_v3_root_is_not_mistaken_for_a_draft() -> None:
    store = MemoryStore()
    root = await aiozarr.create_group_async(store)
    await root.create_array("g/a", shape=(2,), dtype="int8")
    await store.delete("g/zarr.json")
    with pytest.raises(GroupNotFoundError):  # Zarr v3.0 has no implicit groups
        await aiozarr.open_group_async(store, "g", mode="r")
    with aiozarr.config.set(implicit_groups=True):
        group = await aiozarr.open_group_async(store, "g", mode="r")
    assert group.zarr_format == 3
