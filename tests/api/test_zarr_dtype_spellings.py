"""`create_array(dtype=...)` takes zarr-python 3's data type spellings with the same
meaning (v3 names and JSON objects, zarr's data type objects), and refuses anything else
with a `MetadataError` naming the value."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import zarr.dtype as zd

import aiozarr
from aiozarr.errors import MetadataError
from aiozarr.storage import MemoryStore

DATETIME_10S = {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 10}}


def created(dtype: Any, zarr_format: int = 3, **options: Any) -> aiozarr.Array:
    return aiozarr.create_array(
        MemoryStore(), shape=(2,), dtype=dtype, zarr_format=zarr_format, **options
    )


@pytest.mark.parametrize("dtype", ["variable_length_bytes", "bytes", zd.VariableLengthBytes()])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_variable_length_bytes_make_a_bytes_array(dtype: Any, zarr_format: int) -> None:
    arr = created(dtype, zarr_format)
    doc = arr.metadata.to_dict()
    assert arr.dtype == np.dtype(object)
    if zarr_format == 3:
        assert doc["data_type"] == "variable_length_bytes"
        assert doc["codecs"][0]["name"] == "vlen-bytes"
        assert arr.fill_value == b""
    else:
        assert doc["filters"] == [{"id": "vlen-bytes"}]
    value = np.empty(2, dtype=object)
    value[:] = [b"\xff", b"a\x00"]
    arr[:] = value
    assert arr[:].tolist() == [b"\xff", b"a\x00"]


@pytest.mark.parametrize("dtype", ["string", zd.VariableLengthUTF8()])
def test_string_makes_a_string_array(dtype: Any) -> None:
    arr = created(dtype)
    assert arr.metadata.to_dict()["data_type"] == "string"
    assert arr.dtype == np.dtypes.StringDType()


@pytest.mark.parametrize("dtype", [DATETIME_10S, zd.DateTime64(unit="s", scale_factor=10)])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_datetime_keeps_its_scale_factor(dtype: Any, zarr_format: int) -> None:
    arr = created(dtype, zarr_format)
    assert arr.dtype == np.dtype("M8[10s]")
    if zarr_format == 3:
        assert arr.metadata.to_dict()["data_type"] == DATETIME_10S


@pytest.mark.parametrize(
    ("dtype", "wanted"),
    [
        (zd.FixedLengthUTF32(length=3), "<U3"),
        ({"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}}, "<U3"),
        ({"name": "null_terminated_bytes", "configuration": {"length_bytes": 3}}, "S3"),
        (zd.Int32(), "<i4"),
        ({"names": ["a"], "formats": ["<i4"]}, [("a", "<i4")]),  # numpy's dict, not v3's
    ],
)
def test_other_zarr_spellings_are_numpy_dtypes(dtype: Any, wanted: Any) -> None:
    assert created(dtype).dtype == np.dtype(wanted)


@pytest.mark.parametrize(
    ("dtype", "named"),
    [
        ("nonsense", "'nonsense'"),
        (3, "3"),
        ({"name": "nope"}, "nope"),
        ({"name": "numpy.datetime64"}, "dtype"),
        (bytes, "bytes"),
    ],
)
def test_anything_else_is_a_metadata_error_naming_it(dtype: Any, named: str) -> None:
    with pytest.raises(MetadataError, match=named):
        created(dtype)


def test_require_array_reads_zarr_spellings() -> None:
    group = aiozarr.create_group(MemoryStore())
    arr = group.require_array("b", shape=(2,), dtype="variable_length_bytes")
    assert group.require_array("b", shape=(2,), dtype=zd.VariableLengthBytes()).path == arr.path
    with pytest.raises(MetadataError, match="nonsense"):
        group.require_array("b", shape=(2,), dtype="nonsense")
