"""A v3 record array is written with the data type name `struct` (fields as objects,
the fill value an object by field, the `bytes` codec's endian where a field has a byte
order), as zarr-python 3.4 writes it: the structured data type's spec says writers MUST
NOT use the legacy `structured`. Both names are still read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorstore as ts

import aiozarr

INNER = np.dtype([("c", "i1"), ("d", "<f4")])

# What zarr-python 3.4.2 writes for these dtypes and fills (`zarr.create_array(...,
# zarr_format=3)`): data_type, fill_value and its serializer.
ZARR_PYTHON_34 = {
    "numbers": (
        np.dtype([("a", "<i4"), ("b", "<f8")]),
        (1, 2.5),
        {
            "name": "struct",
            "configuration": {
                "fields": [
                    {"name": "a", "data_type": "int32"},
                    {"name": "b", "data_type": "float64"},
                ]
            },
        },
        {"a": 1, "b": 2.5},
        {"name": "bytes", "configuration": {"endian": "little"}},
    ),
    "bytes_only": (
        np.dtype([("a", "i1"), ("b", "u1")]),
        (0, 0),
        {
            "name": "struct",
            "configuration": {
                "fields": [
                    {"name": "a", "data_type": "int8"},
                    {"name": "b", "data_type": "uint8"},
                ]
            },
        },
        {"a": 0, "b": 0},
        {"name": "bytes"},
    ),
    "nested": (
        np.dtype([("a", "<i2"), ("n", INNER)]),
        (0, (0, 0.0)),
        {
            "name": "struct",
            "configuration": {
                "fields": [
                    {"name": "a", "data_type": "int16"},
                    {
                        "name": "n",
                        "data_type": {
                            "name": "struct",
                            "configuration": {
                                "fields": [
                                    {"name": "c", "data_type": "int8"},
                                    {"name": "d", "data_type": "float32"},
                                ]
                            },
                        },
                    },
                ]
            },
        },
        {"a": 0, "n": {"c": 0, "d": 0.0}},
        {"name": "bytes", "configuration": {"endian": "little"}},
    ),
}


@pytest.mark.parametrize("case", sorted(ZARR_PYTHON_34))
def test_a_record_array_is_written_as_zarr_python_34_writes_it(tmp_path: Path, case: str) -> None:
    dtype, fill, data_type, fill_json, serializer = ZARR_PYTHON_34[case]
    aiozarr.create_array(
        tmp_path, shape=(4,), chunks=(2,), dtype=dtype, fill_value=fill, compressors=None
    )
    doc = json.loads((tmp_path / "zarr.json").read_text())
    assert doc["data_type"] == data_type
    assert doc["fill_value"] == fill_json
    assert doc["codecs"] == [serializer]


def test_tensorstore_reads_the_struct_array_aiozarr_writes(tmp_path: Path) -> None:
    dtype = np.dtype([("a", "<i4"), ("b", "<f8")])
    arr = aiozarr.create_array(
        tmp_path, shape=(4,), chunks=(2,), dtype=dtype, fill_value=(1, 2.5), zarr_format=3
    )
    arr[:2] = np.array([(5, 6.0), (7, 8.0)], dtype=dtype)
    expected: dict[str, Any] = {"a": [5, 7, 1, 1], "b": [6.0, 8.0, 2.5, 2.5]}
    for field, values in expected.items():
        spec = {"driver": "zarr3", "field": field, "kvstore": f"file://{tmp_path}"}
        assert ts.open(spec).result().read().result().tolist() == values
    assert aiozarr.open_array(tmp_path)[:].tolist() == [(5, 6.0), (7, 8.0), (1, 2.5), (1, 2.5)]
