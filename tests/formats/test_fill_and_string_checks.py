"""Fill values and string values that used to be stored as something else.

- A v2 float fill that is a negative or payload NaN is written "NaN" (v2 has no bit
  patterns): aiozarr, zarr-python and TensorStore all reopen the array.
- Numbers into fixed-width strings are measured by their text: 123 does not fit `U2`.
- Datetimes and timedeltas without a fill value read NaT where nothing was written, v2
  and v3, as zarr-python reads them.
- v2 variable-length strings (and bytes) check every element before any chunk is
  written, as v3's strings do.
- v3 variable-length bytes are zarr-python's `variable_length_bytes`; object codecs on
  other dtypes are refused at creation.
- A string array's fill of 0 is "0"; a bool's fill of 2 is refused.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr

import aiozarr
from aiozarr.errors import InvalidValueError, MetadataError, ValueOutOfRangeError
from aiozarr.storage.backends.memory import MemoryStore


def _zarr_python(path: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python's unstable-dtype warnings
        return zarr.open_array(str(path), mode="r")


def _nan_bits(dtype: str, hex_bits: str) -> Any:
    return np.frombuffer(bytes.fromhex(hex_bits), dtype=dtype)[0]


# (dtype, a fill that is a NaN other than the canonical one)
OTHER_NANS = [
    ("<f8", -np.nan),
    ("<f4", _nan_bits("<f4", "0100c07f")),  # payload 0x7fc00001
    ("<f2", _nan_bits("<f2", "017e")),  # payload 0x7e01
    ("<c16", complex(-np.nan, 1.0)),
    ("<c8", np.complex64(complex(0.0, float(_nan_bits("<f4", "0100c07f"))))),
]


@pytest.mark.parametrize(("dtype", "fill"), OTHER_NANS, ids=[d for d, _ in OTHER_NANS])
def test_v2_nan_fills_are_written_as_nan(tmp_path: Path, dtype: str, fill: Any) -> None:
    path = tmp_path / "a.zarr"
    arr = aiozarr.create_array(
        path, shape=(4,), chunks=(2,), dtype=dtype, fill_value=fill, zarr_format=2
    )
    arr[:1] = 7
    stored = json.loads((path / ".zarray").read_text())["fill_value"]
    assert stored in ("NaN", [1.0, "NaN"], ["NaN", 1.0], [0.0, "NaN"], ["NaN", "NaN"])
    for got in (aiozarr.open_array(path, mode="r")[:], _zarr_python(path)[:], arr[:]):
        assert got[0] == 7
        parts = [got.real, got.imag] if got.dtype.kind == "c" else [got]
        assert any(np.isnan(part[1:]).all() for part in parts)
    # the handle's fill is what the document gives back: the canonical NaN
    assert (
        aiozarr.open_array(path).metadata.fill_value.tobytes() == arr.metadata.fill_value.tobytes()
    )


def test_v3_keeps_the_nan_payload(tmp_path: Path) -> None:
    fill = _nan_bits("<f4", "0100c07f")
    arr = aiozarr.create_array(tmp_path / "a", shape=(2,), chunks=(2,), dtype="f4", fill_value=fill)
    assert json.loads((tmp_path / "a" / "zarr.json").read_text())["fill_value"] == "0x7fc00001"
    assert arr[:].tobytes() == np.array([fill, fill]).tobytes()


def _fixed(dtype: str) -> Any:
    return aiozarr.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype=dtype)


@pytest.mark.parametrize("value", [123, 1.2345, True, np.float32(1.25), [100, 4], 1 + 2j])
@pytest.mark.parametrize("dtype", ["U2", "S2"])
def test_numbers_too_long_as_text_are_refused(dtype: str, value: Any) -> None:
    arr = _fixed(dtype)
    with pytest.raises(ValueOutOfRangeError, match=f"{np.dtype(dtype).str} holds 2"):
        arr[:] = value
    assert arr[:].tolist() == [np.dtype(dtype).type()] * 2


def test_numbers_that_fit_as_text_are_stored() -> None:
    arr = _fixed("U3")
    arr[:] = [12, 5]
    arr[1:] = 1.5
    assert arr[:].tolist() == ["12", "1.5"]
    fixed_bytes = _fixed("S2")
    fixed_bytes[:1] = 7
    assert fixed_bytes[:1].tolist() == [b"7"]


def test_data_and_fill_values_too_long_as_text_are_refused() -> None:
    with pytest.raises(ValueOutOfRangeError, match="123"):
        aiozarr.create_array(MemoryStore(), data=np.array([123, 4]), dtype="U2")
    with pytest.raises(ValueOutOfRangeError, match=r"fill_value 1\.5"):
        aiozarr.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype="S2", fill_value=1.5)
    ok = aiozarr.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype="S2", fill_value=15)
    assert ok.fill_value == b"15"


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("dtype", ["M8[s]", "m8[ms]"])
def test_times_without_a_fill_read_nat_as_zarr_python(
    tmp_path: Path, dtype: str, zarr_format: int
) -> None:
    path = tmp_path / "t.zarr"
    arr = aiozarr.create_array(path, shape=(4,), chunks=(2,), dtype=dtype, zarr_format=zarr_format)
    arr[:1] = np.array([5], dtype=dtype)
    expected = [False, True, True, True]
    assert np.isnat(aiozarr.open_array(path, mode="r")[:]).tolist() == expected
    assert np.isnat(_zarr_python(path)[:]).tolist() == expected


def _v2_strings(path: Any = None, **options: Any) -> Any:
    store = MemoryStore() if path is None else path
    options = {"dtype": str, **options}
    return aiozarr.create_array(store, shape=(4,), chunks=(2,), zarr_format=2, **options)


@pytest.mark.parametrize(
    "value", [np.array(["a", "b", 3, "d"], dtype=object), np.array(["a", "b", "c", None])]
)
def test_v2_strings_refuse_other_objects_before_writing(value: Any) -> None:
    arr = _v2_strings()
    with pytest.raises(InvalidValueError, match="is not a string"):
        arr[:] = value
    assert arr[:].tolist() == ["", "", "", ""]  # no chunk was written
    v3 = aiozarr.create_array(MemoryStore(), shape=(4,), chunks=(2,), dtype=str)
    with pytest.raises(InvalidValueError):  # as v3's strings refuse them
        v3[:] = value


def test_v2_strings_take_numbers_as_v3_does(tmp_path: Path) -> None:
    arr = _v2_strings(tmp_path / "s.zarr")
    arr[:] = [5, 1.5, 7, 8]
    v3 = aiozarr.create_array(MemoryStore(), shape=(4,), chunks=(2,), dtype=str)
    v3[:] = [5, 1.5, 7, 8]
    assert arr[:].tolist() == v3[:].tolist() == ["5.0", "1.5", "7.0", "8.0"]
    arr[:2] = 3
    assert _zarr_python(tmp_path / "s.zarr")[:].tolist() == ["3", "3", "7.0", "8.0"]
    data = aiozarr.create_array(MemoryStore(), data=np.array([123, 4]), dtype=str, zarr_format=2)
    assert data[:].tolist() == ["123", "4"]


def test_v2_bytes_take_only_bytes() -> None:
    arr = _v2_strings(dtype=object, filters=[numcodecs.VLenBytes()])
    with pytest.raises(InvalidValueError, match="is not bytes"):
        arr[:] = np.array([b"a", b"b", "c", b"d"], dtype=object)
    assert arr[:].tolist() == [b"", b"", b"", b""]
    arr[:] = [b"a\x00", b"", b"c", b"dd"]  # trailing NULs kept
    assert arr[:].tolist() == [b"a\x00", b"", b"c", b"dd"]


def test_v3_variable_length_bytes_as_zarr_python_writes_them(tmp_path: Path) -> None:
    path = tmp_path / "b.zarr"
    arr = aiozarr.create_array(
        path, shape=(3,), chunks=(2,), dtype=object, serializer={"name": "vlen-bytes"},
        fill_value=b"q",
    )  # fmt: skip
    doc = json.loads((path / "zarr.json").read_text())
    assert (doc["data_type"], doc["fill_value"]) == ("variable_length_bytes", "cQ==")
    arr[:2] = np.array([b"x", b"yy"], dtype=object)  # a whole chunk: a read-only value
    expected = [b"x", b"yy", b"q"]
    assert aiozarr.open_array(path, mode="r")[:].tolist() == expected
    assert _zarr_python(path)[:].tolist() == expected
    with pytest.raises(InvalidValueError, match="is not bytes"):
        arr[:] = ["a", "b", "c"]
    with pytest.raises(MetadataError, match="not bytes"):
        aiozarr.create_array(
            MemoryStore(), shape=(2,), dtype=object, serializer={"name": "vlen-bytes"},
            fill_value="q",
        )  # fmt: skip


def test_zarr_python_variable_length_bytes_written_whole_chunks(tmp_path: Path) -> None:
    from zarr.core.dtype import VariableLengthBytes

    path = tmp_path / "z.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(str(path), shape=(2,), chunks=(2,), dtype=VariableLengthBytes())
    arr = aiozarr.open_array(path)
    arr[:] = np.array([b"a", b"b"], dtype=object)
    assert _zarr_python(path)[:].tolist() == [b"a", b"b"]


@pytest.mark.parametrize(
    ("options", "shown"),
    [
        ({"dtype": str, "serializer": {"name": "vlen-bytes"}}, "'vlen-bytes'"),
        ({"dtype": "<U3", "filters": [numcodecs.VLenUTF8()], "zarr_format": 2}, "'vlen-utf8'"),
        ({"dtype": "<U3", "filters": [numcodecs.VLenBytes()], "zarr_format": 2}, "'vlen-bytes'"),
        ({"dtype": "<i4", "filters": [numcodecs.VLenArray("<i4")], "zarr_format": 2}, "vlen-array"),
    ],
)
def test_object_codecs_on_other_dtypes_are_refused(
    tmp_path: Path, options: dict[str, Any], shown: str
) -> None:
    with pytest.raises(MetadataError, match=shown):
        aiozarr.create_array(tmp_path / "a", shape=(2,), chunks=(2,), **options)
    assert not (tmp_path / "a").exists()


def test_a_string_fill_of_zero_is_text(tmp_path: Path) -> None:
    path = tmp_path / "s.zarr"
    arr = _v2_strings(path, fill_value=0)
    assert json.loads((path / ".zarray").read_text())["fill_value"] == "0"
    arr[:1] = ["a"]
    expected = ["a", "0", "0", "0"]
    assert arr[:].tolist() == aiozarr.open_array(path)[:].tolist() == expected
    assert _zarr_python(path)[:].tolist() == expected


def test_v2_bytes_fill_reads_back_as_bytes(tmp_path: Path) -> None:
    path = tmp_path / "b.zarr"
    _v2_strings(path, dtype=object, filters=[numcodecs.VLenBytes()], fill_value=b"a")
    assert aiozarr.open_array(path)[:].tolist() == [b"a"] * 4
    assert _zarr_python(path)[:].tolist() == [b"a"] * 4


@pytest.mark.parametrize("fill", [2, -1, 0.5, "x", np.nan])
def test_a_bool_fill_other_than_0_or_1_is_refused(fill: Any) -> None:
    with pytest.raises(ValueOutOfRangeError, match="bool holds True and False"):
        aiozarr.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype=bool, fill_value=fill)


@pytest.mark.parametrize(("fill", "expected"), [(1, True), (0, False), (0.0, False), (True, True)])
def test_a_bool_fill_of_0_or_1_is_taken(fill: Any, expected: bool) -> None:
    arr = aiozarr.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype=bool, fill_value=fill)
    assert arr.fill_value is np.bool_(expected) or arr.fill_value == expected


@pytest.mark.parametrize(
    ("dtype", "text", "bits"),
    [
        ("float32", "0x7fc00001", 0x7FC00001),
        ("float16", "0x7e01", 0x7E01),
        ("float64", "0x" + "7ff8" + "0" * 12, 0x7FF8 << 48),
    ],
)
def test_a_hex_fill_value_is_the_bits_as_stored_in_zarr_json(
    tmp_path: Path, dtype: str, text: str, bits: int
) -> None:
    """The text `zarr.json` holds for a NaN's bits, given to create_array, is those bits
    (C reads "0x7fc00001" as the number 2143289345.0)."""
    arr = aiozarr.create_array(tmp_path, shape=(2,), dtype=dtype, fill_value=text)
    stored = json.loads((tmp_path / "zarr.json").read_text())["fill_value"]
    assert stored in (text, "NaN")  # the canonical NaN is written "NaN"
    assert int(np.array(arr.fill_value).view(f"u{np.dtype(dtype).itemsize}")) == bits
    assert np.isnan(aiozarr.open_array(tmp_path)[:]).all()


@pytest.mark.parametrize("text", ["0x10", "0x1p-3", "-0x7fc00000", "0x7fc0000g"])
def test_other_hex_text_is_no_float_fill_value(text: str) -> None:
    with pytest.raises(ValueOutOfRangeError, match="hex digits"):
        aiozarr.create_array(MemoryStore(), shape=(2,), dtype="float32", fill_value=text)


def test_a_struct_element_is_written_as_a_tuple(tmp_path: Path) -> None:
    """As numpy and zarr-python take it: a tuple is one element, a list of them several."""
    dtype = np.dtype([("a", "<i4"), ("b", "<f8")])
    arr = aiozarr.create_array(tmp_path, shape=(4,), chunks=(2,), dtype=dtype)
    expected = np.zeros(4, dtype=dtype)
    for selection, value in [
        (0, (1, 2.5)),
        (slice(1, 3), (7, -1.0)),
        (slice(2, 4), [(3, 3.5), (4, 4.5)]),
    ]:
        arr[selection] = value
        expected[selection] = value
        assert np.array_equal(arr[:], expected)
    with pytest.raises(ValueOutOfRangeError, match="1099511627776"):
        arr[0] = (2**40, 1.0)  # numpy's conversion would wrap it
    with pytest.raises(InvalidValueError):
        arr[1] = (1.5, 1.0)  # or truncate it
    with pytest.raises(InvalidValueError):
        arr[0:2] = [(1, 2.0, 3)]
    assert np.array_equal(aiozarr.open_array(tmp_path)[:], expected)


def test_a_list_of_struct_elements_is_that_many_for_data_and_append(tmp_path: Path) -> None:
    """`np.shape` counts a tuple's fields as an axis: `data=` of two records made a (2, 2)
    array holding both in each row, and `append` refused them as misshapen."""
    dtype = np.dtype([("a", "<i4"), ("b", "<f8")])
    arr = aiozarr.create_array(tmp_path, data=[(1, 2.5), (3, 4.5)], dtype=dtype)
    assert arr.shape == (2,)
    arr.append([(5, 6.5)])
    expected = np.array([(1, 2.5), (3, 4.5), (5, 6.5)], dtype=dtype)
    assert aiozarr.open_array(tmp_path)[:].tobytes() == expected.tobytes()


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(
    ("dtype", "fill"),
    [
        ("U2", ["a"]),
        ("S2", [1, 2]),
        (str, ["a", "b"]),
        ("int32", [7]),
        ("float64", np.array([1.5])),
        ("complex64", [1, 2]),
        ("datetime64[s]", ["2020-01-01"]),
        ([("a", "<i4")], [(1,), (2,)]),
    ],
)
def test_a_fill_value_of_several_values_is_refused(
    tmp_path: Path, zarr_format: int, dtype: Any, fill: Any
) -> None:
    """A list is no fill value of a fixed-size or string dtype: it was written as its
    text ("['a']"), as more bytes than an element holds, or failed deep in numpy."""
    with pytest.raises(MetadataError, match=r"fill_value must be one .* value, got shape"):
        aiozarr.create_array(
            str(tmp_path), shape=(2,), dtype=dtype, fill_value=fill, zarr_format=zarr_format
        )
    assert not any(tmp_path.iterdir())


def test_a_list_fill_of_an_object_array_is_still_one_value(tmp_path: Path) -> None:
    arr = aiozarr.create_array(
        str(tmp_path),
        shape=(2,),
        dtype=object,
        filters=[numcodecs.JSON()],
        fill_value=[1, 2],
        zarr_format=2,
    )
    assert aiozarr.open_array(str(tmp_path))[:].tolist() == [[1, 2], [1, 2]]
    assert arr.fill_value.tolist() == [1, 2]
