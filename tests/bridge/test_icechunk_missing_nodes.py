"""A node missing from an icechunk session's store: created in mode "a", not found in
mode "r", though the store refuses the keys of Zarr's older layouts aiozarr looks for
("invalid zarr key format")."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import zarr

import aiozarr
from aiozarr.errors import NodeNotFoundError, StoreError
from aiozarr.storage.backends.zarr_store import ZarrStore

icechunk = pytest.importorskip("icechunk")


@pytest.fixture
def session() -> Any:
    repo = icechunk.Repository.create(icechunk.in_memory_storage())
    session = repo.writable_session("main")
    zarr.group(session.store)
    return session


def test_a_missing_group_is_created_in_mode_a_and_not_found_in_mode_r(session: Any) -> None:
    with pytest.raises(NodeNotFoundError):
        aiozarr.open_group(session.store, "x", mode="r")
    with pytest.raises(NodeNotFoundError):
        aiozarr.open_array(session.store, "x", mode="r")
    created = aiozarr.open_group(session.store, "x", mode="a")
    created.attrs["made"] = True
    assert dict(zarr.open_group(session.store, path="x", mode="r").attrs) == {"made": True}
    assert aiozarr.open_group(session.store, "x", mode="r").attrs["made"] is True


def test_keys_of_older_layouts_are_absent_other_refusals_raise(session: Any) -> None:
    store = ZarrStore(session.store)
    for key in ("x/meta", "x/attrs", "meta/root/x.group.json", "data/root/x/c0/0"):
        assert asyncio.run(store.get(key)) is None, key
        assert asyncio.run(store.exists(key)) is False, key
        assert asyncio.run(store.getsize(key)) is None, key
    zarr.create_array(session.store, name="a", shape=(4,), chunks=(2,), dtype="i4")
    with pytest.raises(StoreError, match="invalid zarr key format"):
        asyncio.run(store.get("a/0"))  # a chunk key the array's encoding does not make


def test_a_store_failing_on_an_older_layouts_key_is_not_taken_as_no_node() -> None:
    class Down(zarr.storage.MemoryStore):
        async def get(self, key, prototype, byte_range=None):  # type: ignore[no-untyped-def]
            raise RuntimeError("connection refused")

    store = ZarrStore(Down())
    with pytest.raises(StoreError, match="connection refused"):
        asyncio.run(store.get("x/meta"))


def test_a_read_across_a_stored_and_a_missing_shard_reads_the_fill_value(session: Any) -> None:
    # icechunk's get_partial_values fails on a key with no value (it builds a buffer of
    # None: TypeError) where its get answers None; a missing shard whose index was read
    # by range beside a stored one raised StoreError, through aiozarr and the pipeline.
    arr = zarr.create_array(
        session.store, name="s", shape=(16,), chunks=(2,), shards=(8,), dtype="i2", fill_value=3
    )
    arr[:8] = 1
    expected = [1] * 5 + [3] * 4
    assert aiozarr.open_array(session.store, "s")[3:12].tolist() == expected
    with zarr.config.set({"codec_pipeline.path": "aiozarr.zarr.CodecPipeline"}):
        piped = zarr.open_array(session.store, path="s")
        assert piped[3:12].tolist() == expected
        piped[10:12] = 5  # a write into the missing shard, beside the stored one
    assert zarr.open_array(session.store, path="s")[:].tolist() == [1] * 8 + [3, 3, 5, 5] + [3] * 4
