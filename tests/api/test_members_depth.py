"""`group.members(max_depth=...)` as zarr-python 3's: 0 the direct members, n that many
levels below them too, None every level; sync and async."""

from __future__ import annotations

from pathlib import Path

import pytest

import aiozarr
from aiozarr.errors import InvalidValueError

EXPECTED = {
    0: ["a", "s"],
    1: ["a", "s", "s/b", "s/t"],
    2: ["a", "s", "s/b", "s/t", "s/t/u"],
    None: ["a", "s", "s/b", "s/t", "s/t/u", "s/t/u/c"],
}


def _hierarchy(path: Path, consolidated: bool) -> aiozarr.Group:
    group = aiozarr.open_group(path, mode="w")
    group.create_array("a", shape=(1,), dtype="i1")
    sub = group.create_group("s")
    sub.create_array("b", shape=(1,), dtype="i1")
    sub.create_group("t").create_group("u").create_array("c", shape=(1,), dtype="i1")
    return aiozarr.consolidate_metadata(path) if consolidated else group


@pytest.mark.parametrize("consolidated", [False, True])
@pytest.mark.parametrize("depth", [0, 1, 2, None])
async def test_members_to_a_depth(tmp_path: Path, depth: int | None, consolidated: bool) -> None:
    group = _hierarchy(tmp_path / "g.zarr", consolidated)
    found = group.members(max_depth=depth)
    assert [name for name, _ in found] == EXPECTED[depth]
    kinds = {name: type(node).__name__ for name, node in found}
    assert kinds.get("s/t/u/c", "Array") == "Array" and kinds["s"] == "Group"
    names = [name async for name, _ in group.async_group.members(max_depth=depth)]
    assert names == EXPECTED[depth]
    assert [name for name, _ in group.members()] == EXPECTED[0]  # the default, as zarr's


def test_members_depth_is_zarr_pythons(tmp_path: Path) -> None:
    zarr = pytest.importorskip("zarr")
    _hierarchy(tmp_path / "g.zarr", consolidated=False)
    theirs = zarr.open_group(tmp_path / "g.zarr", mode="r")
    ours = aiozarr.open_group(tmp_path / "g.zarr", mode="r")
    for depth in EXPECTED:
        expected = sorted(name for name, _ in theirs.members(max_depth=depth))
        assert sorted(name for name, _ in ours.members(max_depth=depth)) == expected


@pytest.mark.parametrize("depth", [-1, 1.5])
def test_a_bad_depth_is_refused_by_name(tmp_path: Path, depth: object) -> None:
    group = _hierarchy(tmp_path / "g.zarr", consolidated=False)
    with pytest.raises(InvalidValueError, match="max_depth must be None or an int >= 0"):
        group.members(max_depth=depth)  # type: ignore[arg-type]
