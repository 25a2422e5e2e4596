"""Consolidated metadata: v2 `.zmetadata` and v3 inline, request counts, zarr-python interop."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr

import aiozarr
from aiozarr.errors import MetadataError
from aiozarr.metadata import consolidated, v3
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.tools.consolidate import consolidate_metadata, consolidate_metadata_async

N_ARRAYS = 200


async def _hierarchy(store, zarr_format: int) -> None:
    root = await aiozarr.create_group_async(store, attributes={"t": 1}, zarr_format=zarr_format)
    sub = await root.create_group("sub", attributes={"s": 2})
    for i in range(N_ARRAYS):
        parent = sub if i % 2 else root
        await parent.create_array(f"a{i}", shape=(4, 3), dtype="int16", chunks=(2, 3))


async def _open_everything(store) -> int:
    group = await aiozarr.open_group_async(store, mode="r")
    count = 0
    async for _, node in group.members():
        if isinstance(node, aiozarr.AsyncGroup):
            async for _, child in node.members():
                assert child.shape == (4, 3)
                count += 1
        else:
            assert node.shape == (4, 3)
            count += 1
    return count


async def test_v3_consolidated_hierarchy_of_200_arrays_opens_in_one_round_trip() -> None:
    store = MemoryStore()
    await _hierarchy(store, 3)
    await consolidate_metadata_async(store)
    counting = CountingStore(store)
    assert await _open_everything(counting) == N_ARRAYS
    # zarr.json, and v2's .zmetadata (absent) in the same batch
    assert counting.counts["get"] == 2
    assert counting.counts["list"] == 0
    assert [[r.key for r in batch] for batch in counting.batches] == [["zarr.json", ".zmetadata"]]


async def test_v2_consolidated_hierarchy_opens_in_one_round_trip_of_two_requests() -> None:
    store = MemoryStore()
    await _hierarchy(store, 2)
    await consolidate_metadata_async(store)
    counting = CountingStore(store)
    assert await _open_everything(counting) == N_ARRAYS
    # zarr.json (absent) and .zmetadata in one batch: the group is all in .zmetadata
    assert counting.counts["get"] == 2
    assert counting.counts["list"] == 0
    assert [[r.key for r in batch] for batch in counting.batches] == [["zarr.json", ".zmetadata"]]


async def test_v2_consolidated_group_opened_as_v2_is_one_request() -> None:
    store = MemoryStore()
    await _hierarchy(store, 2)
    await consolidate_metadata_async(store)
    counting = CountingStore(store)
    group = await aiozarr.open_group_async(counting, mode="r", zarr_format=2)
    assert len(await group.member_names()) > 0
    assert [r[1] for r in counting.requests] == [".zmetadata"]


async def test_an_unconsolidated_v2_group_still_opens_in_two_round_trips() -> None:
    store = MemoryStore()
    await aiozarr.create_group_async(store, zarr_format=2, attributes={"a": 1})
    counting = CountingStore(store)
    group = await aiozarr.open_group_async(counting, mode="r")
    assert group.attrs == {"a": 1}
    assert [[r.key for r in batch] for batch in counting.batches] == [
        ["zarr.json", ".zmetadata"],
        [".zarray", ".zattrs", ".zgroup"],
    ]


async def test_unconsolidated_open_lists_and_reads_per_member() -> None:
    store = MemoryStore()
    await _hierarchy(store, 3)
    counting = CountingStore(store)
    assert await _open_everything(counting) == N_ARRAYS
    assert counting.counts["get"] > N_ARRAYS  # what consolidation saves


@pytest.mark.parametrize("zarr_format", [2, 3])
async def test_use_consolidated_false_ignores_it(zarr_format: int) -> None:
    from aiozarr.nodes import hierarchy

    store = MemoryStore()
    await _hierarchy(store, zarr_format)
    await consolidate_metadata_async(store)
    meta = await hierarchy.read_node(store, "", use_consolidated=False)
    assert meta.consolidated is None
    meta = await hierarchy.read_node(store, "")
    assert meta.consolidated is not None and len(meta.consolidated) == N_ARRAYS + 1


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_aiozarr_consolidates_zarr_python_reads(tmp_path: Path, zarr_format: int) -> None:
    root = aiozarr.create_group(tmp_path, attributes={"title": "x"}, zarr_format=zarr_format)
    arr = root.create_array("sub/data", shape=(6, 4), dtype="float32", chunks=(3, 2))
    arr[:] = np.arange(24, dtype="float32").reshape(6, 4)
    arr.update_attributes({"units": "K"})
    consolidate_metadata(tmp_path)
    # make the per-node documents unreadable: zarr-python must use the consolidated copy
    node_doc = tmp_path / "sub" / "data" / ("zarr.json" if zarr_format == 3 else ".zarray")
    node_doc.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        group = zarr.open_consolidated(tmp_path, zarr_format=zarr_format)
        assert group.attrs["title"] == "x"
        data = group["sub/data"]
        assert data.attrs["units"] == "K"
        np.testing.assert_array_equal(data[:], np.arange(24).reshape(6, 4))
        group = zarr.open_group(tmp_path, use_consolidated=True, zarr_format=zarr_format)
        assert sorted(group["sub"].array_keys()) == ["data"]


@pytest.mark.parametrize("zarr_format", [2, 3])
async def test_zarr_python_consolidates_aiozarr_reads_in_one_round(
    tmp_path: Path, zarr_format: int
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        group = zarr.open_group(tmp_path, mode="w", zarr_format=zarr_format)
        group.attrs["a"] = 1
        sub = group.create_group("sub")
        arr = sub.create_array("x", shape=(5,), dtype="int64", chunks=(2,), fill_value=-1)
        arr[:3] = [1, 2, 3]
        group.create_array("y", shape=(2, 2), dtype="<U3", chunks=(1, 2))
        zarr.consolidate_metadata(tmp_path)
    (tmp_path / "sub" / "x" / ("zarr.json" if zarr_format == 3 else ".zarray")).unlink()
    counting = CountingStore(LocalStore(tmp_path))
    root = await aiozarr.open_group_async(counting, mode="r")
    assert root.attrs == {"a": 1}
    assert await root.member_names() == ["sub", "y"]
    x = await root.getitem("sub/x")
    y = await root.getitem("y")
    assert y.dtype == np.dtype("<U3")
    assert counting.counts["get"] == 2  # zarr.json and .zmetadata, one of them absent
    np.testing.assert_array_equal(await x.getitem(...), [1, 2, 3, -1, -1])


async def test_consolidated_member_missing_falls_back_to_the_store() -> None:
    store = MemoryStore()
    root = await aiozarr.create_group_async(store)
    await consolidate_metadata_async(store)
    await root.create_array("late", shape=(2,), dtype="int8")
    opened = await aiozarr.open_group_async(store, mode="r")
    assert (await opened.getitem("late")).shape == (2,)


def test_v3_consolidated_document_round_trips() -> None:
    doc = {
        "attributes": {},
        "zarr_format": 3,
        "consolidated_metadata": {
            "kind": "inline",
            "must_understand": False,
            "metadata": {"g": {"zarr_format": 3, "node_type": "group", "attributes": {"k": 1}}},
        },
        "node_type": "group",
    }
    meta = v3.parse_group(json.dumps(doc), "zarr.json")
    assert meta.consolidated is not None and meta.consolidated["g"].attributes == {"k": 1}
    assert json.loads(v3.group_to_json(meta)) == doc


def test_v3_consolidated_bad_kind_names_the_field() -> None:
    doc = {
        "zarr_format": 3,
        "node_type": "group",
        "consolidated_metadata": {"kind": "external", "metadata": {}},
    }
    with pytest.raises(MetadataError, match=r"consolidated_metadata\.kind"):
        v3.parse_group(json.dumps(doc), "zarr.json")


def test_zmetadata_parses_zarr_python_3_quirks() -> None:
    # zarr-python 3 puts "consolidated_metadata" into nested .zgroup documents
    doc = {
        "metadata": {
            ".zgroup": {"zarr_format": 2},
            "g/.zgroup": {"zarr_format": 2, "consolidated_metadata": {"kind": "inline"}},
            "g/.zattrs": {"x": 1},
        },
        "zarr_consolidated_format": 1,
    }
    nodes = consolidated.parse_zmetadata(json.dumps(doc), ".zmetadata")
    assert set(nodes) == {"", "g"} and nodes["g"].attributes == {"x": 1}


def test_zmetadata_wrong_format_version() -> None:
    with pytest.raises(MetadataError, match="zarr_consolidated_format"):
        consolidated.parse_zmetadata('{"metadata": {}}', ".zmetadata")
