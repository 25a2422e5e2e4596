"""The first reads of one store, the branch moving while they run: the store presents one
snapshot, whole (its documents, listing and chunks), never a mix of two; reads begun
meanwhile on the same event loop wait for the first one's ref and snapshot, read once."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

icechunk = pytest.importorskip("icechunk")
zarr = pytest.importorskip("zarr")

import aiozarr  # noqa: E402
from aiozarr.storage.references.icechunk import store as icstore  # noqa: E402


class _Repository:
    """The repository's store, counting its reads; the first snapshot read waits for
    `release` once `held` is set."""

    def __init__(self, inner: Any, held: threading.Event, release: threading.Event) -> None:
        self._inner, self._held, self._release = inner, held, release
        self.reads: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def get_partial_values(self, requests: Any) -> Any:
        self.reads.update(request.key.split("/")[0] for request in requests)
        return await self._inner.get_partial_values(requests)

    async def get(self, key: str, *args: Any, **kwargs: Any) -> Any:
        self.reads[key.split("/")[0]] += 1
        if key.startswith("snapshots/") and not self._held.is_set():
            self._held.set()
            await asyncio.to_thread(self._release.wait, 30)
        return await self._inner.get(key, *args, **kwargs)


@pytest.fixture
def repo(tmp_path: Path) -> Any:
    """Snapshot A on main: `x` = 0..7 and `old`."""
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "r")))
    session = repo.writable_session("main")
    root = zarr.group(store=session.store)
    root.create_array("x", shape=(8,), chunks=(4,), dtype="int64")[...] = np.arange(8)
    root.create_array("old", shape=(2,), chunks=(2,), dtype="int64")[...] = [1, 2]
    session.commit("A")
    return repo


def _commit_b(repo: Any) -> str:
    """Snapshot B on main: `x` = 100..103, `old` deleted, `new` added."""
    session = repo.writable_session("main")
    root = zarr.open_group(store=session.store, mode="a")
    root["x"].resize((4,))
    root["x"][...] = [100, 101, 102, 103]
    del root["old"]
    root.create_array("new", shape=(3,), chunks=(3,), dtype="int64")[...] = [7, 8, 9]
    return str(session.commit("B"))


def _held_store(
    monkeypatch: pytest.MonkeyPatch, path: Path
) -> tuple[icstore.IcechunkStore, list[_Repository], threading.Event, threading.Event]:
    held, release = threading.Event(), threading.Event()
    opened: list[_Repository] = []
    repository = icstore.IcechunkStore._repository

    def counted(self: icstore.IcechunkStore) -> _Repository:
        if not opened:
            opened.append(_Repository(repository(self), held, release))
        return opened[0]

    monkeypatch.setattr(icstore.IcechunkStore, "_repository", counted)
    return icstore.IcechunkStore(str(path)), opened, held, release


async def _shown(store: icstore.IcechunkStore) -> tuple[list[int], set[str]]:
    arr = await aiozarr.open_array_async(store, "x")
    keys = {k.split("/")[0] async for k in store.list_prefix("") if k.endswith("zarr.json")}
    return (await arr.getitem(...)).tolist(), keys


def test_reads_begun_during_the_first_wait_for_it(
    tmp_path: Path, repo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, opened, held, release = _held_store(monkeypatch, tmp_path / "r")

    async def main() -> list[tuple[list[int], set[str]]]:
        first = asyncio.ensure_future(_shown(store))  # reads the ref: A
        await asyncio.to_thread(held.wait, 30)
        await asyncio.to_thread(_commit_b, repo)  # the branch moves to B
        others = [asyncio.ensure_future(_shown(store)) for _ in range(4)]
        await asyncio.sleep(0.05)  # they start, and find the first read under way
        release.set()
        return await asyncio.gather(first, *others)

    shown = asyncio.run(main())
    assert shown == [([0, 1, 2, 3, 4, 5, 6, 7], {"x", "old", "zarr.json"})] * 5
    # the `repo` file (with the spec-1 ref) and the snapshot, read once for all five
    assert (opened[0].reads["repo"], opened[0].reads["snapshots"]) == (1, 1)


def test_a_first_read_on_another_loop_never_mixes_in_its_snapshot(
    tmp_path: Path, repo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two threads, each its own event loop: the one that indexes first stands, whole."""
    store, _, held, release = _held_store(monkeypatch, tmp_path / "r")
    first = threading.Thread(target=lambda: asyncio.run(store.get("x/zarr.json")))
    first.start()  # reads the ref (A), then waits at its snapshot read
    assert held.wait(30)
    _commit_b(repo)
    shown = asyncio.run(_shown(store))  # its own loop: reads B and indexes it
    release.set()
    first.join(30)
    assert shown == ([100, 101, 102, 103], {"x", "new", "zarr.json"})
    assert asyncio.run(_shown(store)) == shown  # A, indexed after, did not replace B
