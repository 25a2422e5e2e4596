"""Data types: v3 `data_type` and v2 `dtype` values <-> numpy dtypes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aiozarr.errors import MetadataError, UnsupportedError
from aiozarr.metadata import dtypes


def time(name: str, unit: Any, scale: Any) -> dict[str, Any]:
    return {"name": name, "configuration": {"unit": unit, "scale_factor": scale}}


def sized(name: str, length: Any) -> dict[str, Any]:
    return {"name": name, "configuration": {"length_bytes": length}}


@pytest.mark.parametrize(
    ("data_type", "expected"),
    [
        ("bool", "|b1"),
        ("int8", "|i1"),
        ("int16", "<i2"),
        ("int32", "<i4"),
        ("int64", "<i8"),
        ("uint8", "|u1"),
        ("uint16", "<u2"),
        ("uint32", "<u4"),
        ("uint64", "<u8"),
        ("float16", "<f2"),
        ("float32", "<f4"),
        ("float64", "<f8"),
        ("complex64", "<c8"),
        ("complex128", "<c16"),
        ({"name": "float32"}, "<f4"),
        ({"name": "int8", "configuration": {}}, "|i1"),
        ("r8", "V1"),
        ("r24", "V3"),
        ("bytes", "O"),
        ("variable_length_bytes", "O"),
        (time("numpy.datetime64", "ns", 1), "<M8[ns]"),
        (time("numpy.datetime64", "s", 10), "<M8[10s]"),
        (time("numpy.datetime64", "μs", 1), "<M8[us]"),
        (time("numpy.datetime64", "generic", 1), "<M8"),
        (time("numpy.timedelta64", "D", 7), "<m8[7D]"),
        (sized("fixed_length_utf32", 48), "<U12"),
        (sized("raw_bytes", 5), "V5"),
        (sized("null_terminated_bytes", 10), "S10"),
        (
            {"name": "structured", "configuration": {"fields": [["a", "int32"], ["b", "float64"]]}},
            [("a", "<i4"), ("b", "<f8")],
        ),
        (
            {
                "name": "struct",
                "configuration": {
                    "fields": [
                        {"name": "x", "data_type": "uint8"},
                        {"name": "t", "data_type": time("numpy.datetime64", "s", 1)},
                    ]
                },
            },
            [("x", "u1"), ("t", "<M8[s]")],
        ),
    ],
)
def test_parse_v3(data_type: Any, expected: Any) -> None:
    assert dtypes.parse_v3(data_type, "a/zarr.json") == np.dtype(expected)


def test_parse_v3_string_is_numpy_string_dtype() -> None:
    assert dtypes.parse_v3("string", "k").kind == "T"


@pytest.mark.parametrize(
    ("data_type", "error", "match"),
    [
        ("float128", UnsupportedError, 'field "data_type": unsupported data type "float128"'),
        ({"name": "mystery"}, UnsupportedError, 'unsupported data type {"name": "mystery"}'),
        (3, MetadataError, 'field "data_type": expected a data type name'),
        ({"configuration": {}}, MetadataError, 'field "data_type"'),
        ({"name": "int8", "other": 1}, MetadataError, 'field "data_type"'),
        ({"name": "int8", "configuration": {"x": 1}}, MetadataError, "no configuration"),
        ({"name": "int8", "configuration": 5}, MetadataError, "data_type.configuration"),
        ("r12", MetadataError, "multiple of 8"),
        ("numpy.datetime64", MetadataError, 'members \\["scale_factor", "unit"\\]|members'),
        (time("numpy.datetime64", "fortnight", 1), MetadataError, "configuration.unit"),
        (time("numpy.datetime64", "s", 0), MetadataError, "configuration.scale_factor"),
        (time("numpy.timedelta64", "s", 2**31), MetadataError, "scale_factor"),
        (time("numpy.timedelta64", "s", True), MetadataError, "scale_factor"),
        (sized("fixed_length_utf32", 6), MetadataError, "positive multiple of 4, got 6"),
        (sized("raw_bytes", 0), MetadataError, "length_bytes.*positive integer, got 0"),
        (sized("null_terminated_bytes", "3"), MetadataError, "length_bytes"),
        ({"name": "raw_bytes", "configuration": {"length": 3}}, MetadataError, "length_bytes"),
        ({"name": "structured", "configuration": {"fields": []}}, MetadataError, "fields"),
        (
            {"name": "structured", "configuration": {"fields": [["a", "int8"], ["a", "int8"]]}},
            MetadataError,
            r"fields\[1\].name",
        ),
        (
            {"name": "structured", "configuration": {"fields": [["a"]]}},
            MetadataError,
            r"fields\[0\]",
        ),
        (
            {"name": "structured", "configuration": {"fields": [["a", "nope"]]}},
            UnsupportedError,
            r"fields\[0\].data_type",
        ),
        (
            {"name": "structured", "configuration": {"fields": [["s", "string"]]}},
            UnsupportedError,
            "variable-length",
        ),
    ],
)
def test_parse_v3_errors(data_type: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match) as info:
        dtypes.parse_v3(data_type, "a/zarr.json")
    assert str(info.value).startswith("a/zarr.json: ")


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        ("bool", "bool"),
        ("<i2", "int16"),
        (">i2", "int16"),
        ("u8", "uint64"),
        (">f8", "float64"),
        ("c16", "complex128"),
        ("M8[ns]", time("numpy.datetime64", "ns", 1)),
        ("m8[10s]", time("numpy.timedelta64", "s", 10)),
        ("M8", time("numpy.datetime64", "generic", 1)),
        ("U3", sized("fixed_length_utf32", 12)),
        ("S7", sized("null_terminated_bytes", 7)),
        ("V4", sized("raw_bytes", 4)),
        ("O", "string"),
        (
            [("a", "<i4"), ("b", ">f8")],
            {
                "name": "struct",
                "configuration": {
                    "fields": [
                        {"name": "a", "data_type": "int32"},
                        {"name": "b", "data_type": "float64"},
                    ]
                },
            },
        ),
    ],
)
def test_to_v3(dtype: Any, expected: Any) -> None:
    assert dtypes.to_v3(np.dtype(dtype)) == expected


@pytest.mark.parametrize(
    "dtype",
    [
        np.dtype({"names": ["a", "b"], "formats": ["u1", "<i4"], "offsets": [0, 4]}),
        np.dtype({"names": ["a"], "formats": ["u1"], "itemsize": 4}),
        np.dtype([("a", "<i4", (2,))]),
        np.dtype("longdouble"),
    ],
)
def test_to_v3_unsupported(dtype: np.dtype[Any]) -> None:
    with pytest.raises(UnsupportedError):
        dtypes.to_v3(dtype)


def test_v3_round_trip_of_every_written_form() -> None:
    for dtype in ["?", "i1", "<u4", "<f2", "<c8", "<M8[5ms]", "<m8[h]", "<U9", "S1", "V3"]:
        assert dtypes.parse_v3(dtypes.to_v3(np.dtype(dtype)), "k") == np.dtype(dtype)


@pytest.mark.parametrize(
    ("typestr", "expected"),
    [
        ("|b1", "?"),
        ("<i4", "<i4"),
        (">i4", ">i4"),
        ("|u1", "u1"),
        (">f8", ">f8"),
        ("<f2", "<f2"),
        ("<c16", "<c16"),
        ("<M8[ns]", "<M8[ns]"),
        (">m8[10s]", ">m8[10s]"),
        ("<M8", "<M8"),
        ("|S10", "S10"),
        ("<U5", "<U5"),
        (">U5", ">U5"),
        ("|V8", "V8"),
        ("|O", "O"),
        ([["a", "<i4"], ["b", ">f8", [2, 2]]], [("a", "<i4"), ("b", ">f8", (2, 2))]),
        ([["p", [["x", "<f4"], ["y", "<f4"]]]], [("p", [("x", "<f4"), ("y", "<f4")])]),
    ],
)
def test_parse_v2(typestr: Any, expected: Any) -> None:
    parsed = dtypes.parse_v2(typestr, "a/.zarray")
    assert parsed == np.dtype(expected)
    assert parsed.byteorder == np.dtype(expected).byteorder
    assert dtypes.to_v2(parsed) == typestr or typestr == "|b1"


@pytest.mark.parametrize(
    ("typestr", "match"),
    [
        ("f8", "typestr with byte order"),
        ("float64", "typestr with byte order"),
        ("<i3", "numpy typestr"),
        ("|S", "fixed-size"),
        ("|i4", "byte order"),
        ("|f2", "byte order"),
        ("|M8[s]", "byte order"),
        ("|U1", "byte order"),
        ("<M8[fortnight]", "numpy typestr"),
        (8, "typestr"),
        ([], "non-empty list"),
        ([["a"]], r'"dtype\[0\]"'),
        ([["a", "<i4"], ["a", "<i4"]], r'"dtype\[1\]\[0\]"'),
        ([["a", "<i4", [0]]], r'"dtype\[0\]\[2\]"'),
        ([["a", "nope"]], r'"dtype\[0\]\[1\]"'),
    ],
)
def test_parse_v2_errors(typestr: Any, match: str) -> None:
    with pytest.raises(MetadataError, match=match) as info:
        dtypes.parse_v2(typestr, "a/.zarray")
    assert str(info.value).startswith('a/.zarray: field "dtype')


def test_to_v2_string_dtype_is_object() -> None:
    assert dtypes.to_v2(dtypes.string_dtype()) == "|O"


def test_to_v2_refuses_padding() -> None:
    padded = np.dtype({"names": ["a", "b"], "formats": ["u1", "<i4"], "offsets": [0, 4]})
    with pytest.raises(UnsupportedError, match="padding"):
        dtypes.to_v2(padded)


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "int4", "float4_e2m1fn"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_an_extension_type_is_refused_not_stored_as_raw_bytes(
    name: str, zarr_format: int, tmp_path: Any
) -> None:
    """ml_dtypes' types are kind "V" without fields: as `raw_bytes` / "<V2" they read
    back as opaque bytes everywhere, the numbers lost."""
    import aiozarr

    ml_dtypes = pytest.importorskip("ml_dtypes")
    dtype = np.dtype(getattr(ml_dtypes, name))
    with pytest.raises(UnsupportedError, match=rf"{name}.*no Zarr representation"):
        (dtypes.to_v3 if zarr_format == 3 else dtypes.to_v2)(dtype)
    with pytest.raises(UnsupportedError, match=name):
        aiozarr.create_array(tmp_path, shape=(4,), dtype=dtype, zarr_format=zarr_format)
    struct = np.dtype([("x", dtype), ("y", "<i4")])
    with pytest.raises(UnsupportedError, match=name):
        aiozarr.create_array(tmp_path, shape=(4,), dtype=struct, zarr_format=zarr_format)
    assert list(tmp_path.iterdir()) == []  # nothing written
    assert dtypes.to_v3(np.dtype("V4")) == sized("raw_bytes", 4)  # numpy's void still is
