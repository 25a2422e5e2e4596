"""`open_group(mode="w-")` creates a group only where nothing is: keys below the path
that no node holds (the chunks of an array whose document went, other files) are refused
too, as zarr-python refuses them ("already contains data"), and nothing is written."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import zarr

import aiozarr
from aiozarr import errors


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_leftover_chunks_are_refused_as_zarr_python_refuses_them(tmp_path: Path) -> None:
    root = tmp_path / "data.zarr"
    aiozarr.create_group(root).create_array("g", data=np.arange(4), chunks=(2,))
    os.remove(root / "g" / "zarr.json")  # the chunks stay, no node holds them
    before = _files(root)
    with pytest.raises(errors.NodeExistsError, match=r"'g' .* not empty \('g/c/"):
        aiozarr.open_group(root, "g", mode="w-")
    assert _files(root) == before
    with pytest.raises(FileExistsError):
        zarr.open_group(root, path="g", mode="w-")


def test_a_folder_of_other_files_is_refused_before_any_parent_is_written(tmp_path: Path) -> None:
    (tmp_path / "data.zarr" / "a" / "g").mkdir(parents=True)
    (tmp_path / "data.zarr" / "a" / "g" / "notes.txt").write_text("x")
    with pytest.raises(errors.NodeExistsError, match=r"notes\.txt"):
        aiozarr.open_group(tmp_path / "data.zarr", "a/g", mode="w-")
    assert _files(tmp_path / "data.zarr") == ["a/g/notes.txt"]


def test_where_nothing_is_the_group_is_created(tmp_path: Path) -> None:
    root = tmp_path / "data.zarr"
    aiozarr.create_group(root).create_array("gg", data=np.arange(2))  # a sibling, not below
    group = aiozarr.open_group(root, "g", mode="w-", attributes={"k": 1})
    assert (group.attrs, aiozarr.open_group(root).keys()) == ({"k": 1}, ["g", "gg"])
    with pytest.raises(errors.NodeExistsError, match="already exists at 'g'"):
        aiozarr.open_group(root, "g", mode="w-")
