"""The chunk cache never keeps what a write or a delete replaced while it was read, and
never serves a chunk at another position than it was read from; its bound counts what
an entry costs, not only its elements. Races are forced in order: the store holds a
read's answer until the test releases it."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.engine import chunk_cache
from aiozarr.engine.chunk_cache import ChunkCache
from aiozarr.errors import AiozarrError
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.protocol.wrapper import WrapperStore


class HeldRead(WrapperStore):
    """Reads `key` (its bytes as they are then) and holds the answer until `release`."""

    def __init__(self, inner: Any, key: str) -> None:
        super().__init__(inner)
        self.key = key
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()

    async def _hold(self, key: str) -> None:
        if key == self.key and not self.arrived.is_set():
            self.arrived.set()
            await self.release.wait()

    async def read(self, key: str, byte_range: Any, max_bytes: Any) -> Any:
        got = await self.inner.read(key, byte_range, max_bytes)
        await self._hold(key)
        return got

    async def read_ranges(self, key: str, byte_ranges: Any, max_bytes: Any) -> Any:
        got = await self.inner.read_ranges(key, byte_ranges, max_bytes)
        await self._hold(key)
        return got


async def test_a_read_across_more_writes_than_remembered_keeps_nothing_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write of the chunk being read is pushed out of the writes remembered one by
    one: the read still does not cache the value it replaced."""
    monkeypatch.setattr(chunk_cache, "_WRITES_REMEMBERED", 4)
    n = 8
    store = HeldRead(LocalStore(tmp_path), "c/0")
    await aiozarr.create_array_async(
        store, data=np.zeros(n, "u1"), chunks=(1,), compressors=None,
        config={"write_empty_chunks": True},
    )  # fmt: skip
    reader = await aiozarr.open_array_async(store, cache_bytes=(1 << 20) + 101)
    writer = await aiozarr.open_array_async(store)
    reading = asyncio.create_task(reader.getitem(slice(0, 1)))
    await store.arrived.wait()
    await writer.setitem(slice(0, 1), np.array([7], "u1"))
    await writer.setitem(slice(1, n), np.full(n - 1, 9, "u1"))  # more keys than remembered
    store.release.set()
    assert (await reading).tolist() == [0]  # read before the write: as it was then
    assert (await reader.getitem(slice(0, 1))).tolist() == [7]


@pytest.mark.parametrize("pushed_out", [False, True], ids=["remembered", "pushed-out"])
@pytest.mark.parametrize("how", ["overwrite", "delitem"])
async def test_a_read_while_its_array_is_deleted_keeps_none_of_its_chunks(
    tmp_path: Path, how: str, pushed_out: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the deleted node's prefix is marked, never the chunk being read: no handle,
    old or new, is served the deleted array's values, even under `False`; nor once
    later deletes pushed that prefix out of those remembered."""
    monkeypatch.setattr(chunk_cache, "_WRITES_REMEMBERED", 1 if pushed_out else 4096)
    store = HeldRead(LocalStore(tmp_path), "a/c/0")
    group = await aiozarr.create_group_async(store)
    new = {"shape": (4,), "dtype": "i4", "chunks": (4,), "fill_value": 0, "compressors": None}
    await aiozarr.create_array_async(store, "a", data=np.full(4, 7, "i4"), chunks=(4,))
    bound = (1 << 20) + 103
    old = await aiozarr.open_array_async(store, "a", cache_bytes=bound, cache_recheck=False)
    reading = asyncio.create_task(old.getitem(slice(None)))
    await store.arrived.wait()
    if how == "overwrite":
        await aiozarr.create_array_async(store, "a", overwrite=True, **new)
    else:
        await group.delitem("a")
        await aiozarr.create_array_async(store, "a", **new)
    if pushed_out:
        for other in ("x", "y"):
            await aiozarr.create_array_async(store, other, overwrite=True, **new)
    store.release.set()
    assert (await reading).tolist() == [7] * 4
    fresh = await aiozarr.open_array_async(store, "a", cache_bytes=bound, cache_recheck=False)
    assert (await fresh.getitem(slice(None))).tolist() == [0] * 4
    assert (await old.getitem(slice(None))).tolist() == [0] * 4


@pytest.mark.parametrize("recheck", [False, 30.0])
def test_a_chunk_is_never_served_at_another_position(tmp_path: Path, recheck: object) -> None:
    """Another writer creates the rectilinear array again with other edges: chunk 1 is
    at 2:4 before and 4:6 after. Old values are allowed under these policies, values
    from another position never."""
    before, after = np.arange(8, dtype="i4"), np.arange(100, 108, dtype="i4")
    path, elsewhere = tmp_path / "a", tmp_path / "b"
    aiozarr.create_array(str(path), data=before, chunks=[[2, 2, 4]], compressors=None)
    first = aiozarr.open_array(str(path), cache_bytes=(1 << 20) + 105, cache_recheck=recheck)
    np.testing.assert_array_equal(first[:], before)
    aiozarr.create_array(str(elsewhere), data=after, chunks=[[4, 2, 2]], compressors=None)
    shutil.rmtree(path)  # as another process would: nothing in this one hears of it
    shutil.copytree(elsewhere, path)
    again = aiozarr.open_array(str(path), cache_bytes=(1 << 20) + 105, cache_recheck=recheck)
    got = again[:]
    assert ((got == before) | (got == after)).all(), got


def test_tiny_chunks_count_what_an_entry_costs(tmp_path: Path) -> None:
    """One-byte chunks under a 64 KiB bound: each counts its array object, key and
    entry (hundreds of bytes), and its place in its record, not one byte."""
    bound = (64 << 10) + 107
    values = np.arange(4096, dtype="u1")
    aiozarr.create_array(str(tmp_path), data=values, chunks=(1,), shards=(4096,))
    arr = aiozarr.open_array(str(tmp_path), cache_bytes=bound, cache_recheck=False)
    np.testing.assert_array_equal(arr[:], values)
    hits = arr.store.stats()["cache_hits"]
    np.testing.assert_array_equal(arr[:], values)  # served: the chunks held
    held = arr.store.stats()["cache_hits"] - hits
    assert 0 < held <= bound // 300
    assert ChunkCache.shared(bound).nchunks <= bound // 300


def test_a_bool_bound_is_refused(tmp_path: Path) -> None:
    aiozarr.create_array(str(tmp_path), data=np.zeros(4), chunks=(2,))
    with pytest.raises(AiozarrError, match="cache_bytes=True"):
        aiozarr.open_array(str(tmp_path), cache_bytes=True)
