"""`aiozarr.xarray.to_zarr` checks against what is stored, and a lazy dataset after a
write: a region write smaller than its region, times finer than the stored units, bool
variables with a `_FillValue`, `_Unsigned` integers, a snapshot left by
`consolidated=False`, and the datetime ends read while a dataset opens."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")

from tests.integrations.xarray_peers import read, theirs  # noqa: E402

from aiozarr.errors import InvalidValueError, ValueOutOfRangeError  # noqa: E402
from aiozarr.xarray import to_zarr  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.ZarrUserWarning")


# -- a region write of a variable smaller than its region ---------------------------------

FULL = xr.Dataset({"a": (("time", "y"), np.zeros((6, 4)))})
SMALLER = {
    "the region is longer": (FULL.isel(time=slice(0, 1)) + 1, {"time": slice(0, 4)}),
    "a whole slice": (FULL.isel(time=slice(0, 1)) + 1, {"time": slice(None)}),
    "a dimension outside it": (
        FULL.isel(time=slice(0, 2), y=slice(0, 1)) + 1,
        {"time": slice(0, 2)},
    ),
    "a wider one outside it": (
        FULL.isel(time=slice(0, 2), y=slice(0, 2)) + 1,
        {"time": slice(0, 2)},
    ),
}


@pytest.mark.parametrize("case", list(SMALLER))
def test_a_region_write_of_another_size_is_refused(tmp_path: Path, case: str) -> None:
    part, region = SMALLER[case]
    ours, ref = tmp_path / "ours.zarr", tmp_path / "ref.zarr"
    to_zarr(FULL, ours)
    theirs(FULL, ref)
    with pytest.raises(InvalidValueError, match=r"variable 'a' has size \d along") as caught:
        to_zarr(part, ours, region=region)
    assert isinstance(caught.value, ValueError)  # as xarray's refusal
    with pytest.raises(ValueError):
        theirs(part, ref, region=region)
    assert (read(ours)["a"].values == 0).all()  # nothing written


def test_a_region_write_of_the_region_size_is_written(tmp_path: Path) -> None:
    path = tmp_path / "s.zarr"
    to_zarr(FULL, path)
    to_zarr(FULL.isel(time=slice(-2, None)) + 1, path, region={"time": slice(-2, None)})
    assert read(path)["a"].values[:, 0].tolist() == [0, 0, 0, 0, 1, 1]


# -- times finer than the stored units ------------------------------------------------------


def _days(name: str, values: Any) -> xr.Dataset:
    return xr.Dataset({name: ("time", np.asarray(values))})


@pytest.mark.parametrize(
    ("stored", "finer"),
    [
        (pd.date_range("2000-01-01", periods=2).values, ["2000-01-03T06:00"]),
        (pd.to_timedelta([0, 1], unit="D").values, pd.to_timedelta(["54h"]).values),
    ],
    ids=["datetime", "timedelta"],
)
@pytest.mark.parametrize("how", ["append", "region"])
def test_times_finer_than_the_stored_units_are_refused(
    tmp_path: Path, stored: Any, finer: Any, how: str
) -> None:
    path = tmp_path / "s.zarr"
    to_zarr(_days("t", stored), path)  # int64 "days since 2000-01-01" / "days"
    kind = "M8[ns]" if stored.dtype.kind == "M" else "m8[ns]"
    more = _days("t", np.asarray(finer, dtype=kind))
    options: dict[str, Any] = (
        {"append_dim": "time"} if how == "append" else {"region": {"time": slice(1, 2)}}
    )
    refused = pytest.raises(ValueOutOfRangeError, match=r"'t'.*units='days")
    with refused as caught, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # xarray's, on switching the units to hours
        to_zarr(more, path, **options)
    assert "whole steps of its units" in str(caught.value)
    np.testing.assert_array_equal(read(path)["t"].values, stored)  # nothing written


def test_times_in_whole_stored_units_are_appended(tmp_path: Path) -> None:
    path = tmp_path / "s.zarr"
    times = pd.date_range("2000-01-01", periods=4).values
    to_zarr(xr.Dataset(coords={"time": times[:2]}), path)
    to_zarr(xr.Dataset(coords={"time": times[2:]}), path, append_dim="time")
    assert (read(path)["time"].values == times).all()
    assert read(path)["time"].encoding["units"].startswith("days since")


# -- booleans with a _FillValue ---------------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("fill", [False, True])
def test_booleans_with_a_fill_value_read_back_as_xarrays(
    tmp_path: Path, zarr_format: int, fill: bool
) -> None:
    ours, ref = tmp_path / "ours.zarr", tmp_path / "ref.zarr"
    ds = xr.Dataset({"a": ("x", np.array([True, False, True]))})
    encoding = {"a": {"_FillValue": fill}}
    to_zarr(ds, ours, encoding=encoding, zarr_format=zarr_format)
    theirs(ds, ref, encoding=encoding, zarr_format=zarr_format)
    for engine in ("zarr", "aiozarr"):
        xr.testing.assert_identical(read(ours, engine), read(ref, engine))


# -- _Unsigned integers --------------------------------------------------------------------------


def _unsigned(values: Any) -> xr.Dataset:
    return xr.Dataset({"a": ("x", np.asarray(values), {"_Unsigned": "true"})})


_WRAPS_AS_X86 = np.array([250.0]).astype(np.int8)[0] == -6  # numpy's cast: by platform


@pytest.mark.parametrize(
    "values",
    [
        pytest.param(
            [0.0, 250.0, np.nan],
            marks=pytest.mark.skipif(not _WRAPS_AS_X86, reason="float to int8 cast saturates"),
        ),
        np.array([0, 250, 7], dtype=np.uint8),
    ],
    ids=["floats", "uint8"],
)
def test_unsigned_integers_read_back_as_written(tmp_path: Path, values: Any) -> None:
    ours, ref = tmp_path / "ours.zarr", tmp_path / "ref.zarr"
    encoding = {"a": {"dtype": "int8", "_FillValue": -1}}
    to_zarr(_unsigned(values), ours, encoding=encoding)
    theirs(_unsigned(values), ref, encoding=encoding)
    np.testing.assert_array_equal(read(ours)["a"].values, np.asarray(values, dtype=float))
    xr.testing.assert_identical(read(ours), read(ref))


def test_unsigned_values_beyond_the_unsigned_range_are_refused(tmp_path: Path) -> None:
    encoding = {"a": {"dtype": "int8", "_FillValue": -1}}
    with pytest.raises(
        ValueOutOfRangeError, match=r"300\.0 cannot be stored as int8, which holds 0 to 255"
    ):
        to_zarr(_unsigned([0.0, 300.0]), tmp_path / "s.zarr", encoding=encoding)


def test_an_append_to_an_unsigned_array_decodes_with_the_stored_attribute(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.zarr"
    values = np.array([0, 250], dtype=np.uint8)
    to_zarr(_unsigned(values), path, encoding={"a": {"dtype": "int8", "_FillValue": -1}})
    to_zarr(xr.Dataset({"a": ("x", values[::-1])}), path, append_dim="x")  # no attribute
    assert read(path)["a"].values.tolist() == [0, 250, 250, 0]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_unsigned_given_as_an_encoding_writes_and_appends_as_xarray(
    tmp_path: Path, zarr_format: int
) -> None:
    ours, ref = tmp_path / "ours.zarr", tmp_path / "ref.zarr"
    first = xr.Dataset({"a": ("x", np.array([1.0, np.nan, 200.0]))})
    more = xr.Dataset({"a": ("x", np.array([254.0, 0.0]))})
    encoding = {"a": {"dtype": "int8", "_Unsigned": "true", "_FillValue": -1}}
    to_zarr(first, ours, encoding=encoding, zarr_format=zarr_format)
    theirs(first, ref, encoding=encoding, zarr_format=zarr_format)
    to_zarr(more, ours, append_dim="x")
    theirs(more, ref, append_dim="x")
    np.testing.assert_array_equal(read(ours)["a"].values, [1.0, np.nan, 200.0, 254.0, 0.0])
    for engine in ("zarr", "aiozarr"):
        xr.testing.assert_identical(read(ours, engine), read(ref, engine))


# -- consolidated=False into a group holding a snapshot -----------------------------------------


@pytest.mark.parametrize("attrs", [{}, {"title": "x"}], ids=["no-attrs", "attrs"])
@pytest.mark.parametrize("engine", ["zarr", "aiozarr"])
def test_an_unconsolidated_append_leaves_no_stale_snapshot(
    tmp_path: Path, attrs: dict[str, Any], engine: str
) -> None:
    path = tmp_path / "s.zarr"
    times = pd.date_range("2000-01-01", periods=6)
    ds = xr.Dataset({"a": ("time", np.arange(6.0))}, coords={"time": times}, attrs=attrs)
    to_zarr(ds.isel(time=slice(0, 3)), path)  # consolidated
    to_zarr(ds.isel(time=slice(3, 6)), path, append_dim="time", consolidated=False)
    assert "consolidated_metadata" not in json.loads((path / "zarr.json").read_text())
    assert read(path, engine)["a"].values.tolist() == list(range(6))


@pytest.mark.parametrize("attrs", [{}, {"title": "x"}], ids=["no-attrs", "attrs"])
@pytest.mark.parametrize("engine", ["zarr", "aiozarr"])
def test_an_unconsolidated_v2_append_leaves_no_stale_zmetadata(
    tmp_path: Path, attrs: dict[str, Any], engine: str
) -> None:
    """v2 keeps its snapshot in `.zmetadata`, which was left as it was: both engines read
    the rows and variables of before the write (3 of 6, no 'b')."""
    path = tmp_path / "s.zarr"
    times = pd.date_range("2000-01-01", periods=6)
    ds = xr.Dataset({"a": ("time", np.arange(6.0))}, coords={"time": times}, attrs=attrs)
    to_zarr(ds.isel(time=slice(0, 3)), path, zarr_format=2)  # consolidated
    to_zarr(ds.isel(time=slice(3, 6)), path, append_dim="time", consolidated=False)
    assert not (path / ".zmetadata").exists()
    assert read(path, engine)["a"].values.tolist() == list(range(6))
    to_zarr(xr.Dataset({"b": ("x", [3.0, 4.0])}), path, mode="a", consolidated=False)
    assert set(read(path, engine).data_vars) == {"a", "b"}


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("engine", ["zarr", "aiozarr"])
def test_an_unconsolidated_subgroup_append_leaves_no_stale_snapshot_above(
    tmp_path: Path, zarr_format: int, engine: str
) -> None:
    """xarray's DataTree keeps one snapshot, at the root, and xarray's engine opens a
    subgroup's members from it: an append into the subgroup left it stale (4 of 8 rows)."""
    path = tmp_path / "t.zarr"
    times = pd.date_range("2000-01-01", periods=4)
    group = xr.Dataset({"a": ("time", np.arange(4.0))}, coords={"time": times})
    tree = xr.DataTree.from_dict({"/": xr.Dataset({"r": ("x", [1.0])}), "/g": group})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree.to_zarr(path, zarr_format=zarr_format)  # consolidated at the root
    later = group.assign_coords(time=times + pd.Timedelta("4D"))
    to_zarr(later, path, group="g", append_dim="time", consolidated=False)
    assert read(path, engine, group="g")["a"].values.tolist() == [0, 1, 2, 3] * 2
    assert read(path, engine)["r"].values.tolist() == [1.0]  # the root as it was


def test_an_unconsolidated_new_variable_leaves_no_stale_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "s.zarr"
    to_zarr(xr.Dataset({"a": ("x", [1.0, 2.0])}), path)
    to_zarr(xr.Dataset({"b": ("x", [3.0, 4.0])}), path, mode="a", consolidated=False)
    assert set(read(path).data_vars) == {"a", "b"}


# -- a lazy dataset after a write ------------------------------------------------------------


def test_a_lazy_datetime_variable_reads_what_was_written_since_it_opened(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.zarr"
    times = pd.date_range("2000-01-01", periods=4).values
    to_zarr(xr.Dataset({"t": ("x", times)}), path)
    ds = xr.open_dataset(path, engine="aiozarr")  # its ends read for the decoder
    later = times + np.timedelta64(365, "D")
    to_zarr(xr.Dataset({"t": ("x", later)}), path, mode="r+")
    np.testing.assert_array_equal(ds["t"].isel(x=slice(-1, None)).values, later[-1:])
    np.testing.assert_array_equal(ds["t"].isel(x=slice(0, 1)).values, later[:1])
    np.testing.assert_array_equal(ds["t"].values, later)


# -- a variable already stored is encoded as stored ----------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("write", ["append", "region"])
def test_a_stored_variable_takes_none_of_its_new_packing(
    tmp_path: Path, zarr_format: int, write: str
) -> None:
    # a dataset opened from a packed source carries its packing: written into a float
    # array stored without it, the values were packed and the attributes to unpack them
    # never written (the region read [0 1 -16 -14 4 5]); xarray replaces it by the stored
    base = xr.Dataset({"v": ("t", np.arange(6, dtype="f4"))})
    to_zarr(base, tmp_path / "a.zarr", zarr_format=zarr_format)
    new = base.copy(deep=True)
    new["v"].encoding = {"dtype": "int16", "scale_factor": 0.5, "add_offset": 10.0}
    if write == "append":
        to_zarr(new, tmp_path / "a.zarr", mode="a", append_dim="t")
        expected = np.concatenate([np.arange(6), np.arange(6)])
    else:
        to_zarr(new.isel(t=slice(2, 4)), tmp_path / "a.zarr", mode="r+", region={"t": slice(2, 4)})
        expected = np.arange(6)
    np.testing.assert_array_equal(read(tmp_path / "a.zarr")["v"].values, expected)
