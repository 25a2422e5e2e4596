"""A create that fails part way leaves no node, or the node that was there whole; the
same create run again succeeds.

A v2 node is two documents: its claim (`.zarray` / `.zgroup`), written only if absent,
then its `.zattrs`. A `.zattrs` that could not be written left the node created without
its attributes, and the create run again (as one does after a `StoreError`) raised
`NodeExistsError`: the attributes were lost however the caller went on. An overwrite
deleted the old node's documents all at once: one whose `.zarray` delete was refused
kept its array without its `.zattrs`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import aiozarr
from aiozarr.emulator import Emulator
from aiozarr.errors import NodeNotFoundError, StoreError
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.protocol import Store
from aiozarr.storage.protocol.wrapper import WrapperStore

pytestmark = pytest.mark.timeout(120)


async def _create(kind: str, url: Any, options: dict[str, Any] | None, **kwargs: Any) -> Any:
    if kind == "group":
        return await aiozarr.create_group_async(
            url, storage_options=options, zarr_format=2, **kwargs
        )
    return await aiozarr.create_array_async(
        url, storage_options=options, shape=(6,), chunks=(3,), dtype="i4", zarr_format=2, **kwargs
    )


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("kind", ["array", "group"])
async def test_a_v2_create_whose_attributes_fail_leaves_no_node(
    emulator: Emulator, s3: tuple[str, dict[str, Any]], kind: str, overwrite: bool
) -> None:
    url, options = s3
    if overwrite:
        await _create(kind, url, options, attributes={"old": 1})
    emulator.inject("status", status=403, count=1, key_glob="*.zattrs", methods=["PUT"])
    with pytest.raises(StoreError, match=r"\.zattrs") as raised:
        await _create(kind, url, options, attributes={"new": 2}, overwrite=overwrite)
    assert any("nothing was created" in note for note in raised.value.__notes__)
    with pytest.raises(NodeNotFoundError):
        await aiozarr.open_async(url, storage_options=options, mode="r")

    node = await _create(kind, url, options, attributes={"new": 2})  # run again: created
    assert dict(node.attrs) == {"new": 2}
    reopened = await aiozarr.open_async(url, storage_options=options, mode="r")
    assert dict(reopened.attrs) == {"new": 2}


async def test_a_v2_create_cancelled_after_its_claim_leaves_no_node(
    emulator: Emulator, s3: tuple[str, dict[str, Any]]
) -> None:
    url, options = s3
    emulator.inject("late", count=1, key_glob="*.zattrs", methods=["PUT"], delay_s=30)
    task = asyncio.ensure_future(_create("array", url, options, attributes={"new": 2}))
    while not emulator.stats()["by_kind"].get("put", 0) >= 2:  # the claim, then .zattrs
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    emulator.clear_faults()
    with pytest.raises(NodeNotFoundError):
        await aiozarr.open_async(url, storage_options=options, mode="r")
    node = await _create("array", url, options, attributes={"new": 2})
    assert dict(node.attrs) == {"new": 2}


class _RefusesToDelete(WrapperStore):
    """A store refusing to delete one key (as a server refusing a request would)."""

    def __init__(self, inner: Store, key: str) -> None:
        super().__init__(inner)
        self.refused = key

    async def delete(self, key: str) -> None:
        if key == self.refused:
            raise StoreError(f"cannot delete {key!r}: refused")
        await self.inner.delete(key)


@pytest.mark.parametrize("backend", ["memory", "local"])
@pytest.mark.parametrize("kind", ["array", "group"])
async def test_an_overwrite_refused_part_way_keeps_the_old_node_whole_or_none(
    tmp_path: Any, backend: str, kind: str
) -> None:
    store: Store = MemoryStore() if backend == "memory" else LocalStore(tmp_path / "a.zarr")
    old = await _create(kind, store, None, attributes={"dims": ["x"]})
    claim = ".zarray" if kind == "array" else ".zgroup"
    refusing = _RefusesToDelete(store, claim)
    with pytest.raises(StoreError, match=claim):
        await _create(kind, refusing, None, attributes={"new": 2}, overwrite=True)
    try:
        node = await aiozarr.open_async(store, mode="r")
    except NodeNotFoundError:
        return
    assert type(node) is type(old)
    assert dict(node.attrs) == {"dims": ["x"]}
