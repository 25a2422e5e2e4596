"""Two first reads of one store at once, the branch moving between their ref reads: the
store presents one snapshot (the first loaded), never a mix of both."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import icechunk
import numpy as np
import pytest
import zarr

import aiozarr
from aiozarr.storage.references.icechunk import store as icstore


class _HoldFirstSnapshot:
    """The repository's store, its first snapshot GET held until `release` is set."""

    def __init__(self, inner: Any, held: asyncio.Event, release: asyncio.Event) -> None:
        self._inner, self._held, self._release = inner, held, release

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def get(self, key: str, *args: Any, **kwargs: Any) -> Any:
        if key.startswith("snapshots/") and not self._held.is_set():
            self._held.set()
            await self._release.wait()
        return await self._inner.get(key, *args, **kwargs)


def test_concurrent_first_loads_never_mix_two_snapshots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "r")))
    session = repo.writable_session("main")
    root = zarr.group(store=session.store)
    root.create_array("x", shape=(8,), chunks=(4,), dtype="int64")[...] = np.arange(8)
    root.create_array("old", shape=(2,), chunks=(2,), dtype="int64")[...] = [1, 2]
    session.commit("A")

    def commit_b() -> str:
        session = repo.writable_session("main")
        root = zarr.open_group(store=session.store, mode="a")
        root["x"].resize((4,))
        root["x"][...] = [100, 101, 102, 103]
        del root["old"]
        root.create_array("new", shape=(3,), chunks=(3,), dtype="int64")[...] = [7, 8, 9]
        return session.commit("B")

    async def main() -> None:
        held, release = asyncio.Event(), asyncio.Event()
        repository = icstore.IcechunkStore._repository
        monkeypatch.setattr(
            icstore.IcechunkStore,
            "_repository",
            lambda self: _HoldFirstSnapshot(repository(self), held, release),
        )
        store = icstore.IcechunkStore(str(tmp_path / "r"))
        first = asyncio.ensure_future(store.get("x/zarr.json"))  # reads the ref: A
        await held.wait()
        b = await asyncio.to_thread(commit_b)
        arr = await aiozarr.open_array_async(store, "x")  # the second read loads B
        release.set()
        await first
        assert (await store.snapshot()).id == b
        np.testing.assert_array_equal(await arr.getitem(...), [100, 101, 102, 103])
        keys = {k async for k in store.list_prefix("")}
        assert "new/zarr.json" in keys and "old/zarr.json" not in keys

    asyncio.run(main())
