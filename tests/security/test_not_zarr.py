"""A path that is not Zarr is an error, not an empty group.

Zarr v3.0 has no implicit groups (the 2020 draft had them): a folder without
`zarr.json` or `.zgroup` opens as nothing, whatever lies below it. `open_group` raises
`GroupNotFoundError` (a `NodeNotFoundError`, a `KeyError` and a `FileNotFoundError`),
naming the path, as zarr-python 3 does; a group's listing skips such folders; the
command line exits non-zero instead of describing or walking the folder. The
`implicit_groups` setting turns the draft's behaviour back on.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import aiozarr
from aiozarr import errors


@pytest.fixture
def not_zarr(tmp_path: Path) -> Path:
    """A folder with a file and folders of files, as /etc is: no Zarr metadata anywhere."""
    root = tmp_path / "notzarr"
    (root / "X11" / "xinit").mkdir(parents=True)
    (root / "file.txt").write_text("not zarr\n")
    (root / "X11" / "xinit" / "xinitrc").write_text("#!/bin/sh\n")
    (root / "PackageKit").mkdir()
    (root / "PackageKit" / "PackageKit.conf").write_text("[Daemon]\n")
    return root


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aiozarr", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("zarr_format", [None, 3])
def test_open_group_on_a_folder_that_is_not_zarr_raises(
    not_zarr: Path, zarr_format: int | None
) -> None:
    with pytest.raises(errors.GroupNotFoundError, match=r"no zarr\.json or \.zgroup") as caught:
        aiozarr.open_group(not_zarr, mode="r", zarr_format=zarr_format)
    assert isinstance(caught.value, errors.NodeNotFoundError)
    assert isinstance(caught.value, FileNotFoundError)
    assert "notzarr" in str(caught.value)
    with pytest.raises(errors.GroupNotFoundError):
        aiozarr.open_group(not_zarr / "X11", mode="r")
    with pytest.raises(errors.NodeNotFoundError):
        aiozarr.open(not_zarr, mode="r")


def test_folders_without_metadata_are_not_members(not_zarr: Path) -> None:
    group = aiozarr.create_group(not_zarr / "X11" / "data.zarr")
    group.create_array("temperature", shape=(4,), dtype="f4")
    (not_zarr / "X11" / "data.zarr" / "scratch").mkdir()
    (not_zarr / "X11" / "data.zarr" / "scratch" / "notes.txt").write_text("draft\n")
    group = aiozarr.open_group(not_zarr / "X11" / "data.zarr", mode="r")
    assert group.member_names() == ["temperature"]
    assert group.group_keys() == []
    assert "scratch" not in group
    with pytest.raises(errors.NodeNotFoundError, match="scratch"):
        group["scratch"]


@pytest.mark.parametrize("command", ["info", "tree"])
def test_the_command_line_refuses_a_folder_that_is_not_zarr(not_zarr: Path, command: str) -> None:
    result = _cli(command, str(not_zarr))
    assert result.returncode != 0, result.stdout
    assert "no zarr.json or .zgroup" in result.stderr
    assert "PackageKit" not in result.stdout + result.stderr


def test_implicit_groups_on_request(not_zarr: Path) -> None:
    with aiozarr.config.set(implicit_groups=True):
        group = aiozarr.open_group(not_zarr, mode="r")
        assert group.group_keys() == ["PackageKit", "X11"]
