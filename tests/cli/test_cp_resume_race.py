"""A copy racing another writer for its destination nodes: the rival's node is created,
through a second handle, right before the copy's own create, never by timing.

Resuming, the node created meanwhile is kept and checked like any node found there;
without resume the copy fails, the rival's node untouched."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.api import resolve_store
from aiozarr.cli import main
from aiozarr.errors import MetadataError, NodeExistsError
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.protocol import Store
from aiozarr.storage.protocol.wrapper import WrapperStore
from aiozarr.tools import copying
from aiozarr.tools.copying import copy_async

# "look": the rival's node is there when the copy's create looks (the read of the node's
# document after the copy's own open, resuming, missed it); "claim": it lands between
# that look and the copy's exclusive write of the document.
MOMENTS = ("look", "claim")


class RacingStore(WrapperStore):
    """`inner`, where `rival(inner)` runs once, at `moment` of the copy's create of the
    node whose document is `key`: before the `look`th read of `key`, or its first write."""

    def __init__(
        self,
        inner: Store,
        key: str,
        moment: str,
        rival: Callable[[Store], Awaitable[Any]],
        *,
        look: int = 2,
    ) -> None:
        super().__init__(inner)
        self.key, self.moment, self.rival, self.look = key, moment, rival, look
        self.reads = 0
        self.fired = False

    async def _maybe_fire(self, key: str, moment: str) -> None:
        if key == self.key and moment == self.moment and not self.fired:
            self.fired = True
            await self.rival(self.inner)

    async def read(self, key: str, byte_range: Any, max_bytes: int | None) -> Any:
        if key == self.key:
            self.reads += 1
            if self.reads == self.look:
                await self._maybe_fire(key, "look")
        return await super().read(key, byte_range, max_bytes)

    async def set(self, key: str, value: Any) -> None:
        await self._maybe_fire(key, "claim")
        await super().set(key, value)

    async def set_if(self, key: str, value: Any, expected: Any, *, claim: bool = False) -> None:
        await self._maybe_fire(key, "claim")
        await super().set_if(key, value, expected, claim=claim)


def _array_source(path: Path) -> tuple[str, np.ndarray]:
    data = np.arange(40, dtype="i4")
    aiozarr.create_array(path, shape=(40,), dtype="i4", chunks=(4,))[...] = data
    return str(path), data


def _group_source(path: Path) -> tuple[str, np.ndarray]:
    data = np.arange(40, dtype="i4")
    group = aiozarr.create_group(path, attributes={"t": 1})
    group.create_array("a", shape=(40,), dtype="i4", chunks=(4,))[...] = data
    return str(path), data


@pytest.mark.parametrize("moment", MOMENTS)
async def test_resume_keeps_an_array_another_copy_created_meanwhile(
    tmp_path: Path, moment: str
) -> None:
    src, data = _array_source(tmp_path / "src.zarr")

    async def rival(inner: Store) -> None:  # the other `cp --resume`, finished first
        await copy_async(src, inner, resume=True)

    dst = RacingStore(LocalStore(tmp_path / "dst.zarr"), "zarr.json", moment, rival)
    report = await copy_async(src, dst, resume=True)
    assert dst.fired
    assert (report.arrays, report.chunks_written, report.chunks_skipped) == (1, 0, 10)
    np.testing.assert_array_equal(aiozarr.open_array(tmp_path / "dst.zarr", mode="r")[...], data)


@pytest.mark.parametrize("moment", MOMENTS)
async def test_resume_keeps_a_group_created_meanwhile_with_the_sources_attributes(
    tmp_path: Path, moment: str
) -> None:
    src, data = _group_source(tmp_path / "src.zarr")

    async def rival(inner: Store) -> None:  # an older copy's root, other attributes
        await aiozarr.create_group_async(inner, attributes={"t": 0})

    dst = RacingStore(LocalStore(tmp_path / "dst.zarr"), "zarr.json", moment, rival)
    report = await copy_async(src, dst, resume=True)
    assert dst.fired and (report.arrays, report.groups) == (1, 1)
    copied = aiozarr.open_group(tmp_path / "dst.zarr", mode="r")
    assert copied.attrs == {"t": 1}
    np.testing.assert_array_equal(copied["a"][...], data)


@pytest.mark.parametrize("moment", MOMENTS)
async def test_resume_refuses_an_array_created_meanwhile_in_another_layout(
    tmp_path: Path, moment: str
) -> None:
    src, _ = _array_source(tmp_path / "src.zarr")

    async def rival(inner: Store) -> None:
        arr = await aiozarr.create_array_async(inner, shape=(40,), dtype="i4", chunks=(8,))
        await arr.setitem(..., 7)

    dst = RacingStore(LocalStore(tmp_path / "dst.zarr"), "zarr.json", moment, rival)
    with pytest.raises(MetadataError, match="cannot resume into"):
        await copy_async(src, dst, resume=True)
    kept = aiozarr.open_array(tmp_path / "dst.zarr", mode="r")
    assert kept.chunks == (8,) and (kept[...] == 7).all()


@pytest.mark.parametrize("moment", MOMENTS)
async def test_resume_says_a_group_created_meanwhile_is_not_the_array_copied(
    tmp_path: Path, moment: str
) -> None:
    src, _ = _array_source(tmp_path / "src.zarr")

    async def rival(inner: Store) -> None:
        await aiozarr.create_group_async(inner, attributes={"mine": True})

    dst = RacingStore(LocalStore(tmp_path / "dst.zarr"), "zarr.json", moment, rival)
    with pytest.raises(NodeExistsError, match=r"cannot resume into '/'.*it is a group and the"):
        await copy_async(src, dst, resume=True)
    assert aiozarr.open_group(tmp_path / "dst.zarr", mode="r").attrs == {"mine": True}


@pytest.mark.parametrize("moment", MOMENTS)
async def test_a_copy_without_resume_fails_and_leaves_the_node_created_meanwhile(
    tmp_path: Path, moment: str
) -> None:
    src, _ = _group_source(tmp_path / "src.zarr")

    async def rival(inner: Store) -> None:
        group = await aiozarr.create_group_async(inner, attributes={"mine": True})
        arr = await group.create_array("a", shape=(40,), dtype="i4", chunks=(8,))
        await arr.setitem(..., 7)

    # without resume, the create's look is the copy's first read of the root
    dst = RacingStore(LocalStore(tmp_path / "dst.zarr"), "zarr.json", moment, rival, look=1)
    with pytest.raises(NodeExistsError, match="an array or group"):
        await copy_async(src, dst)
    assert dst.fired
    kept = aiozarr.open_group(tmp_path / "dst.zarr", mode="r")
    assert kept.attrs == {"mine": True}
    assert kept["a"].chunks == (8,) and (kept["a"][...] == 7).all()


def _racing_destination(
    monkeypatch: pytest.MonkeyPatch,
    moment: str,
    rival: Callable[[Store], Awaitable[Any]],
    *,
    look: int = 2,
) -> list[RacingStore]:
    """`aiozarr cp`'s destination store, wrapped in a `RacingStore` on `zarr.json`
    (each one made, in the list returned)."""
    made: list[RacingStore] = []

    def racing(store: Any, *, mode: str, **options: Any) -> Store:
        resolved = resolve_store(store, mode=mode, **options)
        if mode == "r":
            return resolved
        made.append(RacingStore(resolved, "zarr.json", moment, rival, look=look))
        return made[-1]

    monkeypatch.setattr(copying, "resolve_store", racing)
    return made


@pytest.mark.parametrize("moment", MOMENTS)
def test_cp_resume_losing_the_race_copies_or_says_why_not(
    tmp_path: Path, moment: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    src, data = _array_source(tmp_path / "src.zarr")

    async def copier(inner: Store) -> None:  # the other copy's array, no unit copied yet
        await aiozarr.create_array_async(inner, shape=(40,), dtype="i4", chunks=(4,))

    made = _racing_destination(monkeypatch, moment, copier)
    argv = ["cp", src, str(tmp_path / "a.zarr"), "--resume", "--progress", "off"]
    assert main(argv) == 0
    assert [store.fired for store in made] == [True]
    np.testing.assert_array_equal(aiozarr.open_array(tmp_path / "a.zarr", mode="r")[...], data)

    async def grouper(inner: Store) -> None:
        await aiozarr.create_group_async(inner)

    made = _racing_destination(monkeypatch, moment, grouper)
    capsys.readouterr()
    assert main(["cp", src, str(tmp_path / "b.zarr"), "--resume", "--progress", "off"]) == 1
    assert [store.fired for store in made] == [True]
    err = capsys.readouterr().err
    assert err.startswith("aiozarr cp: error: cannot resume into '/'")
    assert "it is a group and the copy writes an array there" in err
    assert "--resume keeps it" not in err


@pytest.mark.parametrize("moment", MOMENTS)
def test_cp_without_resume_losing_the_race_names_overwrite_and_resume(
    tmp_path: Path, moment: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    src, _ = _array_source(tmp_path / "src.zarr")

    async def rival(inner: Store) -> None:
        await aiozarr.create_group_async(inner)

    made = _racing_destination(monkeypatch, moment, rival, look=1)
    assert main(["cp", src, str(tmp_path / "b.zarr"), "--progress", "off"]) == 1
    assert [store.fired for store in made] == [True]
    err = capsys.readouterr().err
    assert err.startswith("aiozarr cp: error: an array or group")
    assert "--overwrite replaces it, --resume keeps it" in err
