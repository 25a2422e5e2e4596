"""`aiozarr.xarray.to_zarr` refuses, as `Dataset.to_zarr` does, the writes that would
replace or overwrite what is stored instead of adding to it, and the appends whose
values would not read back; nothing stored changes.

Each case runs the same call through xarray's own writer too, so the refusal is the
one a user of xarray already knows."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")

from aiozarr.errors import AiozarrError, InvalidValueError  # noqa: E402
from aiozarr.xarray import to_zarr  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.ZarrUserWarning")

TIMES = pd.date_range("2000-01-01", periods=12, freq="D")
FULL = xr.Dataset(
    {"v": (("time", "x"), np.arange(36.0).reshape(12, 3))},
    coords={"time": TIMES, "x": [1, 2, 3]},
)
LATER = FULL.isel(time=slice(0, 2)).assign_coords(time=TIMES[:2] + pd.Timedelta(days=12))


def _stored(path: Path) -> xr.Dataset:
    return xr.open_dataset(path, engine="aiozarr").load()


def _both_refuse(tmp_path: Path, first: xr.Dataset, then: xr.Dataset, **kwargs: Any) -> str:
    """`then` written over `first` with `kwargs`, by xarray and by aiozarr: both refuse
    with a ValueError and aiozarr's store is unchanged; aiozarr's message."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first.to_zarr(tmp_path / "xr.zarr")
        with pytest.raises(ValueError):
            then.to_zarr(tmp_path / "xr.zarr", **kwargs)
    to_zarr(first, tmp_path / "az.zarr")
    with pytest.raises(ValueError) as refused:
        to_zarr(then, tmp_path / "az.zarr", **kwargs)
    assert _stored(tmp_path / "az.zarr").identical(_stored(tmp_path / "xr.zarr"))
    return str(refused.value)


@pytest.mark.parametrize(
    ("kwargs", "then", "says"),
    [
        ({"mode": "w", "region": {"time": slice(2, 4)}}, FULL.isel(time=slice(2, 4)), "region"),
        ({"mode": "w-", "region": {"time": slice(2, 4)}}, FULL.isel(time=slice(2, 4)), "region"),
        ({"mode": "w", "append_dim": "time"}, LATER, "append_dim"),
        ({"mode": "r+", "append_dim": "time"}, LATER, "append_dim"),
    ],
    ids=["w-region", "w-minus-region", "w-append", "r+-append"],
)
def test_a_mode_that_would_replace_or_grow_is_refused(
    tmp_path: Path, kwargs: dict[str, Any], then: xr.Dataset, says: str
) -> None:
    """mode "w" replaced the whole group with the rows given; "r+" grew the arrays."""
    if "region" in kwargs:
        then = then.drop_vars(["time", "x"])
    assert says in _both_refuse(tmp_path, FULL, then, **kwargs)


def test_an_append_dim_no_array_has_is_refused(tmp_path: Path) -> None:
    """A misspelt dimension wrote every variable whole over its stored rows."""
    later = FULL.assign_coords(time=TIMES + pd.Timedelta(days=12))
    message = _both_refuse(tmp_path, FULL, later, append_dim="Time")
    assert "'Time'" in message and "'time'" in message


def test_an_encoding_for_a_stored_variable_is_refused(tmp_path: Path) -> None:
    """It was dropped silently: the append is written with the stored layout."""
    encoding = {"v": {"dtype": "int16", "scale_factor": 0.5, "chunks": (2, 3)}}
    message = _both_refuse(tmp_path, FULL, LATER, append_dim="time", encoding=encoding)
    assert "'v'" in message


def _series(values: Any, start: str = "2000-01-01") -> xr.Dataset:
    times = pd.date_range(start, periods=len(values), freq="D")
    return xr.Dataset({"f": ("time", np.asarray(values))}, coords={"time": times})


DAYS = np.array(["2000-01-01", "2000-01-02"], dtype="M8[ns]")


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize(
    ("stored", "appended"),
    [
        ([1.5, 2.5], [1 + 1j, 2 - 3j]),  # complex into float: the imaginary part lost
        ([1, 2], [1 + 2j, 3 - 1j]),  # ... and into int
        ([1.5, 2.5], DAYS),  # times into a float without units: bare numbers
        ([True, False], [3, 0]),  # numbers into bool: 3 is True
        ([True, False], ["no", "yes"]),  # strings into bool: both True
        (["xy", "z"], [2**40, 5]),  # numbers into two characters: '10'
        (["xy", "z"], [np.nan, 1.5]),  # ... 'na'
        (DAYS, [3, 4]),  # numbers into times: read back as dates
        (DAYS - DAYS[0], [3, 4]),  # ... and as time spans
    ],
    ids=[
        "complex-float",
        "complex-int",
        "times-float",
        "int-bool",
        "str-bool",
        "int-str",
        "float-str",
        "int-datetime",
        "int-timedelta",
    ],
)
def test_an_append_that_would_not_read_back_is_refused(
    tmp_path: Path, stored: Any, appended: Any
) -> None:
    """xarray writes each of these (all but strings into bool) as numpy casts them."""
    path = tmp_path / "a.zarr"
    to_zarr(_series(stored), path)
    with pytest.raises(InvalidValueError, match="'f'"):
        to_zarr(_series(appended, "2001-01-01"), path, append_dim="time")
    assert _stored(path).identical(_series(stored))


def test_strings_appended_to_numbers_are_refused_naming_the_variable(tmp_path: Path) -> None:
    """numpy's bare TypeError ("ufunc 'rint' not supported") named nothing."""
    path = tmp_path / "a.zarr"
    to_zarr(_series([1, 2]), path)
    with pytest.raises(InvalidValueError, match=r"variable 'f'.*<U1"):
        to_zarr(_series(["a", "b"], "2001-01-01"), path, append_dim="time")
    assert _stored(path).identical(_series([1, 2]))


def test_appends_that_do_read_back_are_taken(tmp_path: Path) -> None:
    """Not refused: booleans into strings wide enough for 'False' (numpy reads any
    non-empty string back as True), and times as numbers with the stored units (a
    dataset opened with decode_times=False)."""
    words = tmp_path / "words.zarr"
    to_zarr(xr.Dataset({"v": ("t", np.array(["True", "False"]))}), words)
    to_zarr(xr.Dataset({"v": ("t", np.array([True, False]))}), words, append_dim="t")
    assert _stored(words)["v"].values.tolist() == ["True", "False"] * 2

    times = tmp_path / "times.zarr"
    units = {"units": "days since 2000-01-01", "calendar": "standard"}
    to_zarr(xr.Dataset({"time": ("t", np.array([0, 1]), units)}), times)
    raw = xr.open_dataset(times, engine="aiozarr", decode_times=False)
    later = xr.Dataset({"time": ("t", np.array([2, 3]), dict(raw["time"].attrs))})
    to_zarr(later, times, append_dim="t")
    again = xr.open_dataset(times, engine="aiozarr", decode_times=False)
    assert again["time"].values.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "obj",
    [FULL["v"], xr.DataTree(FULL), {"v": FULL["v"]}],
    ids=["DataArray", "DataTree", "dict"],
)
def test_what_is_not_a_dataset_is_refused_by_name(tmp_path: Path, obj: Any) -> None:
    """A DataArray or a DataTree was an AttributeError from inside xarray's encoder."""
    with pytest.raises(TypeError, match=f"not a {type(obj).__name__}"):
        to_zarr(obj, tmp_path / "az.zarr")
    assert not (tmp_path / "az.zarr").exists()


@pytest.mark.parametrize(
    ("then", "says"),
    [
        (LATER.assign(w=LATER["v"] * 2), "['w'] are not stored"),
        (LATER.drop_vars("time"), "['time'] are not in the dataset"),
    ],
    ids=["new-variable", "missing-coordinate"],
)
def test_an_append_that_would_leave_arrays_of_other_lengths_is_refused(
    tmp_path: Path, then: xr.Dataset, says: str
) -> None:
    """xarray writes both (the new variable with the appended rows only, the missing one
    left short), and neither engine opens the group after: 'conflicting sizes'."""
    to_zarr(FULL, tmp_path / "az.zarr")
    with pytest.raises(ValueError, match=re.escape(says)):
        to_zarr(then, tmp_path / "az.zarr", append_dim="time")
    assert _stored(tmp_path / "az.zarr").identical(FULL)


@pytest.mark.parametrize(
    ("encoding", "says"),
    [
        ({"_FillValue": "abc"}, "could not convert string to float"),
        ({"dtype": "datetime64[ns]"}, "cannot be stored as datetime64"),
        ({"chunks": (2,)}, r"encoding chunks \(2,\) for dims \('time', 'x'\)"),
    ],
    ids=["fill-value", "times-dtype", "chunks"],
)
def test_an_encoding_that_cannot_apply_is_refused_naming_the_variable(
    tmp_path: Path, encoding: dict[str, Any], says: str
) -> None:
    """Each was a bare ValueError, TypeError or a MetadataError naming no variable."""
    with pytest.raises(AiozarrError, match=f"variable 'v': .*{says}"):
        to_zarr(FULL, tmp_path / "az.zarr", encoding={"v": encoding})
    assert not (tmp_path / "az.zarr" / "v").exists()


def test_an_int_chunks_encoding_is_the_size_along_every_dimension(tmp_path: Path) -> None:
    """As xarray's writer takes it."""
    to_zarr(FULL, tmp_path / "az.zarr", encoding={"v": {"chunks": 2}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        FULL.to_zarr(tmp_path / "xr.zarr", encoding={"v": {"chunks": 2}})
    for path in ("az.zarr", "xr.zarr"):
        assert xr.open_zarr(tmp_path / path).v.encoding["chunks"] == (2, 2)
    xr.testing.assert_identical(_stored(tmp_path / "az.zarr"), FULL)


@pytest.mark.parametrize(
    ("stored", "appended"),
    [
        (np.array(["2000-01-01", "NaT"], dtype="M8[ns]"), np.array([1, 2], dtype="m8[D]")),
        (np.array([1, 2], dtype="m8[D]"), np.array(["2000-01-01", "NaT"], dtype="M8[ns]")),
    ],
    ids=["spans-into-times", "times-into-spans"],
)
def test_an_append_of_another_kind_of_time_is_refused_naming_the_variable(
    tmp_path: Path, stored: Any, appended: Any
) -> None:
    """Time spans appended to times failed in xarray's encoder with a bare
    `KeyError: 'days since 2000-01-01 00:00:00s'` (xarray's writer too)."""
    first = xr.Dataset({"v": ("time", stored)})
    to_zarr(first, tmp_path / "az.zarr")
    then = xr.Dataset({"v": ("time", appended)})
    with pytest.raises(InvalidValueError, match=r"variable 'v': values of dtype .* units"):
        to_zarr(then, tmp_path / "az.zarr", append_dim="time")
    xr.testing.assert_identical(_stored(tmp_path / "az.zarr"), first)
