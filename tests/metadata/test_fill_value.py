"""Fill values: JSON <-> numpy scalars, per format and data type."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aiozarr.errors import MetadataError
from aiozarr.metadata import dtypes
from aiozarr.metadata import fill_value as fv

KEY = "a/zarr.json"


def bits(value: Any) -> int:
    return int(np.array(value).view(f"u{np.asarray(value).itemsize}")[()])


def sized(name: str, length: int) -> dict[str, Any]:
    return {"name": name, "configuration": {"length_bytes": length}}


def time(name: str, unit: str, scale: int) -> dict[str, Any]:
    return {"name": name, "configuration": {"unit": unit, "scale_factor": scale}}


def struct(*fields: list[str]) -> dict[str, Any]:
    return {"name": "structured", "configuration": {"fields": list(fields)}}


def v3(value: Any, data_type: Any) -> Any:
    dtype = dtypes.parse_v3(data_type, KEY)
    return fv.parse_v3(value, dtype, dtypes.v3_name(data_type), KEY)


@pytest.mark.parametrize(
    ("value", "data_type", "expected"),
    [
        (True, "bool", np.True_),
        (False, "bool", np.False_),
        (-128, "int8", np.int8(-128)),
        (2**64 - 1, "uint64", np.uint64(2**64 - 1)),
        (3.0, "int32", np.int32(3)),
        (1.5, "float32", np.float32(1.5)),
        (7, "float64", np.float64(7)),
        ("Infinity", "float16", np.float16(np.inf)),
        ("-Infinity", "float64", np.float64(-np.inf)),
        ("0x3f800000", "float32", np.float32(1.0)),
        ("0x3C00", "float16", np.float16(1.0)),
        ([1, "-Infinity"], "complex64", np.complex64(complex(1, -np.inf))),
        ([0.5, 2], "complex128", np.complex128(0.5 + 2j)),
        ("", "string", ""),
        ("héllo", "string", "héllo"),
        ([1, 2, 3], "bytes", b"\x01\x02\x03"),
        ("AQID", "bytes", b"\x01\x02\x03"),
        ([0, 255], "r16", np.void(b"\x00\xff")),
        ("AP8=", sized("raw_bytes", 2), np.void(b"\x00\xff")),
        (
            "YWI=",
            sized("null_terminated_bytes", 3),
            np.bytes_(b"ab"),
        ),
        (
            [97],
            sized("null_terminated_bytes", 3),
            np.bytes_(b"a"),
        ),
        (
            "foo",
            sized("fixed_length_utf32", 12),
            np.str_("foo"),
        ),
    ],
)
def test_parse_v3(value: Any, data_type: Any, expected: Any) -> None:
    parsed = v3(value, data_type)
    assert type(parsed) is type(expected)
    assert parsed == expected


@pytest.mark.parametrize(
    ("word_or_hex", "dtype", "pattern"),
    [
        ("NaN", "float16", 0x7E00),
        ("NaN", "float32", 0x7FC00000),
        ("NaN", "float64", 0x7FF8000000000000),
        ("0x7fc00001", "float32", 0x7FC00001),
        ("0xffc00000", "float32", 0xFFC00000),
        ("0x7ff0000000000001", "float64", 0x7FF0000000000001),
    ],
)
def test_nan_payloads_are_kept_both_ways(word_or_hex: str, dtype: str, pattern: int) -> None:
    parsed = v3(word_or_hex, dtype)
    assert np.isnan(parsed) and bits(parsed) == pattern
    written = fv.to_v3_json(parsed, np.dtype(dtype), dtype)
    assert written == word_or_hex.lower() if word_or_hex != "NaN" else written == "NaN"


def test_complex_parts_keep_payloads() -> None:
    parsed = v3(["0x7fc00001", "NaN"], "complex64")
    assert bits(parsed.real) == 0x7FC00001 and bits(parsed.imag) == 0x7FC00000
    assert fv.to_v3_json(parsed, np.dtype("c8"), "complex64") == ["0x7fc00001", "NaN"]


@pytest.mark.parametrize(
    ("value", "data_type"),
    [(7, "numpy.datetime64"), ("NaT", "numpy.datetime64"), (-(2**63), "numpy.timedelta64")],
)
def test_datetime(value: Any, data_type: str) -> None:
    full = {"name": data_type, "configuration": {"unit": "ms", "scale_factor": 5}}
    parsed = v3(value, full)
    assert parsed.dtype == np.dtype(f"{'M' if 'date' in data_type else 'm'}8[5ms]")
    if value == 7:
        assert parsed == np.datetime64(35, "ms")
        assert fv.to_v3_json(parsed, parsed.dtype, data_type) == 7
    else:
        assert np.isnat(parsed)
        assert fv.to_v3_json(parsed, parsed.dtype, data_type) == -(2**63)


def test_structured_base64_and_object_forms() -> None:
    data_type = {
        "name": "structured",
        "configuration": {"fields": [["a", "int16"], ["b", "float32"]]},
    }
    from_b64 = v3("AQAAAIA/", data_type)  # a=1, b=1.0, little-endian packed
    from_obj = v3({"a": 1, "b": "Infinity"}, data_type)
    assert (from_b64["a"], from_b64["b"]) == (1, 1.0)
    assert (from_obj["a"], from_obj["b"]) == (1, np.inf)
    assert fv.to_v3_json(from_b64, from_b64.dtype, "structured") == "AQAAAIA/"


@pytest.mark.parametrize(
    ("value", "data_type", "match"),
    [
        (0, "bool", "expected true or false, got 0"),
        (True, "int8", r"an integer in \[-128, 127\]"),
        (128, "int8", r"an integer in \[-128, 127\] for int8, got 128"),
        (-1, "uint8", "got -1"),
        (1.5, "int32", "got 1.5"),
        ("1", "int32", 'got "1"'),
        ("nan", "float32", 'expected a number, "NaN"'),
        ("0x7fc0", "float32", "8 hex digits"),
        ("0xZZ", "float16", "4 hex digits"),
        (None, "float64", "got null"),
        ([1], "complex64", r"\[real, imaginary\]"),
        ([1, "x"], "complex64", 'got "x"'),
        (1, "string", "a string"),
        ([256], "bytes", "list of byte values"),
        ("***", "bytes", "base64"),
        ([0], "r16", "exactly 2 bytes"),
        (
            "YWJj",
            sized("null_terminated_bytes", 2),
            "2 bytes",
        ),
        ("abc", sized("fixed_length_utf32", 8), "2 char"),
        (
            "now",
            time("numpy.datetime64", "s", 1),
            "NaT",
        ),
        (
            2**63,
            time("numpy.timedelta64", "s", 1),
            "int64",
        ),
        (
            "AA==",
            struct(["a", "int16"]),
            "2 bytes of base64",
        ),
        (
            {"b": 1},
            struct(["a", "int16"]),
            r'the fields \["a"\]|fields',
        ),
    ],
)
def test_parse_v3_errors(value: Any, data_type: Any, match: str) -> None:
    with pytest.raises(MetadataError, match=match) as info:
        v3(value, data_type)
    assert str(info.value).startswith(f'{KEY}: field "fill_value": expected ')


@pytest.mark.parametrize(
    ("value", "dtype", "name", "expected"),
    [
        (np.False_, "?", "bool", False),
        (np.int64(-5), "<i8", "int64", -5),
        (np.uint64(2**64 - 1), "<u8", "uint64", 2**64 - 1),
        (np.float32(0.1), "<f4", "float32", float(np.float32(0.1))),
        (np.float64(np.inf), "<f8", "float64", "Infinity"),
        (np.float64(-np.inf), "<f8", "float64", "-Infinity"),
        (np.complex128(1 + 2j), "<c16", "complex128", [1.0, 2.0]),
        (np.void(b"\x01\x02"), "V2", "r16", [1, 2]),
        (np.void(b"\x01\x02"), "V2", "raw_bytes", "AQI="),
        (np.bytes_(b"ab"), "S4", "null_terminated_bytes", "YWI="),
        (np.str_("ab"), "<U4", "fixed_length_utf32", "ab"),
        ("ab", "O", "string", "ab"),
        (b"ab", "O", "bytes", "YWI="),
        (3, "<f4", "float32", 3.0),  # a plain Python value is cast to the dtype first
    ],
)
def test_to_v3_json(value: Any, dtype: str, name: str, expected: Any) -> None:
    written = fv.to_v3_json(value, np.dtype(dtype), name)
    assert written == expected and type(written) is type(expected)


def test_to_v3_json_needs_a_fill_value() -> None:
    with pytest.raises(MetadataError, match="need a fill value"):
        fv.to_v3_json(None, np.dtype("f4"), "float32")


def test_to_v3_json_structured_big_endian_fields_are_written_little_endian() -> None:
    big = np.array((1, 2.0), dtype=[("a", ">i2"), ("b", ">f4")])[()]
    little = np.dtype([("a", "<i2"), ("b", "<f4")])
    assert fv.to_v3_json(big, little, "structured") == "AQAAAABA"


@pytest.mark.parametrize(
    ("value", "dtype", "expected"),
    [
        (None, "<f8", None),
        (False, "|b1", np.False_),
        (0, "|b1", np.False_),
        (-3, ">i4", np.int32(-3)),
        ("NaN", "<f4", np.float32(np.nan)),
        ("-Infinity", ">f8", np.float64(-np.inf)),
        (2.5, ">f8", np.float64(2.5)),
        (["NaN", 1.0], "<c8", np.complex64(complex(np.nan, 1))),
        (-(2**63), "<M8[ns]", np.datetime64("NaT", "ns")),
        ("NaT", ">m8[s]", np.timedelta64("NaT", "s")),
        (86400, "<M8[s]", np.datetime64("1970-01-02T00:00:00")),
        ("YWI=", "|S3", np.bytes_(b"ab")),
        ("", "|S3", np.bytes_(b"")),
        ("AQI=", "|V2", np.void(b"\x01\x02")),
        ("ab", "<U3", np.str_("ab")),
        ("", "|O", ""),
        (0, "|O", 0),
    ],
)
def test_parse_v2(value: Any, dtype: str, expected: Any) -> None:
    parsed = fv.parse_v2(value, np.dtype(dtype), "a/.zarray")
    if expected is None:
        assert parsed is None
    elif isinstance(expected, np.floating | np.complexfloating):
        np.testing.assert_equal(parsed, expected)
        assert type(parsed) is type(expected)
    elif isinstance(expected, np.datetime64 | np.timedelta64) and np.isnat(expected):
        assert np.isnat(parsed) and parsed.dtype == np.dtype(dtype).newbyteorder("=")
    else:
        assert parsed == expected and type(parsed) is type(expected)
    assert fv.to_v2_json(parsed, np.dtype(dtype)) == (value if value != "NaT" else -(2**63)) or (
        dtype == "|b1"
    )


def test_parse_v2_structured_big_endian() -> None:
    dtype = np.dtype([("a", ">i2"), ("b", "<u1")])
    parsed = fv.parse_v2("AAEC", dtype, "a/.zarray")
    assert (parsed["a"], parsed["b"]) == (1, 2)
    assert fv.to_v2_json(parsed, dtype) == "AAEC"


@pytest.mark.parametrize(
    ("value", "dtype", "match"),
    [
        ("yes", "|b1", "true, false or null"),
        (1.5, "<i4", "got 1.5"),
        ("0x7fc00000", "<f4", 'a number, "NaN", "Infinity", "-Infinity" for float32'),
        ([1, 2, 3], "<c8", "real, imaginary"),
        ("AQID", "|V2", "at most 2 bytes"),
        ("AQ==", "|V2", "exactly 2 bytes"),
        (5, "|S3", "base64"),
        ("toolong", "<U3", "at most 3 characters"),
        ("AQ==", [["a", "<i2"]], "2 bytes of base64"),
    ],
)
def test_parse_v2_errors(value: Any, dtype: Any, match: str) -> None:
    with pytest.raises(MetadataError, match=match) as info:
        fv.parse_v2(value, dtypes.parse_v2(dtype, "k"), "a/.zarray")
    assert str(info.value).startswith('a/.zarray: field "fill_value"')
