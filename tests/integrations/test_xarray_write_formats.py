"""`aiozarr.xarray.to_zarr` and the Zarr format of what is there: a new group takes the
format of the hierarchy above it (a given one that differs is refused); read back by
aiozarr and by xarray's own engine (zarr-python)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

from tests.integrations.xarray_peers import read, theirs  # noqa: E402

from aiozarr.errors import MetadataError  # noqa: E402
from aiozarr.xarray import to_zarr  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.ZarrUserWarning")


def _root(path: Path, zarr_format: int) -> None:
    theirs(xr.Dataset({"r": ("x", [1.0, 2.0])}), path, zarr_format=zarr_format)


def _both(path: Path, group: str | None = None) -> list[xr.Dataset]:
    """The group read by aiozarr's engine and by xarray's own."""
    return [read(path, engine, group=group) for engine in ("aiozarr", "zarr")]


# -- a new group takes the hierarchy's format ---------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("mode", ["a", "w-", "w"])
@pytest.mark.parametrize("group", ["sub", "g/h"])
def test_a_new_group_takes_the_format_of_the_hierarchy(
    tmp_path: Path, zarr_format: int, mode: str, group: str
) -> None:
    path = tmp_path / "s.zarr"
    _root(path, zarr_format)
    ds = xr.Dataset({"a": ("t", np.arange(3.0))})
    to_zarr(ds, path, group=group, mode=mode)
    document = ".zarray" if zarr_format == 2 else "zarr.json"
    assert (path / group / "a" / document).exists()
    assert (path / "zarr.json").exists() == (zarr_format == 3)  # none beside a v2 root
    for got in _both(path, group):
        xr.testing.assert_identical(got, ds)
    for root in _both(path):  # the root's variables are still found
        assert root["r"].values.tolist() == [1.0, 2.0]


@pytest.mark.parametrize(("stored", "given"), [(2, 3), (3, 2)])
@pytest.mark.parametrize("group", ["sub", "g/h", None])
def test_a_zarr_format_other_than_the_hierarchy_s_is_refused(
    tmp_path: Path, stored: int, given: int, group: str | None
) -> None:
    path = tmp_path / "s.zarr"
    _root(path, stored)
    before = sorted(p.relative_to(path) for p in path.rglob("*"))
    ds = xr.Dataset({"a": ("t", np.arange(3.0))})
    with pytest.raises(MetadataError, match=rf"zarr_format={given}.*'/'.* is Zarr v{stored}"):
        to_zarr(ds, path, group=group, mode="a", zarr_format=given)
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == before  # nothing written


def test_the_format_given_is_taken_where_it_matches_or_nothing_is_there(tmp_path: Path) -> None:
    ds = xr.Dataset({"a": ("t", np.arange(3.0))})
    _root(tmp_path / "v2.zarr", 2)
    to_zarr(ds, tmp_path / "v2.zarr", group="sub", mode="a", zarr_format=2)
    assert (tmp_path / "v2.zarr" / "sub" / "a" / ".zarray").exists()
    to_zarr(ds, tmp_path / "new.zarr", group="sub", zarr_format=2)
    assert (tmp_path / "new.zarr" / ".zgroup").exists()
    to_zarr(ds, tmp_path / "default.zarr", group="sub")
    assert (tmp_path / "default.zarr" / "sub" / "a" / "zarr.json").exists()


def test_mode_w_at_the_root_replaces_a_v2_group_with_the_default_format(tmp_path: Path) -> None:
    path = tmp_path / "s.zarr"
    _root(path, 2)
    ds = xr.Dataset({"a": ("t", np.arange(3.0))})
    to_zarr(ds, path, mode="w")  # nothing above it: zarr-python's default, as xarray
    assert (path / "a" / "zarr.json").exists()
    assert not (path / ".zgroup").exists()
    for got in _both(path):
        xr.testing.assert_identical(got, ds)
