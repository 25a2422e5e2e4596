"""Datetimes, timedeltas and floats that the array's dtype cannot hold are refused, never
stored as other values.

numpy's casts give wrong values silently: year 3000 in `datetime64[s]` into a
`datetime64[ns]` array is 1830-11-23, 10**9 days into `timedelta64[ns]` is a negative
number of nanoseconds, 1e300 into `float32` is inf, a fill value of 1.5 for `int8` is 1.
Every write door (`arr[...] = v`, `append`, `create_array(data=)`, `fill_value`, dask
blocks) refuses them with `ValueOutOfRangeError` and leaves the store as it was. NaT,
inf and NaN given as such are stored. Stores: a local directory and the S3 emulator.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from tests.security.written import snapshot

import aiozarr
from aiozarr.errors import InvalidValueError, ValueOutOfRangeError
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.protocol import Store


def _refused(call: Callable[[], Any], *shown: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no numpy overflow warning either
        with pytest.raises(ValueOutOfRangeError) as info:
            call()
    assert isinstance(info.value, InvalidValueError) and isinstance(info.value, OverflowError)
    for text in shown:
        assert text in str(info.value), str(info.value)
    return str(info.value)


YEAR_3000 = np.array(["2000-01-01", "3000-01-01"], dtype="M8[s]")
# (array dtype, values it cannot hold, what the message shows)
OUT_OF_RANGE = [
    ("M8[ns]", YEAR_3000, ("3000-01-01", "2262-04-11")),
    ("M8[ns]", np.array(["1500-06-01", "NaT"], dtype="M8[D]"), ("1500-06-01", "1677-09-21")),
    ("M8[us]", np.array([2**62], dtype="M8[s]"), ("datetime64[us]",)),
    ("m8[ns]", np.array([10**9, 1], dtype="m8[D]"), ("1000000000 days", "timedelta64[ns]")),
    ("m8[ms]", np.array([-(2**60)], dtype="m8[s]"), ("timedelta64[ms]",)),
    ("float32", np.array([1.0, 1e300]), ("1e+300", "float32 holds", "3.4028235e+38")),
    ("float32", np.array([-1e39, np.inf, np.nan]), ("-1e+39", "float32")),
    ("float16", np.array([70000], dtype="int64"), ("70000", "float16 holds", "6.55e+04")),
    ("float16", np.array([1e5], dtype="float32"), ("100000", "float16")),
    ("complex64", np.array([1 + 1e300j]), ("1e+300", "complex64 holds parts")),
    ("float64", np.array([np.finfo(np.longdouble).max], dtype=np.longdouble), ("float64",)),
]
if np.finfo(np.longdouble).max == np.finfo(np.float64).max:  # longdouble is float64 here
    OUT_OF_RANGE.pop()


@pytest.mark.parametrize(("dtype", "values", "shown"), OUT_OF_RANGE)
def test_values_out_of_range_are_refused_by_every_write(
    store: Store, dtype: str, values: np.ndarray, shown: tuple[str, ...]
) -> None:
    n = len(values)
    arr = aiozarr.create_array(store, "a", shape=(n,), dtype=dtype, chunks=(1,))
    before = snapshot(store)
    _refused(lambda: arr.__setitem__(..., values), *shown)
    _refused(lambda: arr.set_coordinate_selection(list(range(n)), values), *shown)
    _refused(lambda: arr.append(values), *shown)
    assert snapshot(store) == before and arr.shape == (n,)
    _refused(lambda: aiozarr.create_array(store, "d", data=values, dtype=dtype), *shown)
    assert snapshot(store) == before


@pytest.mark.parametrize("dtype", ["M8[ns]", "M8[ms]"])
def test_a_scalar_date_out_of_range_is_refused(tmp_path: Path, dtype: str) -> None:
    arr = aiozarr.create_array(tmp_path / "t.zarr", shape=(3,), dtype=dtype)
    arr[:] = np.datetime64("2000-01-01")
    if dtype == "M8[ns]":
        _refused(lambda: arr.__setitem__(1, np.datetime64("3000-01-01", "s")), "3000-01-01")
    _refused(lambda: arr.__setitem__(1, np.datetime64(2**62, "s")), np.dtype(dtype).name)
    _refused(lambda: arr.__setitem__(1, np.datetime64(-(2**62), "D")), np.dtype(dtype).name)
    assert arr[:].tolist() == np.full(3, np.datetime64("2000-01-01"), dtype).tolist()


@pytest.mark.parametrize(
    ("dtype", "values"),
    [
        ("M8[ns]", np.array(["2000-01-01", "NaT", "2262-04-11"], dtype="M8[s]")),
        ("M8[ns]", np.array(["NaT", "NaT"], dtype="M8[D]")),
        ("M8[s]", np.array(["3000-01-01T00:00:00.5", "NaT"], dtype="M8[ms]")),  # floors
        ("m8[ns]", np.array([1, -1, "NaT"], dtype="m8[D]")),
        ("float32", np.array([np.inf, -np.inf, np.nan, 1e-300, 3.4e38])),
        ("float16", np.array([65504.0, -65504.0, np.inf])),
        ("complex64", np.array([np.inf + 1j, complex(np.nan, 2.0), 1e30 - 1e30j])),
    ],
)
def test_values_in_range_nat_inf_and_nan_are_stored(
    store: Store, dtype: str, values: np.ndarray
) -> None:
    arr = aiozarr.create_array(store, "ok", shape=values.shape, dtype=dtype, chunks=(2,))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        arr[:] = values
    expected = values.astype(dtype)
    np.testing.assert_array_equal(arr[:], expected)
    again = aiozarr.create_array(store, "data", data=values, dtype=dtype)
    np.testing.assert_array_equal(again[:], expected)


@pytest.mark.parametrize(
    ("dtype", "fill", "shown"),
    [
        ("float32", 1e300, ("fill_value", "1e+300", "float32 holds")),
        ("float32", "-1e300", ("fill_value", "float32")),
        ("float16", 70000, ("fill_value", "70000", "float16")),
        ("int8", 1.5, ("fill_value", "1.5", "whole number", "int8")),
        ("uint8", np.float32(0.25), ("fill_value", "0.25", "uint8")),
        ("M8[ns]", np.datetime64("3000-01-01"), ("fill_value", "3000-01-01", "2262")),
        ("M8[ns]", "3000-01-01", ("fill_value", "3000-01-01", "2262")),
        ("m8[ns]", np.timedelta64(10**9, "D"), ("fill_value", "timedelta64[ns]")),
    ],
)
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_fill_value_out_of_range_is_refused(
    store: Store, dtype: str, fill: Any, shown: tuple[str, ...], zarr_format: int
) -> None:
    _refused(
        lambda: aiozarr.create_array(
            store, "f", shape=(4,), dtype=dtype, fill_value=fill, zarr_format=zarr_format
        ),
        *shown,
    )
    assert snapshot(store) == {}


@pytest.mark.parametrize(
    ("dtype", "fill", "expected"),
    [
        ("float32", "NaN", np.float32(np.nan)),
        ("float32", -np.inf, np.float32(-np.inf)),
        ("float32", 1e-300, np.float32(0.0)),  # rounds towards zero: no overflow
        ("int8", 2.0, np.int8(2)),  # a whole-number float, as JSON writers give
        ("M8[ns]", "NaT", np.datetime64("NaT", "ns")),
        ("M8[ns]", np.datetime64("2000-01-01", "D"), np.datetime64("2000-01-01", "ns")),
    ],
)
def test_fill_values_that_fit_are_kept(
    tmp_path: Path, dtype: str, fill: Any, expected: Any
) -> None:
    arr = aiozarr.create_array(tmp_path / "f.zarr", shape=(2,), dtype=dtype, fill_value=fill)
    stored = aiozarr.open_array(tmp_path / "f.zarr").fill_value
    np.testing.assert_array_equal(np.array(stored), np.array(expected))
    np.testing.assert_array_equal(arr[:], np.full(2, expected))


def test_dask_blocks_out_of_range_are_refused(tmp_path: Path) -> None:
    """dask blocks reach the array through `arr[...] = v`: the same rule refuses each
    block it cannot hold (blocks written before it stay; see docs/decisions)."""
    da = pytest.importorskip("dask.array")
    from aiozarr.dask import store as store_blocks

    source = da.from_array(np.array([1.0, 2.0, 1e300, 4.0]), chunks=2)
    target = aiozarr.create_array(tmp_path / "f.zarr", shape=(4,), dtype="float32", chunks=2)
    _refused(lambda: store_blocks(source, target, scheduler="sync"), "1e+300", "float32")
    assert not (tmp_path / "f.zarr" / "c" / "1").exists()
    times = da.from_array(YEAR_3000, chunks=1)
    stamps = aiozarr.create_array(tmp_path / "t.zarr", shape=(2,), dtype="M8[ns]", chunks=1)
    _refused(lambda: store_blocks(times, stamps, scheduler="sync"), "3000-01-01")
    assert not (tmp_path / "t.zarr" / "c" / "1").exists()


# -- the property: stored exactly, or refused ---------------------------------------------

_NUMBERS = ["int8", "uint16", "int32", "uint64", "int64", "float16", "float32", "float64"]
_COMPLEX = ["complex64", "complex128"]
_DATES = ["M8[D]", "M8[s]", "M8[ms]", "M8[us]", "M8[ns]"]
_DELTAS = ["m8[D]", "m8[h]", "m8[s]", "m8[us]", "m8[ns]"]


def _pairs() -> st.SearchStrategy[tuple[str, str]]:
    """Any two numeric types, two datetime types or two timedelta types."""
    groups = [_NUMBERS + _COMPLEX, _DATES, _DELTAS]
    return st.sampled_from([(a, b) for group in groups for a in group for b in group])


def _edges(dtype: np.dtype[Any]) -> list[Any]:
    """The values of `dtype` a narrower type is likeliest not to hold."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return [info.min, info.max, 0, info.max // 3]
    if dtype.kind in "mM":
        ticks = np.array([-(2**63) + 1, 2**63 - 1, -(2**63), 0, 2**40], dtype=np.int64)
        return list(ticks.view(dtype))
    info = np.finfo(dtype)
    edges = [info.max, -info.max, info.tiny, np.inf, np.nan, 1.0]
    return [*edges, complex(0, info.max)] if dtype.kind == "c" else edges


def _values(dtype: np.dtype[Any]) -> st.SearchStrategy[np.ndarray]:
    """Any values of `dtype`, or some of its extremes."""
    extremes = st.lists(st.sampled_from(_edges(dtype)), min_size=1, max_size=6)
    return st.one_of(
        hnp.arrays(dtype, st.integers(1, 6)), extremes.map(lambda v: np.array(v, dtype=dtype))
    )


def _exact(values: np.ndarray, target: np.dtype[Any]) -> np.ndarray | None:
    """What `target` holds for `values` by exact comparison, or None where a value would
    change beyond rounding: integers compared as Python ints, times in the coarser unit,
    floats by overflow (finite to inf)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cast = values.astype(target)
        except OverflowError:  # numpy 2.5 and later, for times: out of range
            return None
    if target.kind in "iu":
        exact = [int(v) for v in values.tolist()]
        info = np.iinfo(target)
        return cast if all(info.min <= v <= info.max for v in exact) else None
    if target.kind in "mM":
        if not np.can_cast(values.dtype, target, "safe"):
            return cast  # to a coarser unit: floors
        back = cast.astype(values.dtype)
        same = (back == values) | np.isnat(values)
        return cast if same.all() else None
    parts = (np.real, np.imag) if target.kind == "c" else (np.asarray,)
    for part in parts:
        if (np.isinf(part(cast)) & np.isfinite(part(values))).any():
            return None
    return cast


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=_pairs(), data=st.data())
def test_a_write_stores_exactly_what_fits_or_is_refused(pair: tuple[str, str], data: Any) -> None:
    """For any two numeric, datetime or timedelta dtypes and any values of the first, a
    write into an array of the second either stores what numpy's exact comparison says
    the target holds, or raises `ValueOutOfRangeError`, or (another kind: floats into
    ints, complex into floats) `InvalidValueError`; a refused write stores nothing."""
    source, target = np.dtype(pair[0]), np.dtype(pair[1])
    values = data.draw(_values(source))
    arr = aiozarr.create_array(MemoryStore(), shape=(6,), dtype=target, chunks=(2,))
    before = arr[:]
    n = len(values)
    same_kind = np.can_cast(source, target, "same_kind") or (
        source.kind in "iu" and target.kind in "iufc"
    )
    expected = _exact(values, target) if same_kind else None
    if expected is not None:
        arr[:n] = values
        np.testing.assert_array_equal(arr[:n], expected)
        return
    with pytest.raises(InvalidValueError) as info:
        arr[:n] = values
    assert isinstance(info.value, ValueOutOfRangeError) == same_kind
    np.testing.assert_array_equal(arr[:], before)
