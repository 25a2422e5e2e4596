"""`del group[name]` on a local directory while files are being written into it.

A file a writer creates in a directory that `delete_prefix` is removing (after the
removal listed it, before it removes the directory) used to end the delete with a raw
`[Errno 39] Directory not empty`, the array half deleted: its metadata gone, chunk
files left for the next array created there to adopt. The writer's file is forced in
at that exact moment by an audit hook on `os.rmdir` (Python raises the event just before
removing a directory), so the race happens on every run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.storage.backends import local
from aiozarr.storage.backends.local import TEMP_SUFFIX, LocalStore

# Audit hooks cannot be removed: one hook for the module, armed by the test that needs it.
# `armed`: the number of `os.rmdir` calls to let pass before the one that gets a file.
_state: dict[str, Any] = {"armed": None, "root": None, "made": []}


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event != "os.rmdir" or _state["armed"] is None:
        return
    path, dir_fd = args
    if dir_fd is None and not str(path).startswith(str(_state["root"])):
        return  # not under the test's store
    if _state["armed"] > 0:
        _state["armed"] -= 1
        return
    _state["armed"] = None  # once: a writer's file lands in the directory being removed
    name = os.path.join(os.fsdecode(path), "0.written-late")
    fd = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=dir_fd)
    os.close(fd)
    _state["made"].append(name)


sys.addaudithook(_hook)


@pytest.fixture
def armed(tmp_path: Path) -> Any:
    _state.update(root=tmp_path, made=[])
    yield lambda nth: _state.update(armed=nth)
    _state["armed"] = None


@pytest.mark.parametrize("nth", [0, 1], ids=["in-chunk-folder", "in-array-folder"])
def test_a_file_created_during_a_prefix_delete_neither_fails_it_nor_survives(
    tmp_path: Path, armed: Any, nth: int
) -> None:
    group = aiozarr.open_group(tmp_path / "g.zarr", mode="w")
    arr = group.create_array("a", shape=(8,), chunks=(4,), dtype="i4")
    arr[...] = np.arange(8, dtype="i4")  # a/zarr.json, a/c/0, a/c/1
    armed(nth)  # the 1st rmdir removes a's `c/` folder, the 2nd a's own folder
    del group["a"]  # no OSError: the removal is retried
    assert _state["made"], "the writer's file was never created: the hook missed"
    assert "a" not in group
    left = [p for p in (tmp_path / "g.zarr").rglob("*") if p.name != "zarr.json"]
    assert left == []  # nothing half deleted, nothing set aside left over
    again = group.create_array("a", shape=(8,), chunks=(4,), dtype="i4")
    assert again[...].tolist() == [0] * 8  # no chunk of the old array adopted


def test_a_folder_set_aside_by_a_killed_delete_is_not_listed_and_is_swept(
    tmp_path: Path,
) -> None:
    """The prefix is set aside (one rename) before it is removed: what a delete killed
    mid-way leaves is no key of any listing, and the next write there sweeps it."""
    group = aiozarr.open_group(tmp_path / "g.zarr", mode="w")
    group.create_array("a", shape=(4,), chunks=(4,), dtype="i4")[...] = 1
    aside = tmp_path / "g.zarr" / f".a.otherhost-1-abc{TEMP_SUFFIX}"
    (tmp_path / "g.zarr" / "a").rename(aside)  # what a delete set aside, then died
    os.utime(aside, (0, 0))  # long ago: no running delete of any host owns it now
    store = LocalStore(tmp_path / "g.zarr")
    assert aiozarr.sync.run(_keys, store) == ["zarr.json"]
    assert "a" not in group
    aiozarr.open_group(store, mode="r+").attrs["x"] = 1  # a write into the folder
    assert not aside.exists()


async def _keys(store: LocalStore) -> list[str]:
    return [key async for key in store.list_prefix("")]


@pytest.mark.parametrize("existing", [False, True])
async def test_a_conditional_write_whose_folder_a_delete_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    """A delete removing the folder (the temp file in it too) between the temp write and
    the locked rename raised a raw `[Errno 2]`: a create now tries again (the folder
    made anew), and a write on a version finds that version gone (a conflict)."""
    from aiozarr.errors import VersionConflictError
    from aiozarr.storage.backends import local

    store = LocalStore(tmp_path / "s")
    await store.set("g/sub/zarr.json", b"{}")
    version = (await store.get_versioned("g/sub/zarr.json"))[1] if existing else None
    write_temp, removed = local._write_temp, []

    def write_then_lose_the_folder(path: Path, value: Any) -> Path:
        temp = write_temp(path, value)
        if not removed:  # once, as a concurrent `delete_prefix` of the folder does
            removed.append(path.parent)
            for child in path.parent.iterdir():
                child.unlink()
            path.parent.rmdir()
        return temp

    monkeypatch.setattr(local, "_write_temp", write_then_lose_the_folder)
    if existing:
        with pytest.raises(VersionConflictError, match="gone"):
            await store.set_if("g/sub/zarr.json", b'{"a": 1}', version)
    else:
        await store.set_if("g/sub/x/zarr.json", b'{"a": 1}', None)
        assert bytes(await store.get("g/sub/x/zarr.json")) == b'{"a": 1}'
    assert removed


@pytest.mark.parametrize("name", ["a" * 240, "日本" * 40], ids=["240-ascii", "240-utf8"])
def test_a_long_named_node_is_set_aside_before_it_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """However long the node's name, the removal starts with one rename: never its
    metadata gone with its chunks still there."""
    removed: list[str] = []
    remove_tree = local._remove_tree
    monkeypatch.setattr(
        local, "_remove_tree", lambda path: (removed.append(path.name), remove_tree(path))
    )
    group = aiozarr.open_group(tmp_path / "g.zarr", mode="w")
    group.create_array(name, shape=(4,), chunks=(2,), dtype="i4")[...] = 1
    del group[name]
    assert len(removed) == 1 and removed[0].endswith(TEMP_SUFFIX)
    assert sorted(os.listdir(tmp_path / "g.zarr")) == ["zarr.json"]
