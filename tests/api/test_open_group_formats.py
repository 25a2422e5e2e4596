"""`open_group(mode="a", zarr_format=N)` over a group of the other format: refused,
naming it, as modes "r" and "r+" refuse it; nothing is written. zarr-python writes a
group of format N beside it, which hides one from the other's readers."""

from __future__ import annotations

from pathlib import Path

import pytest

import aiozarr
from aiozarr import errors


def _keys(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize(("stored", "asked"), [(3, 2), (2, 3)])
def test_a_group_of_the_other_format_is_not_returned(
    tmp_path: Path, stored: int, asked: int
) -> None:
    root = tmp_path / "data.zarr"
    aiozarr.create_group(root, zarr_format=stored).create_group("g", attributes={"k": 1})
    before = _keys(root)
    with pytest.raises(
        errors.NodeExistsError, match=f"v{stored} group is at 'g'.*not the v{asked}"
    ):
        aiozarr.open_group(root, "g", mode="a", zarr_format=asked)
    for mode in ("r", "r+"):
        with pytest.raises(errors.GroupNotFoundError):
            aiozarr.open_group(root, "g", mode=mode, zarr_format=asked)
    assert _keys(root) == before
    for fmt in (None, stored):  # its own format, or any, opens it
        group = aiozarr.open_group(root, "g", mode="a", zarr_format=fmt)
        assert (group.zarr_format, group.attrs) == (stored, {"k": 1})
