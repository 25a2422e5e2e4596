"""A node replaced (`overwrite=True`) or deleted leaves the consolidated snapshots above
it: every group above, not only its parent. A snapshot still listing the old metadata
read the new array's chunks with the old data type (wrong values, silently), and a
deleted node as fill values. zarr-python 3.4.2 does both (it updates no snapshot on an
overwrite, and on a delete only the deleting group's own)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import zarr

import aiozarr


def _consolidated(path: Path, zarr_format: int) -> None:
    """A root holding `x` (int32 1..4, uncompressed) and group `a` holding `y`, the
    root consolidated (its snapshot lists `x`, `a` and `a/y`)."""
    root = aiozarr.create_group(str(path), zarr_format=zarr_format)
    x = root.create_array("x", shape=(4,), dtype="i4", fill_value=0, compressors=None)
    x[...] = [1, 2, 3, 4]
    sub = root.create_group("a")
    sub.create_array("y", shape=(2,), dtype="i4", fill_value=-1)[...] = [5, 6]
    aiozarr.consolidate_metadata(str(path))


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("through", ["group", "create_array"])
def test_an_array_replaced_reads_as_written(tmp_path: Path, zarr_format: int, through: str) -> None:
    _consolidated(tmp_path, zarr_format)
    options = dict(shape=(4,), dtype="f4", fill_value=0.5, compressors=None, overwrite=True)
    if through == "group":
        new = aiozarr.open_group(str(tmp_path)).create_array("x", **options)
    else:
        new = aiozarr.create_array(str(tmp_path), "x", zarr_format=zarr_format, **options)
    new[...] = [1.5, 2.5, 3.5, 4.5]
    for lib in (aiozarr, zarr):
        x = lib.open_group(str(tmp_path), mode="r")["x"]
        assert x.dtype == np.dtype("f4")
        np.testing.assert_array_equal(x[...], [1.5, 2.5, 3.5, 4.5])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_nested_node_replaced_leaves_every_snapshot_above(
    tmp_path: Path, zarr_format: int
) -> None:
    _consolidated(tmp_path, zarr_format)
    aiozarr.consolidate_metadata(str(tmp_path / "a"))  # `a` holds a snapshot of its own
    aiozarr.create_group(str(tmp_path), "a/y", zarr_format=zarr_format, overwrite=True)
    for where, path in ((tmp_path, "a/y"), (tmp_path / "a", "y")):
        replaced = aiozarr.open_group(str(where))[path]
        assert isinstance(replaced, aiozarr.Group)
        assert replaced.keys() == []
    assert isinstance(zarr.open_group(str(tmp_path), mode="r")["a/y"], zarr.Group)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_delete_through_a_member_group_leaves_the_roots_snapshot(
    tmp_path: Path, zarr_format: int
) -> None:
    _consolidated(tmp_path, zarr_format)
    sub = aiozarr.open_group(str(tmp_path))["a"]  # opened from the root's snapshot
    del sub["y"]
    for lib in (aiozarr, zarr):
        root = lib.open_group(str(tmp_path), mode="r")
        assert "a/y" not in root
        assert list(root["a"].keys()) == []


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_node_created_after_the_snapshot_stays_out_of_it(
    tmp_path: Path, zarr_format: int
) -> None:
    _consolidated(tmp_path, zarr_format)
    root = aiozarr.open_group(str(tmp_path))
    root.create_array("new", shape=(2,), dtype="i4", overwrite=True)
    assert sorted(aiozarr.open_group(str(tmp_path)).keys()) == ["a", "x"]


def test_an_ancestor_that_does_not_read_does_not_stop_an_overwrite(tmp_path: Path) -> None:
    """A group document this process cannot read (an extension it must understand) holds
    no snapshot it could keep current: the overwrite below it succeeds, as before."""
    root = aiozarr.create_group(str(tmp_path))
    root.create_array("x", shape=(2,), dtype="i4")
    document = json.loads((tmp_path / "zarr.json").read_text())
    document["future"] = {"must_understand": True}
    (tmp_path / "zarr.json").write_text(json.dumps(document))
    new = aiozarr.create_array(str(tmp_path), "x", shape=(3,), dtype="f4", overwrite=True)
    assert aiozarr.open_array(str(tmp_path / "x")).shape == new.shape == (3,)
