"""Node names: hidden ones (`.hidden`) are members like any other, as in zarr-python;
names of metadata documents (`zarr.json`, `.zattrs`, ...) are refused at creation."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import InvalidKeyError, NodeExistsError
from aiozarr.tools.copying import copy

DOCUMENTS = ["zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_hidden_names_are_listed_copied_and_consolidated(tmp_path: Path, zarr_format: int) -> None:
    # zarr-python lists every name but its format's documents: '.z' and '.hidden' too,
    # and the other format's document names ('.zattrs' is no v3 document)
    group = aiozarr.open_group(tmp_path / "g.zarr", mode="w", zarr_format=zarr_format)
    group.create_array(".hidden", shape=(2,), dtype="i1")[:] = 3
    group.create_group(".z").create_array("x", shape=(1,), dtype="i1")
    assert group.keys() == [".hidden", ".z"]
    assert [name for name, _ in group.members(max_depth=None)] == [".hidden", ".z", ".z/x"]
    assert ".z/" in group.tree() and ".hidden" in group.tree()
    report = copy(tmp_path / "g.zarr", tmp_path / "copy.zarr")
    assert (report.arrays, report.groups) == (2, 2)
    copied = aiozarr.open_group(tmp_path / "copy.zarr", mode="r")
    np.testing.assert_array_equal(copied[".hidden"][:], [3, 3])
    assert copied[".z"].keys() == ["x"]

    # the other format's document name, written by another tool: a member too
    other = ".zattrs" if zarr_format == 3 else "zarr.json"
    group.create_group("renamed")
    (tmp_path / "g.zarr" / "renamed").rename(tmp_path / "g.zarr" / other)
    assert group.keys() == sorted([".hidden", ".z", other])
    consolidated = aiozarr.consolidate_metadata(tmp_path / "g.zarr").metadata.consolidated
    assert consolidated is not None
    assert sorted(consolidated) == sorted([".hidden", ".z", ".z/x", other])
    with pytest.raises(InvalidKeyError, match=f"invalid node name '{re.escape(other)}'"):
        copy(tmp_path / "g.zarr", tmp_path / "again.zarr")  # refused by name, not lost


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("name", DOCUMENTS)
def test_metadata_document_names_are_refused(tmp_path: Path, zarr_format: int, name: str) -> None:
    group = aiozarr.open_group(tmp_path / "g.zarr", mode="w", zarr_format=zarr_format)
    for create in (
        lambda: group.create_group(name),
        lambda: group.create_group(f"a/{name}/b"),
        lambda: group.create_array(name, shape=(1,), dtype="i1"),
    ):
        with pytest.raises(InvalidKeyError, match=f"name '{re.escape(name)}'.*metadata"):
            create()
    # nothing was created in the document's place: the parent's attributes still write
    group.attrs["x"] = 1
    assert dict(aiozarr.open_group(tmp_path / "g.zarr", mode="r").attrs) == {"x": 1}
    assert group.keys() == []


def test_a_hidden_folder_is_no_implicit_group(tmp_path: Path) -> None:
    group = aiozarr.open_group(tmp_path / "g.zarr", mode="w")
    group.create_group("a").create_array("x", shape=(1,), dtype="i1")
    (tmp_path / "g.zarr" / ".git").mkdir()
    (tmp_path / "g.zarr" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / "g.zarr" / "loose").mkdir()  # a folder with keys below: implicit
    (tmp_path / "g.zarr" / "loose" / "k").write_text("k")
    with aiozarr.config.set(implicit_groups=True):
        assert group.keys() == ["a", "loose"]


def test_a_hidden_group_is_a_child_of_an_xarray_tree(tmp_path: Path) -> None:
    xr = pytest.importorskip("xarray")
    root = aiozarr.open_group(tmp_path / "g.zarr", mode="w")
    hidden = root.create_group(".hidden").create_array(
        "v", shape=(2,), dtype="i1", dimension_names=["x"]
    )
    hidden[...] = 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # xarray's on unconsolidated v3
        theirs = xr.open_datatree(tmp_path / "g.zarr", engine="zarr")
        ours = xr.open_datatree(tmp_path / "g.zarr", engine="aiozarr")
    assert sorted(ours.children) == sorted(theirs.children) == [".hidden"]
    np.testing.assert_array_equal(ours[".hidden"]["v"].values, [3, 3])


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(("name", "options"), [("x/c", {"overwrite": True}), ("x/sub", {})])
def test_nothing_is_created_under_an_array(
    tmp_path: Path, zarr_format: int, name: str, options: dict[str, bool]
) -> None:
    # v3: the array's document is the one a group's would be, and under it lie its
    # chunks ("x/c/"): overwriting a group there deleted them all
    path = tmp_path / "g.zarr"
    encoding = {"chunk_key_encoding": {"name": "v2", "separator": "/"}} if zarr_format == 2 else {}
    x = aiozarr.create_array(
        path, "x", shape=(4,), chunks=(2,), dtype="i4", zarr_format=zarr_format, **encoding
    )
    x[:] = [1, 2, 3, 4]
    for create in (aiozarr.create_group, aiozarr.create_array):
        kwargs = {} if create is aiozarr.create_group else {"shape": (1,), "dtype": "i1"}
        with pytest.raises(NodeExistsError, match="its parent 'x' is an array"):
            create(path, name, zarr_format=zarr_format, **options, **kwargs)
    assert aiozarr.open_array(path, "x")[:].tolist() == [1, 2, 3, 4]
    assert sorted(aiozarr.open_group(path).keys()) == ["x"]
