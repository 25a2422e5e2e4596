"""`len(group)`, `group.get(name, default)` and `group.nmembers(max_depth)`, as in
zarr-python (checked against it on the same hierarchy)."""

from __future__ import annotations

from pathlib import Path

import zarr

import aiozarr


def test_len_get_and_nmembers_as_zarr_python(tmp_path: Path) -> None:
    ours = aiozarr.create_group(tmp_path / "g.zarr")
    ours.create_array("a", shape=(2,), dtype="i1")
    ours.create_array("sub/deeper/b", shape=(2,), dtype="i1")
    theirs = zarr.open_group(tmp_path / "g.zarr", mode="r")
    assert len(ours) == len(theirs) == 2
    for depth in (0, 1, None):
        assert ours.nmembers(depth) == theirs.nmembers(depth)
    assert isinstance(ours.get("a"), aiozarr.Array)
    assert isinstance(ours.get("sub/deeper"), aiozarr.Group)
    assert ours.get("sub/deeper/b").path == theirs.get("sub/deeper/b").path == "sub/deeper/b"
    assert ours.get("missing") is theirs.get("missing") is None
    assert ours.get("missing", 5) == theirs.get("missing", 5) == 5
