"""Strings, datetimes and structured dtypes: zarr-python writes, aiozarr reads, and back."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr

import aiozarr

CASES = [
    ("str", np.array(["a", "ü€", "", "longer text"], dtype=object)),
    ("datetime", np.array(["2020-01-01", "NaT", "1970-01-02", "2100-12-31"], dtype="<M8[s]")),
    ("timedelta", np.array([1, -2, 3, 4], dtype="<m8[ms]")),
    (
        "structured",
        np.array([(1, 2.5), (3, 4.5), (5, 6.5), (7, 8.5)], dtype=[("i", "<i4"), ("f", "<f8")]),
    ),
    ("fixed_unicode", np.array(["ab", "c", "", "dd"], dtype="<U2")),
    ("fixed_bytes", np.array([b"ab", b"c", b"", b"dd"], dtype="|S2")),
]


def _equal(got: np.ndarray, want: np.ndarray) -> None:
    if want.dtype == object:
        assert [str(x) for x in got] == list(want)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(("name", "data"), CASES, ids=[c[0] for c in CASES])
def test_zarr_python_writes_aiozarr_reads(tmp_path: Path, zarr_format, name, data) -> None:
    if zarr_format == 3 and name == "structured":
        pytest.skip("zarr-python 3.1 writes no v3 structured arrays by default")
    dtype = str if data.dtype == object else data.dtype
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arr = zarr.create_array(
            tmp_path, shape=data.shape, dtype=dtype, chunks=(3,), zarr_format=zarr_format
        )
        arr[:] = data
    _equal(aiozarr.open_array(tmp_path, mode="r")[:], data)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(("name", "data"), CASES, ids=[c[0] for c in CASES])
def test_aiozarr_writes_zarr_python_reads(tmp_path: Path, zarr_format, name, data) -> None:
    if zarr_format == 3 and name == "structured" and zarr.__version__.startswith("3.1."):
        pytest.skip("zarr-python 3.1 reads no v3 `struct` (aiozarr writes the spec's name)")
    dtype = np.dtypes.StringDType() if data.dtype == object else data.dtype
    arr = aiozarr.create_array(
        tmp_path, shape=data.shape, dtype=dtype, chunks=(3,), zarr_format=zarr_format
    )
    arr[:] = data.astype(dtype) if data.dtype == object else data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = zarr.open_array(tmp_path, mode="r")[:]
    _equal(got, data)


def test_v2_object_arrays_with_vlen_bytes_written_for_zarr_python(tmp_path: Path) -> None:
    import numcodecs

    values = np.array([b"a", b"\x00bb", b"", b"ccc", b"d"], dtype=object)
    arr = aiozarr.create_array(
        tmp_path / "b.zarr",
        shape=(5,),
        dtype=object,
        chunks=(2,),
        filters=[numcodecs.VLenBytes()],
        zarr_format=2,
    )
    arr[:] = values  # the broadcast input is read-only: numcodecs must get a copy
    got = zarr.open_array(tmp_path / "b.zarr", mode="r")[:]
    assert list(got) == list(values)
    assert list(arr[:]) == list(values)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("compressor", [None, "zstd", "blosc"])
def test_v2_records_holding_dates_are_written_and_read_by_zarr_python(
    tmp_path: Path, order: str, compressor: str | None
) -> None:
    """Python's buffer protocol cannot describe a record with a datetime64 field: the
    compressor got the array itself and the write failed (numcodecs' ValueError)."""
    dtype = np.dtype([("i", "<i4"), ("t", "<M8[s]"), ("d", "<m8[ms]")])
    values = np.zeros((3, 4), dtype=dtype)
    values["i"] = np.arange(12).reshape(3, 4)
    values["t"] = np.datetime64("2000-01-01", "s") + np.arange(12).reshape(3, 4)
    values["d"][1] = np.timedelta64("NaT")
    compressors = None if compressor is None else {"id": compressor}
    arr = aiozarr.create_array(
        tmp_path,
        shape=(3, 4),
        chunks=(2, 3),
        dtype=dtype,
        zarr_format=2,
        order=order,
        compressors=compressors,
    )
    arr[...] = values
    for got in (aiozarr.open_array(tmp_path)[...], zarr.open_array(tmp_path, mode="r")[...]):
        assert got.tobytes() == values.tobytes()  # bit for bit (NaT equals nothing)
