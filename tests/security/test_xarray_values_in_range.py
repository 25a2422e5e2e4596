"""`aiozarr.xarray.to_zarr` refuses values its CF encoding cannot hold, before writing
anything.

xarray's encoder casts with numpy's casts: `dtype="int8"` stored 300 as 44,
`scale_factor=0.01` into int16 stored 1000.0 as -310.72, 1e10 into int32 as
-2147483648, and times with `units="nanoseconds since 1970-01-01"` beyond 2262 (and
every other time of the variable with them) as NaT. Every variable is checked before
the first metadata or chunk write of the call: a refused write, append or region write
leaves the store as it was. Stores: a local directory and the S3 emulator.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

xr = pytest.importorskip("xarray")

from tests.security.written import snapshot  # noqa: E402

from aiozarr.errors import ValueOutOfRangeError  # noqa: E402
from aiozarr.storage.backends.local import LocalStore  # noqa: E402
from aiozarr.storage.protocol import Store  # noqa: E402
from aiozarr.xarray import to_zarr  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::xarray.SerializationWarning")


def opened(store: Store) -> Any:
    return xr.open_dataset(store, engine="aiozarr", mask_and_scale=True).load()


def refused(call: Any, *shown: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no numpy cast warning either
        warnings.simplefilter("ignore", xr.SerializationWarning)  # xarray's own advice
        with pytest.raises(ValueOutOfRangeError) as info:
            call()
    for text in shown:
        assert text in str(info.value), str(info.value)
    return str(info.value)


YEARS = np.array(["2000-01-01", "3000-01-01"], dtype="M8[s]")
# (values, encoding, what the message shows: the variable, the value, the range)
CASES = [
    ([300, 1], {"dtype": "int8"}, ("'v'", "300", "int8", "-128 to 127")),
    ([1000.0, 1.0], {"dtype": "int16", "scale_factor": 0.01}, ("1000.0", "-327.68 to 327.67")),
    ([1e10, 1.0], {"dtype": "int32"}, ("10000000000.0", "-2147483648 to 2147483647")),
    (
        YEARS,
        {"units": "nanoseconds since 1970-01-01"},
        ("'v'", "3000-01-01", "nanoseconds since 1970-01-01", "2262-04-11"),
    ),
    (
        np.array(["2100-01-01"], dtype="M8[ns]"),
        {"units": "days since 1970-01-01", "dtype": "int16"},
        ("2100-01-01", "2059-09-18"),
    ),
    (np.array([10**9, 1], dtype="m8[D]"), {"units": "nanoseconds"}, ("'v'", "nanoseconds")),
    ([1e300, np.inf], {"dtype": "float32"}, ("1e+300", "float32")),
    ([127.6], {"dtype": "int8"}, ("127.6", "int8")),  # rounds to 128
    ([-1, 1], {"dtype": "uint64"}, ("'v'", "-1", "uint64", "0 to 18446744073709551615")),
    ([310.1], {"dtype": "int16", "scale_factor": 0.001, "add_offset": 273.15}, ("310.1",)),
    (  # float32 rounds seconds since 1970 to 128 s: 00:00:08 read back as 00:00:00
        np.array(["2020-01-01T00:00:08"], dtype="M8[ns]"),
        {"units": "seconds since 1970-01-01", "dtype": "float32"},
        ("'v'", "2020-01-01T00:00:08", "float32", "seconds since 1970-01-01"),
    ),
    (np.array([10**8 + 3], dtype="m8[s]"), {"units": "seconds", "dtype": "float32"}, ("float32",)),
]


@pytest.mark.parametrize(("values", "encoding", "shown"), CASES)
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_values_the_encoding_cannot_hold_are_refused_and_nothing_is_written(
    store: Store, values: Any, encoding: dict[str, Any], shown: tuple[str, ...], zarr_format: int
) -> None:
    ds = xr.Dataset({"ok": ("y", [1.0, 2.0]), "v": ("x", values)})
    refused(lambda: to_zarr(ds, store, encoding={"v": encoding}, zarr_format=zarr_format), *shown)
    assert snapshot(store) == {}


@pytest.mark.parametrize(
    ("values", "encoding", "shown"),
    [
        ([np.nan, 1.0], {"dtype": "int32"}, ("NaN", "int32", "_FillValue")),
        (
            np.array(["2000-01-01", "NaT"], dtype="M8[ns]"),
            {"units": "days since 1970-01-01", "dtype": "int16"},
            ("NaT", "_FillValue", "1970-01-01"),
        ),
        (
            [-327.68, 1.0],
            {"dtype": "int16", "scale_factor": 0.01, "_FillValue": -32768},
            ("-327.68", "_FillValue", "missing"),
        ),
        (  # equal to the packed fill value, but packed onto it: no exemption
            [0.0, 0.5],
            {"dtype": "uint8", "scale_factor": 0.5, "_FillValue": 0},
            ("0.0", "_FillValue", "missing"),
        ),
    ],
)
def test_missing_values_an_encoding_cannot_mark_are_refused(
    store: Store, values: Any, encoding: dict[str, Any], shown: tuple[str, ...]
) -> None:
    """NaN and NaT need a _FillValue in an integer encoding (they were stored as
    -2147483648 and 1970-01-01); a value encoded as the fill value would read back
    missing."""
    ds = xr.Dataset({"v": ("x", values)})
    refused(lambda: to_zarr(ds, store, encoding={"v": encoding}), *shown)
    assert snapshot(store) == {}


@pytest.mark.parametrize(
    ("values", "encoding", "expected"),
    [
        ([np.inf, -np.inf, np.nan, 1e-300, 3.4e38], {"dtype": "float32"}, None),
        ([327.67, -327.68, 0.5], {"dtype": "int16", "scale_factor": 0.01}, None),
        ([1.0, np.nan, -1.0], {"dtype": "int8", "_FillValue": -1}, [1.0, np.nan, np.nan]),
        ([1.5, 2.5, -127.6], {"dtype": "int8"}, [2, 2, -128]),  # xarray rounds
        (
            np.array(["2000-01-01", "NaT", "2262-04-11"], dtype="M8[ns]"),
            {"units": "nanoseconds since 1970-01-01"},
            None,
        ),
        (
            np.array(["2000-01-01", "NaT"], dtype="M8[ns]"),
            {"units": "days since 1970-01-01", "dtype": "int16", "_FillValue": -32768},
            None,
        ),
        (np.array([10**9, 1], dtype="m8[D]"), {}, None),
        (  # float rounding within one unit of the units
            np.array(["2020-01-01T00:00:08", "2020-01-01T06:00"], dtype="M8[ns]"),
            {"units": "days since 1970-01-01", "dtype": "float64"},
            None,
        ),
        (
            np.array(["2020-01-01T00:00:08", "2020-01-01T06:00"], dtype="M8[ns]"),
            {"units": "seconds since 2020-01-01", "dtype": "float32"},
            None,
        ),
    ],
)
def test_values_the_encoding_holds_are_written(
    tmp_path: Path, values: Any, encoding: dict[str, Any], expected: Any
) -> None:
    ds = xr.Dataset({"v": ("x", values)})
    to_zarr(ds, tmp_path / "ok.zarr", encoding={"v": encoding})
    back = opened(LocalStore(tmp_path / "ok.zarr"))["v"].values
    want = ds["v"].values if expected is None else np.array(expected)
    if want.dtype.kind in "mM":
        np.testing.assert_array_equal(back.astype(want.dtype), want)
    else:
        np.testing.assert_allclose(back, want, rtol=1e-6, atol=0.005)


def test_an_append_or_region_write_out_of_range_leaves_the_store_as_it_was(
    store: Store,
) -> None:
    """Appends and region writes are encoded as the stored variable is (its dtype,
    scale and units): values it cannot hold are refused before the array grows."""
    first = xr.Dataset({"v": ("t", [1.0, 2.0]), "w": ("t", [1, 2])}, coords={"t": [0, 1]})
    to_zarr(first, store, encoding={"v": {"dtype": "int16", "scale_factor": 0.01}})
    before = snapshot(store)
    more = xr.Dataset({"v": ("t", [3.0, 400.0]), "w": ("t", [3, 4])}, coords={"t": [2, 3]})
    refused(lambda: to_zarr(more, store, mode="a", append_dim="t"), "400.0", "327.67")
    assert snapshot(store) == before
    region = xr.Dataset({"v": ("t", [-500.0]), "w": ("t", [9])})
    refused(lambda: to_zarr(region, store, mode="r+", region={"t": slice(1, 2)}), "-500.0")
    assert snapshot(store) == before
    np.testing.assert_allclose(opened(store)["v"].values, [1.0, 2.0])


def test_a_dask_variable_is_checked_as_its_blocks_are_written(tmp_path: Path) -> None:
    """A dask-backed variable is encoded block by block when written: a block the
    encoding cannot hold is refused then, and is not stored."""
    da = pytest.importorskip("dask.array")
    values = da.from_array(np.array([1.0, 2.0, 300.0, 4.0]), chunks=2)
    ds = xr.Dataset({"v": ("x", values)})
    target = tmp_path / "lazy.zarr"
    refused(lambda: to_zarr(ds, target, encoding={"v": {"dtype": "int8"}}), "300.0", "int8")
    assert not (target / "v" / "c" / "1").exists()


def test_a_scalar_variable_and_a_lazily_opened_dataset_are_checked(tmp_path: Path) -> None:
    """A 0-d variable is checked as any other; a dataset opened lazily is read once."""
    ds = xr.Dataset({"s": ((), 300), "v": ("x", [1.0, 2.0])})
    refused(lambda: to_zarr(ds, tmp_path / "s.zarr", encoding={"s": {"dtype": "int8"}}), "300")
    to_zarr(ds, tmp_path / "ok.zarr")
    lazy = xr.open_dataset(tmp_path / "ok.zarr", engine="aiozarr")
    refused(lambda: to_zarr(lazy, tmp_path / "copy.zarr", encoding={"s": {"dtype": "int8"}}))
    to_zarr(lazy, tmp_path / "copy.zarr", encoding={"s": {"dtype": "int16"}})
    assert int(opened(LocalStore(tmp_path / "copy.zarr"))["s"]) == 300


def test_times_xarray_would_store_as_nat_say_so(store: Store) -> None:
    """pandas gives these times microsecond resolution; with nanosecond units xarray's
    encoder stores every one as NaT although each lies in the encoding's range: the
    refusal said they "cannot be stored as int64, which holds 1677 to 2262"."""
    times = np.array(["2001-01-01T00:00:00", "2001-03-04T05:06:07"], dtype="M8[us]")
    ds = xr.Dataset({"t": ("x", times)})
    refused(
        lambda: to_zarr(ds, store, encoding={"t": {"units": "nanoseconds since 1970-01-01"}}),
        "'t'",
        "would be stored as NaT by xarray's encoder",
        "datetime64[ns]",
    )
    assert snapshot(store) == {}


# xarray encodes chunked times only with both units and dtype given
LAZY_CASES = [case for case in CASES if "units" not in case[1] or "dtype" in case[1]]


@pytest.mark.parametrize(("values", "encoding", "shown"), LAZY_CASES)
def test_a_dask_variable_is_checked_as_it_is_stored(
    tmp_path: Path, values: Any, encoding: dict[str, Any], shown: tuple[str, ...]
) -> None:
    """xarray's lazy time encoder gives blocks of float64 (int64) for a float32 (int32)
    encoding: checked as given, float32 seconds since 1970 passed and were stored
    rounded to 128 s (00:00:08 read back as 00:00:00), and days in int16 beyond 2059
    failed in the store's cast, naming no time. A block is checked as the store casts
    it."""
    pytest.importorskip("dask.array")
    ds = xr.Dataset({"v": ("x", values)}).chunk({"x": 1})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # xarray's cast, in its own block
        with pytest.raises(ValueOutOfRangeError) as info:
            to_zarr(ds, tmp_path / "lazy.zarr", encoding={"v": encoding})
    for text in shown:
        assert text in str(info.value), str(info.value)
