"""A symlink loop in a LocalStore directory gives an `aiozarr.errors` error naming the key,
never a bare ExceptionGroup or OSError: sync, async and on the command line."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

import aiozarr
from aiozarr.cli import info as info_cli
from aiozarr.cli import tree as tree_cli
from aiozarr.errors import StoreError
from aiozarr.storage.backends.local import LocalStore

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")


def _hierarchy(tmp_path: Path, target: str) -> Path:
    """root/g holds an array x and `loop`, a symlink to `target` (relative to g)."""
    path = tmp_path / "loop.zarr"
    root = aiozarr.open_group(str(path), mode="w")
    root.create_group("g").create_array("x", shape=(3,), dtype="i4")
    os.symlink(target, path / "g" / "loop")
    return path


def test_a_link_to_itself_names_the_key_sync(tmp_path: Path) -> None:
    path = _hierarchy(tmp_path, "loop")
    group = aiozarr.open_group(str(path), mode="r")
    for call in (lambda: group["g"].member_names(), group.tree):
        with pytest.raises(StoreError, match=r"'g/loop/zarr\.json'.*symbolic links"):
            call()


def test_a_link_to_itself_names_the_key_async(tmp_path: Path) -> None:
    path = _hierarchy(tmp_path, "loop")

    async def member_names() -> list[str]:
        group = await aiozarr.open_group_async(str(path), "g", mode="r")
        return await group.member_names()

    with pytest.raises(StoreError, match=r"'g/loop/zarr\.json'"):
        asyncio.run(member_names())


def test_a_link_to_its_directory_lists_and_fails_by_key(tmp_path: Path) -> None:
    path = _hierarchy(tmp_path, ".")
    group = aiozarr.open_group(str(path), "g", mode="r")
    assert group.member_names() == ["loop", "x"]  # g/loop is g again: a group
    with pytest.raises(StoreError, match=r"'g/loop/loop/.*zarr\.json'.*symbolic links"):
        group.tree()  # ever deeper, until the OS refuses the path


def test_listing_through_a_loop_is_a_store_error(tmp_path: Path) -> None:
    path = _hierarchy(tmp_path, "loop")
    store = LocalStore(path)

    async def listing(method: str) -> list[str]:
        return [key async for key in getattr(store, method)("g/loop/")]

    for method in ("list_dir", "list_prefix"):
        with pytest.raises(StoreError, match=r"cannot list 'g/loop/'"):
            asyncio.run(listing(method))


@pytest.mark.parametrize("target", ["loop", "."])
@pytest.mark.parametrize("command", [info_cli.main, tree_cli.main])
def test_cli_prints_one_line(tmp_path: Path, capsys, target: str, command) -> None:
    path = _hierarchy(tmp_path, target)
    status = command([str(path / "g")])
    out, err = capsys.readouterr()
    if command is info_cli.main and target == ".":  # info lists without following links
        assert status == 0 and "loop, x" in out
        return
    assert status == 1
    assert err.count("\n") == 1 and err.startswith(f"aiozarr {command.__module__[12:]}: error:")
    assert "loop" in err and "Errno" in err  # the key and the OS message
    assert "ExceptionGroup" not in err and "OSError" not in err  # an aiozarr error


def test_sizes_through_a_loop_name_the_key(tmp_path: Path) -> None:
    """A chunk that is a symlink loop is no missing chunk: its size and whether it exists
    are a `StoreError` naming it, as its read is (it counted 0 bytes, silently)."""
    arr = aiozarr.create_array(str(tmp_path / "a.zarr"), shape=(4,), chunks=(2,), dtype="i4")
    arr[...] = 1
    chunk = tmp_path / "a.zarr" / "c" / "1"
    chunk.unlink()
    os.symlink("1", chunk)
    store = LocalStore(tmp_path / "a.zarr")
    for call in (store.exists, store.getsize):
        with pytest.raises(StoreError, match=r"cannot stat 'c/1'.*symbolic links"):
            asyncio.run(call("c/1"))
    with pytest.raises(StoreError, match=r"'c/1'"):
        arr.nbytes_stored()
    assert asyncio.run(store.exists("c/0")) and asyncio.run(store.getsize("c/0"))
    assert asyncio.run(store.getsize("c/9")) is None and not asyncio.run(store.exists("c"))
