"""A v2 group's `.zmetadata` follows the changes readers take from it, as zarr-python's
does: the group's own attributes and its members' deletes. Other writes (a member's
attributes, a resize) leave the snapshot as it was, as in zarr-python."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import zarr
from tests.reliability.interleaving import BeforeWrites, OtherProcess

import aiozarr
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.protocol import Store


def _consolidated_root(lib: ModuleType, path: Path) -> Any:
    """A v2 group (arrays x, y; group a holding x, z) consolidated, opened from it."""
    root = lib.create_group(str(path), zarr_format=2)
    root.create_array("x", shape=(3,), dtype="i4", fill_value=0)[:] = [1, 2, 3]
    root.create_array("y", shape=(3,), dtype="i4", fill_value=0)
    sub = root.create_group("a", attributes={"k": 1})
    sub.create_array("x", shape=(2,), dtype="i4", fill_value=0)
    sub.create_array("z", shape=(2,), dtype="i4", fill_value=0)
    lib.consolidate_metadata(str(path))
    return lib.open_group(str(path), mode="r+")


def _snapshot(path: Path) -> dict[str, Any]:
    return json.loads((path / ".zmetadata").read_text())["metadata"]


def _after_root_changes(lib: ModuleType, path: Path) -> tuple[list[str], dict[str, Any]]:
    """What a reader of the snapshot sees after the root's attributes change and a
    member goes: its members and its attributes."""
    root = _consolidated_root(lib, path)
    root.attrs["title"] = "hello"
    del root["x"]
    root = lib.open_group(str(path), mode="r")
    return sorted(root.keys()), dict(root.attrs)


def test_root_attributes_and_deletes_reach_the_snapshot_as_in_zarr_python(tmp_path: Path) -> None:
    expected = (["a", "y"], {"title": "hello"})
    assert _after_root_changes(zarr, tmp_path / "zarr") == expected
    assert _after_root_changes(aiozarr, tmp_path / "aiozarr") == expected
    snapshot = _snapshot(tmp_path / "aiozarr")
    assert snapshot[".zattrs"] == {"title": "hello"}
    assert not any(key.startswith("x/") for key in snapshot)
    # zarr-python reads the snapshot aiozarr wrote as aiozarr does
    theirs = zarr.open_group(tmp_path / "aiozarr", mode="r", use_consolidated=True)
    assert (sorted(theirs.keys()), dict(theirs.attrs)) == expected


def test_a_deleted_member_is_no_phantom_of_fill_values(tmp_path: Path) -> None:
    root = _consolidated_root(aiozarr, tmp_path)
    del root["x"]
    assert "x" not in aiozarr.open_group(tmp_path, mode="r")


def test_a_nested_delete_leaves_the_snapshot_too(tmp_path: Path) -> None:
    """zarr-python 3.1.6 keeps `a/x` in the root's snapshot (its delete looks for the
    path among the direct members only), so a reader finds it again: here it goes."""
    root = _consolidated_root(aiozarr, tmp_path)
    del root["a/x"]
    assert not any(key.startswith("a/x/") for key in _snapshot(tmp_path))
    opened = aiozarr.open_group(tmp_path, mode="r")
    assert "a/x" not in opened
    assert sorted(opened["a"].keys()) == ["z"]
    assert sorted(zarr.open_group(tmp_path, mode="r")["a"].keys()) == ["z"]


def test_removed_attributes_leave_the_snapshot(tmp_path: Path) -> None:
    root = _consolidated_root(aiozarr, tmp_path)
    root.update_attributes({"title": "hello"})
    assert _snapshot(tmp_path)[".zattrs"] == {"title": "hello"}
    root.delete_attributes(["title"])
    assert _snapshot(tmp_path)[".zattrs"] == {}
    assert dict(aiozarr.open_group(tmp_path, mode="r").attrs) == {}


def _member_changes(lib: ModuleType, path: Path) -> list[Any]:
    """The snapshot's entries for members changed through their own handles."""
    root = _consolidated_root(lib, path)
    root["y"].attrs["units"] = "m"
    root["y"].resize((5,))
    root["a"].attrs["k"] = 2
    snapshot = _snapshot(path)
    return [snapshot["y/.zattrs"], snapshot["y/.zarray"]["shape"], snapshot["a/.zattrs"]]


def test_member_changes_leave_the_snapshot_as_in_zarr_python(tmp_path: Path) -> None:
    expected = [{}, [3], {"k": 1}]
    assert _member_changes(zarr, tmp_path / "zarr") == expected
    assert _member_changes(aiozarr, tmp_path / "aiozarr") == expected


class _ConsolidatedMeanwhile(BeforeWrites):
    """Before its first write of `.zmetadata`, another writer adds the array `z` and
    consolidates again: the snapshot read is no longer the one stored."""

    def __init__(self, inner: Store, root: Path) -> None:
        super().__init__(inner)
        self.root: Path | None = root

    async def before(self, key: str) -> None:
        if key == ".zmetadata" and self.root is not None:
            root, self.root = self.root, None
            other = OtherProcess(LocalStore(root))
            await aiozarr.create_array_async(other, "z", shape=(2,), dtype="i4", zarr_format=2)
            await aiozarr.consolidate_metadata_async(other)


def test_the_snapshot_is_written_on_its_version(tmp_path: Path) -> None:
    """A snapshot another writer stored after the group was read keeps its members."""
    _consolidated_root(aiozarr, tmp_path)
    store = _ConsolidatedMeanwhile(LocalStore(tmp_path), tmp_path)
    root = aiozarr.open_group(store, mode="r+")
    root.update_attributes({"title": "hello"})
    assert store.root is None  # the other writer ran between the read and the write
    opened = aiozarr.open_group(tmp_path, mode="r")
    assert (sorted(opened.keys()), dict(opened.attrs)) == (["a", "x", "y", "z"], {"title": "hello"})
    np.testing.assert_array_equal(opened["x"][:], [1, 2, 3])
