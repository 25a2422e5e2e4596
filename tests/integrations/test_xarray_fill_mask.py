"""`use_zarr_fill_value_as_mask` and a variable's own `_FillValue` attribute: which
values come back missing, compared with xarray's own engine where it takes the option."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.ZarrUserWarning")


def test_v2_plain_fill_value_attribute_without_zarr_mask(tmp_path: Path) -> None:
    """A v2 `_FillValue` attribute is plain JSON (xarray encodes it only for v3): with the
    zarr fill_value left out of the mask, the attribute still masks its values."""
    group = zarr.open_group(tmp_path / "g.zarr", mode="w", zarr_format=2)
    array = group.create_array("f", shape=(3,), dtype="f8", chunks=(3,), fill_value=2.0)
    array[...] = [1.0, 2.0, 3.0]
    array.attrs.update({"_ARRAY_DIMENSIONS": ["x"], "_FillValue": 3.0})
    path = tmp_path / "g.zarr"
    opened = {"consolidated": False}  # zarr-python wrote no consolidated metadata here
    ds = xr.open_dataset(path, engine="aiozarr", use_zarr_fill_value_as_mask=False, **opened)
    np.testing.assert_array_equal(ds.f.values, [1.0, 2.0, np.nan])
    assert ds.f.encoding["_FillValue"] == 3.0
    masked = xr.open_dataset(path, engine="aiozarr", **opened)  # v2's default: zarr's fill
    theirs = xr.open_dataset(path, engine="zarr", **opened)
    xr.testing.assert_identical(masked.load(), theirs.load())


def test_v3_own_fill_value_kept_with_zarr_mask(tmp_path: Path) -> None:
    """With `use_zarr_fill_value_as_mask=True` on v3, a variable's own `_FillValue`
    (written by xarray) stays its mask: zarr's fill_value, 0 for these integers, is not
    put in its place (which read the stored -999 as -498.5, and 0 as missing)."""
    ds = xr.Dataset(
        {"packed": ("x", np.array([1.0, np.nan, 0.5, 5.5]))},
        coords={"x": np.arange(4)},
    )
    ds.packed.encoding = {"dtype": "i2", "scale_factor": 0.5, "add_offset": 0.5, "_FillValue": -999}
    path = tmp_path / "g.zarr"
    ds.to_zarr(path, zarr_format=3, consolidated=True)
    assert zarr.open_array(path / "packed").fill_value == 0  # the stored 0.5
    read = xr.open_dataset(path, engine="aiozarr", use_zarr_fill_value_as_mask=True).load()
    np.testing.assert_array_equal(read.packed.values, ds.packed.values)
    assert read.packed.encoding["_FillValue"] == -999
    default = xr.open_dataset(path, engine="aiozarr").load()  # v3's default: no zarr mask
    xr.testing.assert_identical(default, xr.open_dataset(path, engine="zarr").load())
